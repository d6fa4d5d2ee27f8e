//! One captured output stream of a child: kept up to a byte cap, cut on a UTF-8
//! character boundary, the rest drained (so the child never blocks on a full pipe) and
//! counted.

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::watch;
use tokio::time::Instant;

/// A stream as captured.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Captured {
    /// What was kept, as text (invalid UTF-8 replaced).
    pub text: String,
    /// True if and only if more was printed than kept.
    pub truncated: bool,
    /// Bytes the child printed in all.
    pub total_bytes: u64,
}

/// Reads `stream` to its end, or until the time `until` holds — which the caller may
/// move earlier (when the program has exited, only a short drain is left) — keeping at
/// most `cap` bytes (plus a few, so a cut can back up to a character boundary) and
/// counting the rest.
pub async fn read_capped<R: AsyncRead + Unpin>(
    mut stream: R,
    cap: usize,
    mut until: watch::Receiver<Instant>,
) -> Captured {
    let mut kept: Vec<u8> = Vec::new();
    let mut total: u64 = 0;
    let mut chunk = vec![0u8; 16 * 1024];
    let mut movable = true;
    loop {
        let deadline = *until.borrow_and_update();
        tokio::select! {
            read = stream.read(&mut chunk) => match read {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    total += n as u64;
                    let room = (cap + 4).saturating_sub(kept.len());
                    kept.extend_from_slice(&chunk[..n.min(room)]);
                }
            },
            () = tokio::time::sleep_until(deadline) => break,
            moved = until.changed(), if movable => movable = moved.is_ok(),
        }
    }
    finish(kept, cap, total)
}

/// Cuts `bytes` to at most `cap` bytes of text on a character boundary.
pub fn finish(mut bytes: Vec<u8>, cap: usize, total: u64) -> Captured {
    let truncated = total > cap as u64 || bytes.len() > cap;
    if bytes.len() > cap {
        let mut end = cap;
        // A continuation byte at the cut means the cut is inside a character.
        while end > 0 && (bytes[end] & 0xC0) == 0x80 {
            end -= 1;
        }
        bytes.truncate(end);
    }
    let mut text = String::from_utf8_lossy(&bytes).into_owned();
    if text.len() > cap {
        let mut end = cap;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
    Captured {
        text,
        truncated,
        total_bytes: total,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cut_never_splits_a_character() {
        let text = "aé€😀".repeat(10);
        for cap in 0..text.len() {
            let c = finish(text.as_bytes().to_vec(), cap, text.len() as u64);
            assert!(c.text.len() <= cap && text.starts_with(&c.text), "{cap}: {:?}", c.text);
            assert!(c.truncated);
            assert!(!c.text.contains('\u{FFFD}'));
        }
        let whole = finish(text.as_bytes().to_vec(), text.len(), text.len() as u64);
        assert_eq!((whole.text.as_str(), whole.truncated), (text.as_str(), false));
    }

    #[tokio::test]
    async fn reading_keeps_the_cap_and_counts_the_rest() {
        let data = vec![b'x'; 100_000];
        let (_keep, until) = watch::channel(Instant::now() + std::time::Duration::from_secs(5));
        let c = read_capped(&data[..], 1000, until).await;
        assert_eq!((c.text.len(), c.truncated, c.total_bytes), (1000, true, 100_000));
    }
}
