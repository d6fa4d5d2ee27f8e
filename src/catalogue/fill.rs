//! `{name}` placeholders filled in one pass: the text a catalogue author wrote, with each
//! placeholder whose name is known replaced by its value. One pass, so a value that itself
//! contains `{other}` is never filled again; an unknown `{...}` (a JSON brace, say) stays
//! as written. The result is bounded: a fill that would pass `max` bytes stops there.

/// A fill would pass its byte bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct TooLong {
    /// The bound, in bytes.
    pub(super) max: usize,
}

/// Replaces each `{name}` of `text` for which `value(name)` answers, in one pass, within
/// `max` bytes.
pub(super) fn fill<'a>(text: &str, value: impl Fn(&str) -> Option<&'a str>, max: usize) -> Result<String, TooLong> {
    let mut out = String::with_capacity(text.len().min(max));
    let mut rest = text;
    while let Some(open) = rest.find('{') {
        let (before, from) = rest.split_at(open);
        push(&mut out, before, max)?;
        let filled = from[1..]
            .find(['}', '{'])
            .filter(|&close| from.as_bytes()[1 + close] == b'}')
            .and_then(|close| value(&from[1..1 + close]).map(|v| (v, close)));
        match filled {
            Some((v, close)) => {
                push(&mut out, v, max)?;
                rest = &from[close + 2..];
            }
            None => {
                push(&mut out, "{", max)?;
                rest = &from[1..];
            }
        }
    }
    push(&mut out, rest, max)?;
    Ok(out)
}

fn push(out: &mut String, piece: &str, max: usize) -> Result<(), TooLong> {
    if out.len() + piece.len() > max {
        return Err(TooLong { max });
    }
    out.push_str(piece);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str, expected: &str) {
        let value = |name: &str| match name {
            "id" => Some("42"),
            "x" => Some("{id}"),
            _ => None,
        };
        assert_eq!(fill(text, value, 1_000).unwrap(), expected);
    }

    #[test]
    fn fills_known_names_once_and_keeps_everything_else() {
        check(r#"{"id":"{id}"}"#, r#"{"id":"42"}"#);
        check("{id}{id}", "4242");
        check("{x} stays {x}", "{id} stays {id}");
        check("{unknown} {id", "{unknown} {id");
        check("{{id}}", "{42}");
        check("", "");
        check("}{", "}{");
    }

    #[test]
    fn a_fill_past_its_bound_is_refused() {
        assert_eq!(fill("{id}{id}{id}", |_| Some("12345"), 14), Err(TooLong { max: 14 }));
        assert_eq!(fill("{id}{id}", |_| Some("12345"), 10).unwrap(), "1234512345");
    }
}
