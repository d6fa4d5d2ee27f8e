//! `toolgate upstream login SERVER`: authorizes toolgate at the OAuth authorization server
//! of an HTTP upstream whose entry has `oauth` (`backends::upstream::oauth::Login`). It
//! prints the address for a person to open and waits on a loopback redirect; the tokens
//! go to the tokens file (`TOOLGATE_UPSTREAM_TOKENS`), never to stdout or stderr. A
//! running toolgate takes them at its next request to that upstream.

use crate::backends::upstream::oauth::Login;
use crate::backends::upstream::{Transport, settings};
use crate::config::Config;

/// Logs in to `server`; an error is a sentence for stderr.
pub async fn run(config: &Config, server: &str) -> Result<(), String> {
    let source = config
        .upstreams
        .as_ref()
        .ok_or("toolgate upstream login needs TOOLGATE_UPSTREAMS, the mcpServers file naming the server")?;
    let tokens = config
        .upstream_tokens
        .as_ref()
        .ok_or("toolgate upstream login needs TOOLGATE_UPSTREAM_TOKENS (or HOME), the file the tokens are kept in")?;
    let text = std::fs::read_to_string(&source.0)
        .map_err(|e| format!("TOOLGATE_UPSTREAMS: cannot read {}: {e}", source.0.display()))?;
    let (servers, notes) =
        settings::parse(&text).map_err(|e| format!("TOOLGATE_UPSTREAMS: {}: {e}", source.0.display()))?;
    let Some(entry) = servers.iter().find(|s| s.name == server) else {
        let why = notes
            .iter()
            .find(|n| n.contains(&format!("\"{server}\"")))
            .cloned()
            .unwrap_or_else(|| format!("the mcpServers file names no server \"{server}\""));
        return Err(why);
    };
    let Transport::Http {
        url,
        headers,
        oauth: Some(oauth),
    } = &entry.transport
    else {
        return Err(format!(
            "upstream \"{server}\" has no \"oauth\" in its entry: there is nothing to log in to"
        ));
    };
    let login = Login {
        server,
        url,
        headers,
        oauth,
        tokens,
    };
    let done = login.run().await?;
    println!("{done}");
    Ok(())
}
