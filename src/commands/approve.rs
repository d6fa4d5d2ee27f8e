//! `toolgate upstream approve SERVER [TOOL]`: shows how an upstream's tool definitions
//! differ from the ones pinned for them (`TOOLGATE_PINS`) and pins what the server offers
//! now, so the held tools are served again — by a running toolgate within a second, as
//! it re-reads the file when it changes.
//!
//! It starts only that server (from `TOOLGATE_UPSTREAMS`), as the gateway would, lists its
//! tools, and prints for people on stdout: per tool, each changed part with the pinned and
//! the offered value.

use std::path::Path;
use std::sync::Arc;

use crate::backends::upstream::Upstreams;
use crate::backends::upstream::pins::{self, PinsFile};
use crate::config::Config;

/// Most changed leaves printed per tool; the rest are counted.
const SHOWN_CHANGES: usize = 40;

/// Approves the definitions `server` offers now (only `tool`'s when given), printing the
/// differences; an error is a sentence for stderr.
pub async fn run(config: &Config, server: &str, tool: Option<&str>) -> Result<(), String> {
    let source = config
        .upstreams
        .as_ref()
        .ok_or("toolgate upstream approve needs TOOLGATE_UPSTREAMS, the mcpServers file naming the server")?;
    let (file, _) = config
        .pins
        .as_ref()
        .ok_or("toolgate upstream approve needs TOOLGATE_PINS, the file of approved definitions")?;
    let (upstreams, _notes) = Upstreams::open(source, config.limits.upstream_ping, config.limits.upstream_first_wait)
        .map_err(|e| e.to_string())?;
    let upstreams = match &config.upstream_tokens {
        Some(tokens) => upstreams.with_tokens(tokens),
        None => upstreams,
    };
    let upstreams = Arc::new(upstreams.only(server)?);
    upstreams.start();
    let offered = upstreams.offered(server).await;
    upstreams.close().await;
    let offered = offered?;
    if let Some(tool) = tool
        && !offered.iter().any(|t| t.name == tool)
    {
        return Err(format!(
            "upstream \"{server}\" offers no tool \"{tool}\" now (of those its entry exposes)"
        ));
    }
    approve(file, server, tool, &offered)
}

/// Pins `offered` (only `tool` when given) for `server` in `file`, printing each change.
fn approve(file: &Path, server: &str, tool: Option<&str>, offered: &[rmcp::model::Tool]) -> Result<(), String> {
    let mut pinned = PinsFile::read(file)?;
    let mut approved = 0;
    for offer in offered.iter().filter(|t| tool.is_none_or(|name| t.name == name)) {
        let now = pins::definition(offer);
        let name = offer.name.as_ref();
        match pinned.get(server, name) {
            Some(pin) if pin.sha256 == pins::digest(&now) => continue,
            Some(pin) => {
                println!("{server} {name}: changed since approved");
                let changes = crate::history::diff::value_changes("", &pin.definition, &now);
                for change in changes.iter().take(SHOWN_CHANGES) {
                    let path = change.path.trim_start_matches('.');
                    println!("  {path}\n    - {}\n    + {}", change.from, change.to);
                }
                if changes.len() > SHOWN_CHANGES {
                    println!("  … and {} more", changes.len() - SHOWN_CHANGES);
                }
            }
            None => println!("{server} {name}: new"),
        }
        pinned.pin(server, name, now);
        approved += 1;
    }
    if approved == 0 {
        println!("nothing to approve: what {server} offers is what is pinned");
        return Ok(());
    }
    pinned.write(file)?;
    println!(
        "approved {} in {}",
        crate::plural::count(approved, "definition", "definitions"),
        file.display()
    );
    Ok(())
}
