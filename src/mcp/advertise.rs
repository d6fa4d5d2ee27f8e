//! Which tools `tools/list` advertises: the policy the MCP surface owns; `config` only
//! builds it from `TOOLGATE_ADVERTISE`.

/// Which tools `tools/list` advertises besides the meta-tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Advertise {
    /// Every advertisable catalogue tool.
    All,
    /// Only the meta-tool.
    Meta,
    /// The meta-tool plus the tools that fit the byte budget ([`crate::limits::ADVERTISE_BYTES`]).
    Auto,
}

impl Advertise {
    /// Reads a `TOOLGATE_ADVERTISE` value; anything unknown is `Auto`, with a note.
    pub fn parse(raw: &str) -> (Advertise, Option<String>) {
        match raw.trim().to_ascii_lowercase().as_str() {
            "" | "auto" => (Advertise::Auto, None),
            "all" => (Advertise::All, None),
            "meta" => (Advertise::Meta, None),
            other => (
                Advertise::Auto,
                Some(format!(
                    "TOOLGATE_ADVERTISE=\"{other}\" is not all, meta or auto; using auto"
                )),
            ),
        }
    }
}
