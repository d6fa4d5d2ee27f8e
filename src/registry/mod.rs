//! Every tool the server offers, as one kind of entry: a name, a definition (schemas,
//! annotations), a compiled input validator and the family that runs it.
//!
//! Catalogue tools come from the snapshot; the built-in tools are declared once by their
//! families (`backends`) from the settings. The gateway resolves a name to an [`Entry`]
//! and runs every entry the same way — through its family's `Backend` — so the meta-tool,
//! batch, history and diff reach every family without knowing which it is. This module
//! knows nothing of MCP: definitions are plain JSON.

mod builtin;

use std::sync::Arc;

use serde_json::{Value, json};

pub use crate::backends::envelope;
pub use crate::backends::{Backend, Definition, Runtimes, Shape};
pub use builtin::{Builtin, Builtins};

use crate::backends::js::typings::{self, Resolves, Typed};
use crate::catalogue::manifest::Json;
use crate::catalogue::{Snapshot, Tool};
use crate::error::Error;
use crate::validate::Compiled;

/// A resolved tool, ready to validate and run.
#[derive(Debug, Clone)]
pub enum Entry {
    /// A catalogue tool, with the snapshot it was resolved from (whose origin decides
    /// where it runs) and the family that runs the catalogue's tools.
    Catalogue {
        /// The tool.
        tool: Arc<Tool>,
        /// The snapshot it belongs to.
        snapshot: Arc<Snapshot>,
        /// The family that runs it.
        backend: Arc<dyn Backend>,
    },
    /// A built-in tool (which names its family).
    Builtin(Arc<Builtin>),
    /// An upstream MCP server's tool (its `federated` says which), with the snapshot it
    /// was resolved from and the upstream family.
    Upstream {
        /// The tool.
        tool: Arc<Tool>,
        /// The snapshot it belongs to.
        snapshot: Arc<Snapshot>,
        /// The family that runs it.
        backend: Arc<dyn Backend>,
    },
}

impl Entry {
    /// The name it is called by.
    pub fn name(&self) -> &str {
        match self {
            Entry::Catalogue { tool, .. } | Entry::Upstream { tool, .. } => tool.slug(),
            Entry::Builtin(b) => &b.definition.name,
        }
    }

    /// The family that runs it.
    pub fn backend(&self) -> &Arc<dyn Backend> {
        match self {
            Entry::Catalogue { backend, .. } | Entry::Upstream { backend, .. } => backend,
            Entry::Builtin(b) => &b.backend,
        }
    }

    /// What its family is asked to run.
    pub fn target(&self) -> crate::backends::Target<'_> {
        match self {
            Entry::Catalogue { tool, snapshot, .. } | Entry::Upstream { tool, snapshot, .. } => {
                crate::backends::Target::Tool {
                    tool,
                    origin: snapshot.origin(),
                }
            }
            Entry::Builtin(b) => crate::backends::Target::Builtin(&b.definition.name),
        }
    }

    /// Its compiled input schema (a catalogue tool's compiled on first use).
    pub fn validator(&self) -> Result<Arc<Compiled>, Error> {
        match self {
            Entry::Catalogue { tool, .. } | Entry::Upstream { tool, .. } => tool.validator(),
            Entry::Builtin(b) => b.validator(),
        }
    }

    /// Its input schema.
    pub fn input_schema(&self) -> Value {
        match self {
            Entry::Catalogue { tool, .. } | Entry::Upstream { tool, .. } => tool.manifest.input_schema.value(),
            Entry::Builtin(b) => b.definition.input_schema.clone(),
        }
    }

    /// The schema of what it returns: a catalogue tool's own `result` schema, an
    /// upstream tool's `structuredContent` schema (`None` when either declares none), a
    /// built-in's whole answer.
    pub fn output_schema(&self) -> Option<Value> {
        match self {
            Entry::Catalogue { tool, .. } | Entry::Upstream { tool, .. } => {
                tool.manifest.output_schema.as_ref().map(Json::value)
            }
            Entry::Builtin(b) => Some(b.definition.output_schema.clone()),
        }
    }

    /// Its TypeScript declaration as a function of a snippet's `tools` (code mode): a
    /// method of `interface Tools`, typed from its schemas. `None` for a snippet tool,
    /// which code cannot call.
    pub fn typescript(&self) -> Option<String> {
        let input = self.input_schema();
        let (output, envelope) = match self {
            Entry::Catalogue { tool, .. } => (tool.manifest.output_schema.as_ref().map(Json::value), true),
            Entry::Upstream { tool, .. } => (tool.manifest.output_schema.as_ref().map(Json::value), false),
            Entry::Builtin(b) if b.shape == Shape::Snippet => return None,
            Entry::Builtin(b) => (Some(b.definition.output_schema.clone()), false),
        };
        let resolves = match envelope {
            true => Resolves::Envelope(output.as_ref()),
            false => Resolves::Own(output.as_ref()),
        };
        Some(typings::declaration(&Typed {
            slug: self.name(),
            description: self.description(),
            input: &input,
            resolves,
        }))
    }

    /// What it does, in full.
    pub fn description(&self) -> &str {
        match self {
            Entry::Catalogue { tool, .. } | Entry::Upstream { tool, .. } => &tool.manifest.description,
            Entry::Builtin(b) => &b.definition.description,
        }
    }

    /// How its answers are laid out.
    pub fn shape(&self) -> Shape {
        match self {
            Entry::Catalogue { .. } => Shape::Envelope,
            Entry::Upstream { .. } => Shape::Passthrough,
            Entry::Builtin(b) => b.shape,
        }
    }

    /// Returns true if and only if a direct `tools/call` may name it (its name fits
    /// MCP's tool-name grammar).
    pub fn is_advertisable(&self) -> bool {
        match self {
            Entry::Catalogue { tool, .. } | Entry::Upstream { tool, .. } => tool.is_advertisable,
            Entry::Builtin(_) => true,
        }
    }

    /// Params that pass its validator: its author's first valid example, else params
    /// synthesised from its input schema.
    pub fn example_params(&self) -> Value {
        let found = match self {
            Entry::Catalogue { tool, .. } | Entry::Upstream { tool, .. } => crate::catalogue::example::params_for(tool),
            Entry::Builtin(b) => b.validator().ok().and_then(|v| {
                crate::catalogue::example::params_from(b.examples.clone(), &b.definition.input_schema, &v)
            }),
        };
        found.unwrap_or_else(|| json!({}))
    }
}

/// A catalogue tool as clients see it. The output schema describes the whole
/// `structuredContent` of a run, with the tool's own output schema under `result`; an
/// upstream tool's answer is its server's own, so its output schema is the server's
/// (failures admitted), or `null` — none advertised — when the server declares none.
pub fn describe(tool: &Tool) -> Definition {
    let m = &tool.manifest;
    let title = if m.name.is_empty() {
        m.slug.clone()
    } else {
        m.name.clone()
    };
    let mut annotations = m.annotations.as_ref().map_or_else(|| json!({}), Json::value);
    if annotations.get("title").is_none() {
        annotations["title"] = json!(title);
    }
    Definition {
        name: m.slug.clone(),
        title,
        description: m.description.clone(),
        input_schema: m.input_schema.value(),
        output_schema: match (&tool.federated, &m.output_schema) {
            (None, own) => envelope::run_output_schema(own.as_ref().map(Json::value).as_ref()),
            (Some(_), Some(own)) => envelope::admit_failures(own.value()),
            (Some(_), None) => Value::Null,
        },
        annotations,
    }
}
