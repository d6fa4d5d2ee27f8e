//! Why a tool of a source is not served as it was written: what a snapshot's build
//! reports (once per process on stderr, or as `catalogue check`'s failures).

/// Why a tool of the source is not served as it was written, found by
/// [`Snapshot::build`](super::Snapshot::build). Its `Display` is the sentence reported on stderr.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// A second tool with a slug already taken: it is dropped, the first one is kept.
    Duplicate {
        /// The slug both tools carry.
        slug: String,
    },
    /// Its input schema is not a JSON object (found at build: the tool is not served at
    /// all), or does not compile (found by [`Snapshot::build`](super::Snapshot::build), which `catalogue check`
    /// uses; a server compiles schemas on first use, and every call of such a tool fails
    /// naming the compiler's complaint).
    SetAside {
        /// The tool.
        slug: String,
        /// The compiler's complaint.
        reason: String,
    },
    /// Its slug does not fit MCP's tool-name grammar: served, but only through the
    /// meta-tool, never listed in `tools/list`.
    Withheld {
        /// The tool.
        slug: String,
    },
    /// Some of its text is over the caps of `limits.rs`: served, cut to them.
    Trimmed {
        /// The tool.
        slug: String,
        /// What was cut, one phrase each.
        cuts: Vec<String>,
    },
    /// One of its `examples` breaks its input schema: the tool is served without it, so
    /// no resource or ready-to-send call offers it.
    BadExample {
        /// The tool.
        slug: String,
        /// The example's place in `examples`, from 0.
        index: usize,
        /// How it breaks the schema, one clause per violation.
        violation: String,
    },
    /// A resource, resource template or prompt of the catalogue that is not served: it is
    /// malformed, over a cap, or takes a name or URI that is taken.
    Refused {
        /// `resource`, `resource template` or `prompt`.
        kind: &'static str,
        /// Its URI, template or name (or `#n`, its position, when it has none).
        name: String,
        /// Why, as a clause.
        reason: String,
    },
}

impl Problem {
    /// Returns true if and only if an entry of the source is not served at all (a
    /// set-aside tool, the second of two with one slug, a refused resource or prompt); a
    /// withheld or trimmed tool, or one without a bad example, is still served.
    pub fn is_unserved(&self) -> bool {
        !matches!(
            self,
            Problem::Withheld { .. } | Problem::Trimmed { .. } | Problem::BadExample { .. }
        )
    }

    /// The slug of the tool it is about, or the URI or name of the refused entry.
    pub fn subject(&self) -> &str {
        match self {
            Problem::Duplicate { slug }
            | Problem::SetAside { slug, .. }
            | Problem::Withheld { slug }
            | Problem::Trimmed { slug, .. }
            | Problem::BadExample { slug, .. } => slug,
            Problem::Refused { name, .. } => name,
        }
    }
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Problem::Duplicate { slug } => write!(f, "tool \"{slug}\" appears twice; the first one is kept"),
            Problem::SetAside { slug, reason } => write!(f, "tool \"{slug}\" is set aside: {reason}"),
            Problem::Withheld { slug } => write!(
                f,
                "tool \"{slug}\" is withheld from tools/list: its slug does not match [A-Za-z0-9_-]{{1,64}}; it stays reachable through the meta-tool"
            ),
            Problem::Trimmed { slug, cuts } => {
                write!(f, "tool \"{slug}\" is served with its text cut: {}", cuts.join("; "))
            }
            Problem::BadExample { slug, index, violation } => write!(
                f,
                "tool \"{slug}\" is served without examples[{index}], which breaks its input schema: {violation}"
            ),
            Problem::Refused { kind, name, reason } => write!(f, "{kind} \"{name}\" is not served: {reason}"),
        }
    }
}
