//! What a schema costs to check, found before it is compiled, and the two copies of it
//! that are compiled:
//!
//! - the **verdict** schema: the schema as written, except that each `pattern` needing a
//!   backtracking engine (lookaround, backreferences) becomes toolgate's own bounded
//!   keyword ([`super::keywords::PATTERN`]), which checks only values of bounded length
//!   within a per-call budget. `is_valid` on it decides every call: one pass, with
//!   jsonschema's memo for recursive references.
//! - the **report** schema, compiled on the first call that fails: the verdict schema
//!   with every applicator that checks several schemas against one value (`anyOf`,
//!   `oneOf`, `allOf` of two or more, `if`, `dependentSchemas`, `contains`, overlapping
//!   `patternProperties`, `unevaluated*`) replaced by one opaque keyword that asks the
//!   verdict's own compiled subschemas whether the value passes. Collecting errors then
//!   walks the value once instead of once per combination of branches: a recursive union
//!   `Node = Item | Group` failing at depth 20 collected 2^20 branch errors (2.3 GB at
//!   depth 18) in jsonschema's own reporter.
//!
//! Refused here, with a sentence naming the place: a schema whose in-place applicators
//! and references unfold into more than [`VALIDATION_UNFOLD`] checks of one value (a
//! chain of `$defs` each `anyOf` two references to the next: 2^n checks of a string,
//! which no memo catches), and a `patternProperties` pattern that needs backtracking
//! (names are matched against it with no length bound toolgate could enforce).

use std::collections::HashMap;

use serde_json::{Map, Value, json};

use super::keywords::{OPAQUE, PATTERN};
use crate::limits::VALIDATION_UNFOLD;

/// Keys whose value is one subschema.
const ONE: &[&str] = &[
    "additionalProperties",
    "additionalItems",
    "contains",
    "propertyNames",
    "not",
    "if",
    "then",
    "else",
    "unevaluatedItems",
    "unevaluatedProperties",
    "contentSchema",
];

/// Keys whose value is an array of subschemas.
const MANY: &[&str] = &["allOf", "anyOf", "oneOf", "prefixItems"];

/// Keys whose value maps names to subschemas.
const NAMED: &[&str] = &[
    "properties",
    "patternProperties",
    "dependentSchemas",
    "$defs",
    "definitions",
];

/// Longest chain of in-place applicators and references followed when counting; a
/// longer one is refused rather than followed on the stack.
const CHAIN_MAX: usize = 256;

/// How a `pattern` is matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Engine {
    /// Linear time (the `regex` crate accepts its translation).
    Linear,
    /// It needs lookaround or backreferences: a backtracking engine.
    Backtracking,
    /// It does not compile at all (jsonschema reports it).
    Broken,
}

/// Which engine `pattern` (ECMA 262, as JSON Schema writes it) needs.
pub(super) fn engine(pattern: &str) -> Engine {
    let Ok(translated) = jsonschema_regex::to_rust_regex(pattern) else {
        return Engine::Broken;
    };
    if regex::Regex::new(&translated).is_ok() {
        Engine::Linear
    } else if fancy_regex::Regex::new(&translated).is_ok() {
        Engine::Backtracking
    } else {
        Engine::Broken
    }
}

/// What [`inspect`] learned of a schema it accepts.
#[derive(Debug, Default)]
pub(super) struct Facts {
    /// `"/properties/password: (?=.*[A-Z]).{8,}"` for each `pattern` that needs a
    /// backtracking engine (checked only on values of bounded length).
    pub(super) backtracking: Vec<String>,
    /// Whether it has a union (`anyOf`, `oneOf`) and a reference: a recursive union,
    /// whose check of a deep value tries its branches at every level.
    pub(super) branching: bool,
}

