//! The slug of an upstream tool: `SERVER__TOOL`, always inside MCP's tool-name grammar
//! `[A-Za-z0-9_-]{1,64}`, and never the same for two tools.
//!
//! **The rule.**
//! 1. The server part is the server's name with every character outside `[A-Za-z0-9-]`
//!    replaced by `-`, cut to [`SERVER_PART_MAX`] characters. It holds no `_`, so the
//!    first `__` of a slug ends it, and two servers whose parts are equal are refused at
//!    configuration (the second is left out with a note): tools of two servers can never
//!    share a slug.
//! 2. A tool whose name is in the grammar and fits the room left keeps it verbatim:
//!    `everything__echo`. These slugs are distinct because the upstream's names are.
//! 3. Any other tool (a character outside the grammar, or too long) gets its name with
//!    those characters replaced by `_`, cut to leave room, then `-` and eight hex digits of
//!    a hash of its full original name: `db__select_from_a_very_long-1a2b3c4d`. Should that
//!    still meet a slug already taken (a hash collision, or a verbatim name of that very
//!    form), the tool is left out with a note rather than renamed by chance.
//!
//! Within a server, verbatim names are placed first and the rest in name order, so the
//! same tool list always yields the same slugs.

use std::collections::HashSet;

use crate::limits::SLUG_MAX_LEN;

/// Longest server part of a slug: leaves at least 37 characters for the tool's name.
pub const SERVER_PART_MAX: usize = 25;

/// The separator between the server part and the tool part.
pub const SEPARATOR: &str = "__";

/// The server part of `name`'s slugs, or `None` when it has no letter or digit.
pub fn server_part(name: &str) -> Option<String> {
    if !name.chars().any(|c| c.is_ascii_alphanumeric()) {
        return None;
    }
    Some(
        name.chars()
            .map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '-' })
            .take(SERVER_PART_MAX)
            .collect(),
    )
}

/// The slug of each tool of one server (`prefix` is its server part), in the order of
/// `names`; `None` for a tool left out because its fitted slug was taken.
pub fn slugs(prefix: &str, names: &[&str]) -> Vec<Option<String>> {
    let room = SLUG_MAX_LEN - prefix.len() - SEPARATOR.len();
    let fits = |n: &str| !n.is_empty() && n.len() <= room && n.chars().all(is_name_char);
    let mut taken: HashSet<String> = HashSet::new();
    let mut out: Vec<Option<String>> = vec![None; names.len()];
    for (i, name) in names.iter().enumerate() {
        if fits(name) && taken.insert((*name).to_owned()) {
            out[i] = Some(format!("{prefix}{SEPARATOR}{name}"));
        }
    }
    let mut rest: Vec<usize> = (0..names.len()).filter(|&i| !fits(names[i])).collect();
    rest.sort_by_key(|&i| names[i]);
    for i in rest {
        let hash = format!("{:08x}", fnv1a(names[i]) as u32);
        let keep = room - hash.len() - 1;
        let stem: String = names[i]
            .chars()
            .map(|c| if is_name_char(c) { c } else { '_' })
            .take(keep)
            .collect();
        let part = format!("{stem}-{hash}");
        if taken.insert(part.clone()) {
            out[i] = Some(format!("{prefix}{SEPARATOR}{part}"));
        }
    }
    out
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

/// FNV-1a, 64 bits: stable across builds and platforms (unlike `DefaultHasher`).
fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalogue::slug::is_advertisable;

    #[test]
    fn server_parts_hold_no_underscore() {
        assert_eq!(server_part("my_server.v2").as_deref(), Some("my-server-v2"));
        assert_eq!(server_part("___"), None);
        assert_eq!(server_part(&"x".repeat(99)).unwrap().len(), SERVER_PART_MAX);
    }

    #[test]
    fn verbatim_when_it_fits_else_fitted_with_a_hash_and_never_twice() {
        let long = "a".repeat(80);
        let names = ["echo", "get.file", "get_file", &long, "dup", "dup"];
        let got = slugs("srv", &names);
        assert_eq!(got[0].as_deref(), Some("srv__echo"));
        assert_eq!(got[2].as_deref(), Some("srv__get_file"));
        let fitted = got[1].as_deref().unwrap();
        assert!(
            fitted.starts_with("srv__get_file-") && fitted != "srv__get_file",
            "{fitted}"
        );
        assert_eq!(got[4].as_deref(), Some("srv__dup"));
        assert_eq!(got[5], None, "a repeated name is listed once");
        let all: Vec<&str> = got.iter().flatten().map(String::as_str).collect();
        assert!(all.iter().all(|s| is_advertisable(s)), "{all:?}");
        let unique: HashSet<&&str> = all.iter().collect();
        assert_eq!(unique.len(), all.len());
        assert_eq!(slugs("srv", &names), got, "stable");
        let widest = server_part(&"s".repeat(99)).unwrap();
        assert!(is_advertisable(slugs(&widest, &[&long])[0].as_deref().unwrap()));
    }
}
