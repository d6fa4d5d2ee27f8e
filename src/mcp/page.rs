//! Pages of the answers that grow with the catalogue — `tools/list`, the meta-tool's
//! `list`, the `NAME://catalogue` resource and code mode's `NAME://types/tools.d.ts` — so none exceeds [`PAGE_BYTES`] however
//! many tools there are.
//!
//! A cursor is opaque to clients: which list it belongs to, where the next page starts,
//! and a fingerprint of the list it was cut from. A cursor from another list, from a list
//! that has since changed (a refresh), or that is not one of ours at all is refused —
//! −32602 on `tools/list`, `BAD_REQUEST` on the meta-tool — so a client never gets a page
//! that silently skips or repeats tools; it lists again from the start, as the
//! `list_changed` notification of that change tells it to.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use crate::limits::PAGE_BYTES;

/// Which paged list a cursor belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum List {
    /// `tools/list`.
    Tools,
    /// The meta-tool's `list`.
    Meta,
    /// The `NAME://catalogue` resource.
    Catalogue,
    /// The `NAME://types/tools.d.ts` resource.
    Types,
}

impl List {
    fn tag(self) -> char {
        match self {
            List::Tools => 't',
            List::Meta => 'm',
            List::Catalogue => 'c',
            List::Types => 'd',
        }
    }
}

/// The cursor of the page of `list` (whose fingerprint is `fingerprint`) that starts at
/// item `start`.
pub(crate) fn cursor(list: List, start: usize, fingerprint: u64) -> String {
    URL_SAFE_NO_PAD.encode(format!("{}{start:x}.{fingerprint:x}", list.tag()))
}

/// Where the page `raw` names starts, when it is a cursor of `list` as it is now (its
/// fingerprint) and within its `len` items; the error says why not, for the client.
pub(crate) fn start(list: List, raw: &str, fingerprint: u64, len: usize) -> Result<usize, String> {
    let bad = || {
        format!(
            "the cursor \"{}\" is not one this server gave for this list",
            shown(raw)
        )
    };
    let decoded = URL_SAFE_NO_PAD.decode(raw).map_err(|_| bad())?;
    let text = std::str::from_utf8(&decoded).map_err(|_| bad())?;
    let rest = text.strip_prefix(list.tag()).ok_or_else(bad)?;
    let (start, held) = rest.split_once('.').ok_or_else(bad)?;
    let start = usize::from_str_radix(start, 16).map_err(|_| bad())?;
    let held = u64::from_str_radix(held, 16).map_err(|_| bad())?;
    if held != fingerprint {
        return Err("the list changed since this cursor was given: list again from the start".to_owned());
    }
    if start == 0 || start >= len {
        return Err(bad());
    }
    Ok(start)
}

/// At most 64 characters of a cursor, for an error message.
fn shown(raw: &str) -> &str {
    match raw.char_indices().nth(64) {
        Some((i, _)) => &raw[..i],
        None => raw,
    }
}

/// The items from the start of `items` (each with its serialised bytes) that fit in one
/// page of `room` bytes, at most `max` of them — never fewer than one while any is left,
/// so every page makes progress even when one item is larger than the page. Items are
/// drawn one at a time, so a lazily described list describes one more than it keeps.
pub(crate) fn take<T>(items: impl IntoIterator<Item = (T, usize)>, room: usize, max: usize) -> Vec<T> {
    let mut spent = 0usize;
    let mut kept = Vec::new();
    for (item, size) in items.into_iter().take(max) {
        if !kept.is_empty() && spent + size > room {
            break;
        }
        spent += size;
        kept.push(item);
    }
    kept
}

/// The room one page has for its items: the page budget less what every answer carries
/// besides them (JSON-RPC envelope, headings, the next cursor).
pub(crate) const ROOM: usize = PAGE_BYTES - 4 * 1024;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_round_trips_and_only_for_its_own_list() {
        let c = cursor(List::Tools, 300, 0xfeed);
        assert_eq!(start(List::Tools, &c, 0xfeed, 1_000), Ok(300));
        assert!(start(List::Meta, &c, 0xfeed, 1_000).is_err(), "another list");
        assert!(
            start(List::Tools, &c, 0xbeef, 1_000).unwrap_err().contains("changed"),
            "a changed list"
        );
        assert!(start(List::Tools, &c, 0xfeed, 300).is_err(), "past the end");
        assert!(start(List::Tools, "not a cursor!", 0xfeed, 1_000).is_err());
        assert!(
            start(List::Tools, &cursor(List::Tools, 0, 1), 1, 10).is_err(),
            "the first page has none"
        );
    }

    #[test]
    fn a_page_holds_what_fits_and_always_one() {
        let sized = |sizes: &[usize]| sizes.iter().map(|&s| (s, s)).collect::<Vec<_>>();
        assert_eq!(take(sized(&[10, 10, 10]), 25, 100), [10, 10]);
        assert_eq!(take(sized(&[10, 10, 10]), 100, 2).len(), 2);
        assert_eq!(
            take(sized(&[500, 10]), 25, 100),
            [500],
            "an item over the page still makes progress"
        );
        assert!(take(sized(&[]), 25, 100).is_empty());
    }
}