/// Checks what `schema` would cost: the unfolding of its in-place applicators and the
/// engines its patterns need. The error says where and why it is refused.
pub(super) fn inspect(schema: &Value) -> Result<Facts, String> {
    let mut facts = Facts::default();
    let mut problem = None;
    let (mut unions, mut references) = (false, false);
    visit(schema, &mut String::new(), &mut |node, at| {
        unions |= node.contains_key("anyOf") || node.contains_key("oneOf");
        references |= ["$ref", "$dynamicRef", "$recursiveRef"]
            .iter()
            .any(|k| node.contains_key(*k));
        if problem.is_some() {
            return;
        }
        if let Some(Value::String(p)) = node.get("pattern")
            && engine(p) == Engine::Backtracking
        {
            facts.backtracking.push(format!("{}: {p}", shown(at)));
        }
        if let Some(Value::Object(patterns)) = node.get("patternProperties")
            && let Some(p) = patterns.keys().find(|p| engine(p) == Engine::Backtracking)
        {
            problem = Some(format!(
                "{}: the patternProperties pattern {p:?} needs a backtracking engine (lookaround or a backreference), whose time toolgate cannot bound for property names; write it without lookaround",
                shown(at)
            ));
        }
    });
    if let Some(problem) = problem {
        return Err(problem);
    }
    facts.branching = unions && references;
    let mut count = Unfold::new(schema);
    let mut worst = (0u64, String::new());
    let mut pointers = Vec::new();
    visit(schema, &mut String::new(), &mut |_, at| pointers.push(at.to_owned()));
    for at in pointers {
        let n = count.of(&at, 0)?;
        if n > worst.0 {
            worst = (n, at);
        }
    }
    if worst.0 > VALIDATION_UNFOLD {
        return Err(format!(
            "{}: its alternatives and references unfold into more than {VALIDATION_UNFOLD} checks of one value ({} or more); share fewer references between branches",
            shown(&worst.1),
            worst.0
        ));
    }
    Ok(facts)
}

/// `at` as messages show it: `(root)` for the whole schema.
fn shown(at: &str) -> &str {
    if at.is_empty() { "(root)" } else { at }
}

/// Calls `f` on every subschema object of `schema` with its JSON pointer (RFC 6901,
/// `""` for the root), parents first.
fn visit(schema: &Value, at: &mut String, f: &mut dyn FnMut(&Map<String, Value>, &str)) {
    let Value::Object(node) = schema else { return };
    f(node, at);
    let len = at.len();
    for (key, value) in node {
        let mut child = |name: Option<&str>, index: Option<usize>, sub: &Value, at: &mut String| {
            push(at, key);
            if let Some(name) = name {
                push(at, name);
            }
            if let Some(i) = index {
                at.push('/');
                at.push_str(&i.to_string());
            }
            visit(sub, at, f);
            at.truncate(len);
        };
        match (key.as_str(), value) {
            (k, _) if ONE.contains(&k) => child(None, None, value, at),
            ("items", Value::Array(items)) => {
                for (i, sub) in items.iter().enumerate() {
                    child(None, Some(i), sub, at);
                }
            }
            ("items", _) => child(None, None, value, at),
            (k, Value::Array(items)) if MANY.contains(&k) => {
                for (i, sub) in items.iter().enumerate() {
                    child(None, Some(i), sub, at);
                }
            }
            (k, Value::Object(named)) if NAMED.contains(&k) || k == "dependencies" => {
                for (name, sub) in named {
                    child(Some(name), None, sub, at);
                }
            }
            _ => {}
        }
    }
}

/// Appends `/token` to a JSON pointer, escaped.
fn push(at: &mut String, token: &str) {
    at.push('/');
    for c in token.chars() {
        match c {
            '~' => at.push_str("~0"),
            '/' => at.push_str("~1"),
            c => at.push(c),
        }
    }
}

/// The subschema at JSON pointer `at` of `root`.
fn resolve<'a>(root: &'a Value, at: &str) -> Option<&'a Value> {
    if at.is_empty() {
        return Some(root);
    }
    root.pointer(at)
}

