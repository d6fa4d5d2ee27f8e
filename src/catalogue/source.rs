//! How a catalogue source is named: `embedded`, a folder, a `.json` file, or a catalogue
//! API's base URL. The catalogue owns this type; `config` only builds it from settings.

use std::path::PathBuf;

/// Where the catalogue comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SourceSpec {
    /// The `catalogue/` folder compiled into the binary.
    Embedded,
    /// A folder with one sub-folder per tool.
    Dir(PathBuf),
    /// A `{"tools": [...]}` file with sources inline.
    File(PathBuf),
    /// A catalogue HTTP API; the base always ends in `/api`.
    Http(String),
}

impl SourceSpec {
    /// Reads a `TOOLGATE_CATALOGUE` value: `embedded`, an `http(s)://` base, a `.json`
    /// file, or else a folder.
    pub fn parse(raw: &str) -> Result<SourceSpec, String> {
        let raw = raw.trim();
        if raw.is_empty() || raw == "embedded" {
            Ok(SourceSpec::Embedded)
        } else if raw.starts_with("http://") || raw.starts_with("https://") {
            Ok(SourceSpec::Http(api_base(raw)?))
        } else if raw.ends_with(".json") {
            Ok(SourceSpec::File(PathBuf::from(raw)))
        } else {
            Ok(SourceSpec::Dir(PathBuf::from(raw)))
        }
    }

    /// The `TOOLGATE_CATALOGUE` value that [`SourceSpec::parse`] reads back as this same
    /// source, for a child process. A folder keeps a trailing `/`, so one named
    /// `x.json` or `embedded` stays a folder.
    pub fn setting(&self) -> String {
        match self {
            SourceSpec::Embedded => "embedded".to_owned(),
            SourceSpec::Dir(path) => {
                let text = path.display().to_string();
                if text.ends_with('/') { text } else { format!("{text}/") }
            }
            SourceSpec::File(path) => path.display().to_string(),
            SourceSpec::Http(base) => base.clone(),
        }
    }

    /// Returns true if and only if the tools' code belongs to the operator (embedded,
    /// folder or file), so it always runs locally whatever the execution mode.
    pub fn is_local(&self) -> bool {
        !matches!(self, SourceSpec::Http(_))
    }
}

/// Normalises an API base given as a bare host or in its `/api` form to the `/api` form.
pub fn api_base(raw: &str) -> Result<String, String> {
    let trimmed = raw.trim().trim_end_matches('/');
    let rest = trimmed
        .strip_prefix("http://")
        .or_else(|| trimmed.strip_prefix("https://"))
        .ok_or_else(|| format!("API URL \"{raw}\" must start with http:// or https://"))?;
    if rest.is_empty() || rest.starts_with('/') {
        return Err(format!("API URL \"{raw}\" has no host"));
    }
    if trimmed.ends_with("/api") {
        Ok(trimmed.to_owned())
    } else {
        Ok(format!("{trimmed}/api"))
    }
}
