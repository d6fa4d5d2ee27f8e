//! The built-in tools: the runtime families chosen by `TOOLGATE_RUNTIMES`, defined once
//! from the limits in force, each with its compiled validator.

use std::sync::{Arc, OnceLock};

use serde_json::Value;

use super::{Definition, Shape, envelope, nyxilum, runtimes};
use crate::error::Error;
use crate::limits::Limits;
use crate::validate::{self, Compiled};

/// The runtime tools exposed (`TOOLGATE_RUNTIMES`). By default, none.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Runtimes {
    /// `run_javascript` and `run_typescript`.
    pub js: bool,
    /// The `nyxilum_*` tools.
    pub nyxilum: bool,
}

impl Runtimes {
    /// Reads a comma- or space-separated list; unknown names come back as notes for
    /// stderr.
    pub fn parse(raw: &str) -> (Runtimes, Vec<String>) {
        let mut runtimes = Runtimes::default();
        let mut notes = Vec::new();
        for name in raw
            .split(|c: char| c == ',' || c.is_whitespace())
            .filter(|n| !n.is_empty())
        {
            match name.to_ascii_lowercase().as_str() {
                "js" | "javascript" => runtimes.js = true,
                "nyxilum" | "nx" => runtimes.nyxilum = true,
                other => notes.push(format!(
                    "TOOLGATE_RUNTIMES: unknown runtime \"{other}\" ignored (known: js, nyxilum)"
                )),
            }
        }
        (runtimes, notes)
    }
}

/// The `nyxilum_*` tools, one variant each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NyxTool {
    /// `nyxilum_run`.
    Run,
    /// `nyxilum_check`.
    Check,
    /// `nyxilum_lint`.
    Lint,
    /// `nyxilum_format`.
    Format,
    /// `nyxilum_version`.
    Version,
    /// `nyxilum_docs`.
    Docs,
    /// `nyxilum_repl_start`.
    ReplStart,
    /// `nyxilum_repl_eval`.
    ReplEval,
    /// `nyxilum_repl_stop`.
    ReplStop,
    /// `nyxilum_dev_build`.
    DevBuild,
    /// `nyxilum_dev_test`.
    DevTest,
}

/// What a built-in tool's call runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A JavaScript snippet (`run_javascript`), or with `typescript` a TypeScript one.
    Snippet {
        /// Erase types first.
        typescript: bool,
    },
    /// One of the NyxilumNode tools.
    Nyxilum(NyxTool),
}

/// One built-in tool.
#[derive(Debug)]
pub struct Builtin {
    /// How clients see it; its output schema admits failures.
    pub definition: Definition,
    /// Its input schema, compiled on first use: compiling costs ~1 ms a schema (most of
    /// a cold start with the runtime tools on), and `initialize` should not wait for it.
    validator: OnceLock<Result<Arc<Compiled>, String>>,
    /// What a call runs.
    pub kind: Kind,
    /// Params worth showing as a ready-to-send call.
    pub examples: Vec<Value>,
}

impl Builtin {
    /// Its compiled input schema. An error means a built-in schema does not compile: a
    /// bug of toolgate, caught by the unit tests, never the caller's fault.
    pub fn validator(&self) -> Result<Arc<Compiled>, Error> {
        self.validator
            .get_or_init(|| validate::compile(&self.definition.input_schema).map(Arc::new))
            .clone()
            .map_err(|e| {
                Error::Internal(format!(
                    "the input schema of {} does not compile: {e}",
                    self.definition.name
                ))
            })
    }

    /// How its answers are laid out.
    pub fn shape(&self) -> Shape {
        match self.kind {
            Kind::Snippet { .. } => Shape::Snippet,
            Kind::Nyxilum(_) => Shape::Flat,
        }
    }
}

/// A built-in before its schema is compiled: what the family modules declare.
pub(super) struct Declared {
    pub(super) definition: Definition,
    pub(super) kind: Kind,
    pub(super) examples: Vec<Value>,
}

/// The built-in tools of one server, in listed order.
#[derive(Debug, Default)]
pub struct Builtins {
    entries: Vec<Arc<Builtin>>,
}

impl Builtins {
    /// The tools `runtimes` asks for, described with the limits in force.
    pub fn new(runtimes: Runtimes, limits: &Limits) -> Builtins {
        let mut declared = Vec::new();
        if runtimes.js {
            declared.extend(runtimes::declare(limits));
        }
        if runtimes.nyxilum {
            declared.extend(nyxilum::declare());
        }
        let entries = declared
            .into_iter()
            .map(|d| {
                let mut definition = d.definition;
                definition.output_schema = envelope::admit_failures(definition.output_schema);
                Arc::new(Builtin {
                    definition,
                    validator: OnceLock::new(),
                    kind: d.kind,
                    examples: d.examples,
                })
            })
            .collect();
        Builtins { entries }
    }

    /// Every built-in, in listed order.
    pub fn all(&self) -> &[Arc<Builtin>] {
        &self.entries
    }

    /// The built-in named exactly `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<Builtin>> {
        self.entries.iter().find(|b| b.definition.name == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_compiles_and_its_example_validates() {
        let all = Builtins::new(
            Runtimes {
                js: true,
                nyxilum: true,
            },
            &Limits::default(),
        );
        assert_eq!(all.all().len(), 13);
        for b in all.all() {
            jsonschema::validator_for(&b.definition.output_schema).unwrap();
            for example in &b.examples {
                assert!(b.validator().unwrap().is_valid(example), "{}", b.definition.name);
            }
        }
        assert!(all.get("run_javascript").is_some() && all.get("nyxilum_docs").is_some());
        assert!(Builtins::new(Runtimes::default(), &Limits::default()).all().is_empty());
    }

    #[test]
    fn runtimes_list_is_read_leniently() {
        let both = Runtimes {
            js: true,
            nyxilum: true,
        };
        assert_eq!(Runtimes::parse(" js, nyxilum "), (both, vec![]));
        let (r, notes) = Runtimes::parse("python");
        assert!(!r.js && notes[0].contains("python"));
        assert_eq!(Runtimes::parse(""), (Runtimes::default(), vec![]));
    }
}