/// The JSON pointer a local `$ref` names (`#`, `#/$defs/A`, percent-encoded or not);
/// `None` for any other reference (an anchor, another document).
fn local_ref(reference: &str) -> Option<String> {
    let fragment = reference.strip_prefix('#')?;
    if !(fragment.is_empty() || fragment.starts_with('/')) {
        return None;
    }
    let bytes = fragment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%'
            && let (Some(&h), Some(&l)) = (bytes.get(i + 1), bytes.get(i + 2))
            && let (Some(h), Some(l)) = (hex(h), hex(l))
        {
            out.push((h * 16 + l) as u8);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8(out).ok()
}

/// Counts, for a subschema, how many subschemas check the same value: itself plus, through
/// every in-place applicator and local reference, theirs. A reference back into a chain
/// being counted adds nothing (jsonschema ends such a loop as `true`).
struct Unfold<'a> {
    root: &'a Value,
    known: HashMap<String, u64>,
    open: Vec<String>,
}

impl<'a> Unfold<'a> {
    fn new(root: &'a Value) -> Unfold<'a> {
        Unfold {
            root,
            known: HashMap::new(),
            open: Vec::new(),
        }
    }

    fn of(&mut self, at: &str, depth: usize) -> Result<u64, String> {
        if let Some(n) = self.known.get(at) {
            return Ok(*n);
        }
        if self.open.iter().any(|o| o == at) {
            return Ok(0);
        }
        if depth > CHAIN_MAX {
            return Err(format!(
                "{}: its in-place applicators and references chain deeper than {CHAIN_MAX}",
                shown(at)
            ));
        }
        let Some(Value::Object(node)) = resolve(self.root, at) else {
            return Ok(1);
        };
        let mut children = Vec::new();
        for (key, value) in node {
            match (key.as_str(), value) {
                ("$ref" | "$dynamicRef" | "$recursiveRef", Value::String(r)) => {
                    // `$recursiveRef: "#"` and `$dynamicRef` to the root resolve like `#`.
                    if let Some(target) = local_ref(r) {
                        children.push(target);
                    }
                }
                ("not" | "if" | "then" | "else", _) => children.push(child_of(at, key, None)),
                ("allOf" | "anyOf" | "oneOf", Value::Array(items)) => {
                    children.extend((0..items.len()).map(|i| child_of(at, key, Some(&i.to_string()))));
                }
                ("dependentSchemas", Value::Object(named)) => {
                    children.extend(named.keys().map(|name| child_of(at, key, Some(name))));
                }
                ("dependencies", Value::Object(named)) => {
                    children.extend(
                        named
                            .iter()
                            .filter(|(_, v)| v.is_object())
                            .map(|(name, _)| child_of(at, key, Some(name))),
                    );
                }
                _ => {}
            }
        }
        self.open.push(at.to_owned());
        let mut total = 1u64;
        for child in children {
            total = total.saturating_add(self.of(&child, depth + 1)?);
            if total > VALIDATION_UNFOLD {
                break;
            }
        }
        self.open.pop();
        self.known.insert(at.to_owned(), total);
        Ok(total)
    }
}

/// The pointer of `key` (and its `index` or name) under `at`.
fn child_of(at: &str, key: &str, index: Option<&str>) -> String {
    let mut out = at.to_owned();
    push(&mut out, key);
    if let Some(i) = index {
        push(&mut out, i);
    }
    out
}

/// The verdict schema: `schema` with each `pattern` that needs backtracking replaced by
/// toolgate's bounded keyword (which also reads the node's `maxLength`).
pub(super) fn verdict(schema: &Value) -> Value {
    rewrite(schema, &mut String::new(), &mut |node, _| {
        if let Some(Value::String(p)) = node.get("pattern")
            && engine(p) == Engine::Backtracking
            && let Some(p) = node.remove("pattern")
        {
            node.insert(PATTERN.to_owned(), p);
        }
    })
}

/// The report schema: `verdict` (a verdict schema) with every applicator that checks
/// several subschemas against one value replaced by the opaque keyword, which names the
/// applicator and the pointer of its node in `verdict`.
pub(super) fn report(verdict: &Value) -> Value {
    rewrite(verdict, &mut String::new(), &mut |node, at| {
        let opaque = |kind: &str| json!({"kind": kind, "at": format!("#{at}")});
        // A node whose children may be matched by several subschemas, or whose
        // keywords read what its other applicators evaluated, is checked whole.
        let overlapping = node
            .get("patternProperties")
            .and_then(Value::as_object)
            .is_some_and(|p| p.len() > 1 || node.contains_key("properties"));
        let unevaluated = node.contains_key("unevaluatedProperties") || node.contains_key("unevaluatedItems");
        if overlapping || unevaluated {
            let kind = if unevaluated {
                "unevaluated"
            } else {
                "patternProperties"
            };
            let whole = opaque(kind);
            node.clear();
            node.insert(OPAQUE.to_owned(), whole);
            return;
        }
        let mut checks = Vec::new();
        for kind in ["anyOf", "oneOf", "allOf"] {
            let several = match node.get(kind) {
                Some(Value::Array(items)) => kind != "allOf" || items.len() > 1,
                _ => false,
            };
            if several {
                node.remove(kind);
                checks.push(opaque(kind));
            }
        }
        if node.contains_key("if") {
            for key in ["if", "then", "else"] {
                node.remove(key);
            }
            checks.push(opaque("if"));
        }
        for kind in ["dependentSchemas", "dependencies"] {
            if node
                .get(kind)
                .and_then(Value::as_object)
                .is_some_and(|d| d.values().any(Value::is_object))
            {
                checks.push(opaque(kind));
                // Property lists of `dependencies` stay with the node; only schemas move.
                if let Some(Value::Object(d)) = node.get_mut(kind) {
                    d.retain(|_, v| !v.is_object() && !v.is_boolean());
                    if d.is_empty() {
                        node.remove(kind);
                    }
                }
            }
        }
        if node.contains_key("contains") {
            for key in ["contains", "minContains", "maxContains"] {
                node.remove(key);
            }
            checks.push(opaque("contains"));
        }
        match checks.len() {
            0 => {}
            1 => {
                node.insert(OPAQUE.to_owned(), checks.remove(0));
            }
            // Several on one node: an `allOf` of opaque checks, each its own error.
            _ => {
                let each: Vec<Value> = checks.into_iter().map(|c| one(OPAQUE, c)).collect();
                node.insert("allOf".to_owned(), Value::Array(each));
            }
        }
    })
}

/// `{key: value}`.
fn one(key: &str, value: Value) -> Value {
    let mut map = Map::new();
    map.insert(key.to_owned(), value);
    Value::Object(map)
}

/// A copy of `schema` in which `f` has rewritten every subschema object (children first,
/// so `f` sees its node's keywords but the children's already rewritten).
fn rewrite(schema: &Value, at: &mut String, f: &mut dyn FnMut(&mut Map<String, Value>, &str)) -> Value {
    let Value::Object(node) = schema else {
        return schema.clone();
    };
    let len = at.len();
    let mut out = Map::new();
    for (key, value) in node {
        let mut child = |suffix: &[&str], sub: &Value, at: &mut String| {
            push(at, key);
            for s in suffix {
                push(at, s);
            }
            let done = rewrite(sub, at, f);
            at.truncate(len);
            done
        };
        let copied = match (key.as_str(), value) {
            (k, _) if ONE.contains(&k) => child(&[], value, at),
            ("items", Value::Array(items)) => Value::Array(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, sub)| child(&[&i.to_string()], sub, at))
                    .collect(),
            ),
            ("items", _) => child(&[], value, at),
            (k, Value::Array(items)) if MANY.contains(&k) => Value::Array(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, sub)| child(&[&i.to_string()], sub, at))
                    .collect(),
            ),
            (k, Value::Object(named)) if NAMED.contains(&k) || k == "dependencies" => Value::Object(
                named
                    .iter()
                    .map(|(name, sub)| (name.clone(), child(&[name], sub, at)))
                    .collect(),
            ),
            _ => value.clone(),
        };
        out.insert(key.clone(), copied);
    }
    f(&mut out, at);
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engines_are_told_apart() {
        assert_eq!(engine("^[a-z]+$"), Engine::Linear);
        assert_eq!(engine(r"^\d{3}-\p{L}+$"), Engine::Linear);
        assert_eq!(engine("(?=.*[A-Z])(?=.*[0-9]).{12,}"), Engine::Backtracking);
        assert_eq!(engine(r"^(a)\1$"), Engine::Backtracking);
        assert_eq!(engine("(unclosed"), Engine::Broken);
    }

    #[test]
    fn a_chain_of_shared_references_is_refused_and_a_recursive_union_is_not() {
        let mut defs = Map::new();
        defs.insert("d0".into(), json!({"type": "string"}));
        for i in 1..=20 {
            let prev = format!("#/$defs/d{}", i - 1);
            defs.insert(format!("d{i}"), json!({"anyOf": [{"$ref": prev}, {"$ref": prev}]}));
        }
        let chain = json!({"$ref": "#/$defs/d20", "$defs": defs});
        let refused = inspect(&chain).unwrap_err();
        assert!(refused.contains("unfold into more than"), "{refused}");
        let union = json!({
            "properties": {"tree": {"$ref": "#/$defs/Node"}},
            "$defs": {
                "Node": {"anyOf": [{"$ref": "#/$defs/Item"}, {"$ref": "#/$defs/Group"}]},
                "Item": {"properties": {"children": {"items": {"$ref": "#/$defs/Node"}}}},
                "Group": {"properties": {"children": {"items": {"$ref": "#/$defs/Node"}}}},
            },
        });
        assert!(inspect(&union).is_ok());
        let cycle = json!({"$ref": "#/$defs/A", "$defs": {"A": {"$ref": "#/$defs/B"}, "B": {"$ref": "#/$defs/A"}}});
        assert!(inspect(&cycle).is_ok(), "a reference loop is counted once");
    }

    #[test]
    fn backtracking_patterns_are_found_and_refused_only_for_names() {
        let schema = json!({"properties": {"pw": {"type": "string", "pattern": "(?=.*[0-9]).+"}, "id": {"pattern": "^[a-z]+$"}}});
        let facts = inspect(&schema).unwrap();
        assert_eq!(facts.backtracking, ["/properties/pw: (?=.*[0-9]).+"]);
        let names = json!({"patternProperties": {"^(?!x)": {}}});
        assert!(inspect(&names).unwrap_err().contains("patternProperties"));
    }

    #[test]
    fn the_verdict_swaps_only_backtracking_patterns() {
        let schema = json!({"properties": {"pw": {"pattern": "(?=.*[0-9]).+", "maxLength": 9}, "id": {"pattern": "^a"}}, "const": {"pattern": "(?=x)"}});
        let v = verdict(&schema);
        assert_eq!(v["properties"]["pw"][PATTERN], "(?=.*[0-9]).+");
        assert!(v["properties"]["pw"].get("pattern").is_none());
        assert_eq!(v["properties"]["id"]["pattern"], "^a");
        assert_eq!(v["const"]["pattern"], "(?=x)", "data is not a schema");
    }

    #[test]
    fn the_report_makes_every_multi_branch_applicator_opaque() {
        let schema = json!({
            "properties": {
                "a": {"anyOf": [{"type": "string"}, {"type": "null"}]},
                "b": {"allOf": [{"$ref": "#/$defs/X"}]},
                "c": {"allOf": [{"type": "object"}, {"required": ["x"]}], "oneOf": [{}, {}]},
                "d": {"patternProperties": {"^a": {}, "^b": {}}, "type": "object"},
            },
            "$defs": {"X": {"type": "string"}},
        });
        let r = report(&schema);
        assert_eq!(
            r["properties"]["a"][OPAQUE],
            json!({"kind": "anyOf", "at": "#/properties/a"})
        );
        assert_eq!(
            r["properties"]["b"]["allOf"][0]["$ref"], "#/$defs/X",
            "one branch stays"
        );
        let c = &r["properties"]["c"]["allOf"];
        assert_eq!(c.as_array().unwrap().len(), 2, "{c}");
        let whole = json!({"kind": "patternProperties", "at": "#/properties/d"});
        assert_eq!(r["properties"]["d"], one(OPAQUE, whole));
    }

    #[test]
    fn local_references_are_decoded() {
        assert_eq!(local_ref("#/$defs/a%20b").as_deref(), Some("/$defs/a b"));
        assert_eq!(local_ref("#").as_deref(), Some(""));
        assert_eq!(local_ref("#anchor"), None);
        assert_eq!(local_ref("other.json#/x"), None);
    }
}
