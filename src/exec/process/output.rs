//! One captured output stream of a child: kept up to a byte cap, cut on a UTF-8
//! character boundary, the rest drained (so the child never blocks on a full pipe) and
//! counted.

use tokio::io::{AsyncRead, AsyncReadExt};
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

/// Reads `stream` to its end or until `deadline`, keeping at most `cap` bytes.
pub async fn read_capped<R: AsyncRead + Unpin>(mut stream: R, cap: usize, deadline: Instant) -> Captured {
    let mut kept: Vec<u8> = Vec::new();
    let mut total: u64 = 0;
    let mut chunk = vec![0u8; 16 * 1024];
    loop {
        match tokio::time::timeout_at(deadline, stream.read(&mut chunk)).await {
            Ok(Ok(0)) | Ok(Err(_)) | Err(_) => break,
            Ok(Ok(n)) => {
                total += n as u64;
                // Keep one char's worth beyond the cap, to find the boundary.
                let room = (cap + 4).saturating_sub(kept.len());
                kept.extend_from_slice(&chunk[..n.min(room)]);
            }
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
        let c = read_capped(&data[..], 1000, Instant::now() + std::time::Duration::from_secs(5)).await;
        assert_eq!((c.text.len(), c.truncated, c.total_bytes), (1000, true, 100_000));
    }
}
