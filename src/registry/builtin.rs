//! The built-in tools: those the runtime families offer (`TOOLGATE_RUNTIMES`), declared
//! once by each family with the limits in force, each with its compiled validator and
//! the family that runs it.

use std::sync::{Arc, OnceLock};

use serde_json::Value;

use super::{Definition, Shape, envelope};
use crate::backends::Backend;
use crate::error::Error;
use crate::limits::Limits;
use crate::validate::{self, Compiled};

/// One built-in tool.
#[derive(Debug)]
pub struct Builtin {
    /// How clients see it; its output schema admits failures.
    pub definition: Definition,
    /// Its input schema, compiled on first use: compiling costs ~1 ms a schema (most of
    /// a cold start with the runtime tools on), and `initialize` should not wait for it.
    validator: OnceLock<Result<Arc<Compiled>, validate::SchemaError>>,
    /// How its answers are laid out.
    pub shape: Shape,
    /// Params worth showing as a ready-to-send call.
    pub examples: Vec<Value>,
    /// The family that runs it.
    pub backend: Arc<dyn Backend>,
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
}

/// The built-in tools of one server, in listed order.
#[derive(Debug, Default)]
pub struct Builtins {
    entries: Vec<Arc<Builtin>>,
}

impl Builtins {
    /// The tools `families` offer, described with the limits in force.
    pub fn new(families: &[Arc<dyn Backend>], limits: &Limits) -> Builtins {
        let entries = families
            .iter()
            .flat_map(|family| {
                family.declare(limits).into_iter().map(|d| {
                    let mut definition = d.definition;
                    definition.output_schema = envelope::admit_failures(definition.output_schema);
                    Arc::new(Builtin {
                        definition,
                        validator: OnceLock::new(),
                        shape: d.shape,
                        examples: d.examples,
                        backend: family.clone(),
                    })
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
    use crate::backends::{Runtimes, declared};

    #[test]
    fn every_builtin_compiles_and_its_example_validates() {
        let all = declared(
            Runtimes {
                js: true,
                nyxilum: true,
            },
            &Limits::default(),
        );
        assert_eq!(all.len(), 13);
        for d in &all {
            jsonschema::validator_for(&envelope::admit_failures(d.definition.output_schema.clone())).unwrap();
            let compiled = validate::compile(&d.definition.input_schema).unwrap();
            for example in &d.examples {
                assert!(compiled.is_valid(example), "{}", d.definition.name);
            }
        }
        assert!(all.iter().any(|d| d.definition.name == "run_javascript"));
        assert!(all.iter().any(|d| d.definition.name == "nyxilum_docs"));
        assert!(declared(Runtimes::default(), &Limits::default()).is_empty());
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
