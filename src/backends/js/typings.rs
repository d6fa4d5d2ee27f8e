//! How code sees the tools it may call (code mode): each tool as a function of the
//! snippet's `tools` global, named by [`function_name`], declared in TypeScript from its
//! JSON Schemas — input and output types, doc comments from descriptions — so a model
//! writes a call it can check before running it.
//!
//! The converter covers what tool schemas use: `type` (and lists of types), `properties`
//! with `required`, `additionalProperties`, `items` and `prefixItems`, `enum`, `const`,
//! `anyOf`/`oneOf` (unions), `allOf` (intersections) and local `$ref`s (inlined; a
//! reference back into itself is `unknown`). Anything else is `unknown`, which is true,
//! never wrong. Hand-written: the TypeScript emitters of JSON Schema are npm packages,
//! and a declaration must come back within the meta-tool's answer, bounded: at most
//! [`TYPES_DEPTH`] levels and [`TYPES_NODES`] schema nodes per declaration, then
//! `unknown`.

use std::fmt::Write as _;

use serde_json::{Map, Value};

/// Nesting levels of a type written out before `unknown` stands for the rest.
pub const TYPES_DEPTH: usize = 8;

/// Schema nodes read for one declaration before `unknown` stands for the rest (a schema
/// whose references fan out cannot make a declaration grow without bound).
pub const TYPES_NODES: usize = 4_000;

/// A tool's name as a function of `tools`: its slug with `-` as `_`.
pub fn function_name(slug: &str) -> String {
    slug.replace('-', "_")
}

/// What a tool call resolves to in code.
#[derive(Debug, Clone, Copy)]
pub enum Resolves<'a> {
    /// The run envelope of a catalogue tool, its own output schema (if any) under
    /// `result`.
    Envelope(Option<&'a Value>),
    /// The tool's own structured body (a built-in's, an upstream's): this schema, or,
    /// when an upstream declares none, its content blocks.
    Own(Option<&'a Value>),
}

/// One tool, as its declaration is made.
#[derive(Debug, Clone, Copy)]
pub struct Typed<'a> {
    /// Its name (slug).
    pub slug: &'a str,
    /// What it does.
    pub description: &'a str,
    /// Its input schema.
    pub input: &'a Value,
    /// What a call resolves to.
    pub resolves: Resolves<'a>,
}

/// The declaration of `tools` itself: `call`, `search` and the interface each tool's
/// method joins (`interface Tools` merges across declarations).
pub const API: &str = r#"/** A tool's failure: `tools.<name>()` and `tools.call()` reject with it. */
interface ToolError extends Error {
  name: "ToolError";
  /** toolgate's error code: INVALID_PARAMS, FORBIDDEN, RATE_LIMITED, RESOURCE_LIMIT, TIMEOUT, ... */
  code: string;
  /** Whether the same call may succeed later. */
  retryable: boolean;
}

/** One search result, best first. */
interface ToolHit {
  slug: string;
  name: string;
  description: string;
  /** Relative to the other results (the ranker normalises over the catalogue). */
  score: number;
  matched: string[];
}

interface Tools {
  /** Calls any tool by slug (or `SERVER__TOOL`); resolves to its structured result. */
  call(slug: string, params?: Record<string, unknown>): Promise<unknown>;
  /** The tools that best match `query`, as the meta-tool's search ranks them. */
  search(query: string, options?: { limit?: number }): Promise<ToolHit[]>;
}

/** Every tool the caller may run, as a function: its slug with "-" as "_". */
declare const tools: Tools;
"#;

/// `typed`'s method of `interface Tools`: its doc comment and signature.
pub fn declaration(typed: &Typed<'_>) -> String {
    let function = function_name(typed.slug);
    let mut out = String::new();
    let mut doc = typed.description.trim().to_owned();
    if function != typed.slug {
        let _ = write!(
            doc,
            "\n\nThe tool \"{}\": tools.call(\"{}\", params) does the same.",
            typed.slug, typed.slug
        );
    }
    comment(&mut out, &doc, "  ");
    let input = match Writer::new(typed.input).ty(typed.input, 1) {
        unknown if unknown == "unknown" => "Record<string, unknown>".to_owned(),
        input => input,
    };
    // Params may be left out when nothing in them is required.
    let required = typed
        .input
        .get("required")
        .and_then(Value::as_array)
        .is_some_and(|r| !r.is_empty());
    let params = if required { "params" } else { "params?" };
    let output = match typed.resolves {
        Resolves::Envelope(result) => {
            let mut result_writer = result.map(Writer::new);
            let result = match (&mut result_writer, result) {
                (Some(w), Some(schema)) => w.ty(schema, 2),
                _ => "unknown".to_owned(),
            };
            format!(
                "{{\n    success: true;\n    /** What the tool returned. */\n    result: {result};\n    duration_ms: number;\n    run_id: string;\n    stdout?: string;\n    stderr?: string;\n    truncated?: boolean;\n  }}"
            )
        }
        Resolves::Own(Some(schema)) => Writer::new(schema).ty(schema, 1),
        Resolves::Own(None) => "{ content: unknown[] }".to_owned(),
    };
    let key = if is_identifier(&function) {
        function
    } else {
        quoted(&function)
    };
    let _ = writeln!(out, "  {key}({params}: {input}): Promise<{output}>;");
    out
}

/// Writes `text` as a JSDoc comment at `indent` (nothing when it is empty); `*/` in the
/// text cannot end the comment early.
fn comment(out: &mut String, text: &str, indent: &str) {
    let text = text.trim();
    if text.is_empty() {
        return;
    }
    let safe = text.replace("*/", "*\\/");
    let lines: Vec<&str> = safe.lines().collect();
    if lines.len() == 1 {
        let _ = writeln!(out, "{indent}/** {} */", lines[0]);
        return;
    }
    let _ = writeln!(out, "{indent}/**");
    for line in lines {
        let _ = writeln!(out, "{indent} * {}", line.trim_end());
    }
    let _ = writeln!(out, "{indent} */");
}

/// Whether `name` can be written as a property without quotes.
fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
}

/// `name` as a TypeScript string literal.
fn quoted(name: &str) -> String {
    Value::String(name.to_owned()).to_string()
}

/// One declaration's conversion: the root its `$ref`s resolve in, the references being
/// expanded (to stop at a cycle), and the nodes left.
struct Writer<'a> {
    root: &'a Value,
    expanding: Vec<&'a str>,
    nodes_left: usize,
}

impl<'a> Writer<'a> {
    fn new(root: &'a Value) -> Writer<'a> {
        Writer {
            root,
            expanding: Vec::new(),
            nodes_left: TYPES_NODES,
        }
    }

    /// The type `schema` describes, at nesting `depth` (indentation and the cap).
    fn ty(&mut self, schema: &'a Value, depth: usize) -> String {
        if depth > TYPES_DEPTH || self.nodes_left == 0 {
            return "unknown".to_owned();
        }
        self.nodes_left -= 1;
        let object = match schema {
            Value::Bool(true) => return "unknown".to_owned(),
            Value::Bool(false) => return "never".to_owned(),
            Value::Object(o) => o,
            _ => return "unknown".to_owned(),
        };
        if let Some(Value::String(reference)) = object.get("$ref") {
            return self.reference(reference, depth);
        }
        if let Some(value) = object.get("const") {
            return literal(value);
        }
        if let Some(Value::Array(values)) = object.get("enum") {
            let literals: Vec<String> = values.iter().map(literal).collect();
            return union(literals);
        }
        let mut parts = Vec::new();
        for key in ["anyOf", "oneOf"] {
            if let Some(Value::Array(branches)) = object.get(key)
                && branches.iter().any(is_typed)
            {
                let members: Vec<String> = branches.iter().map(|b| self.ty(b, depth)).collect();
                parts.push(union(members));
            }
        }
        if let Some(Value::Array(all)) = object.get("allOf") {
            parts.extend(all.iter().filter(|s| is_typed(s)).map(|s| self.ty(s, depth)));
        }
        if let Some(own) = self.own(object, depth) {
            parts.push(own);
        }
        match parts.len() {
            0 => "unknown".to_owned(),
            1 => parts.remove(0),
            _ => parts.iter().map(|p| format!("({p})")).collect::<Vec<_>>().join(" & "),
        }
    }

    /// The type the schema's own `type`/`properties`/`items` give, if they give one.
    fn own(&mut self, object: &'a Map<String, Value>, depth: usize) -> Option<String> {
        let types: Vec<&str> = match object.get("type") {
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
            _ if object.contains_key("properties") => vec!["object"],
            _ if object.contains_key("items") || object.contains_key("prefixItems") => vec!["array"],
            _ => return None,
        };
        let members: Vec<String> = types
            .into_iter()
            .map(|t| match t {
                "string" => "string".to_owned(),
                "number" | "integer" => "number".to_owned(),
                "boolean" => "boolean".to_owned(),
                "null" => "null".to_owned(),
                "array" => self.array(object, depth),
                "object" => self.object(object, depth),
                _ => "unknown".to_owned(),
            })
            .collect();
        Some(union(members))
    }

    fn array(&mut self, object: &'a Map<String, Value>, depth: usize) -> String {
        if let Some(Value::Array(prefix)) = object.get("prefixItems") {
            let items: Vec<String> = prefix.iter().map(|s| self.ty(s, depth + 1)).collect();
            return format!("[{}]", items.join(", "));
        }
        match object.get("items") {
            Some(items @ Value::Object(_)) => {
                let item = self.ty(items, depth + 1);
                if item.contains(' ') || item.contains('\n') {
                    format!("Array<{item}>")
                } else {
                    format!("{item}[]")
                }
            }
            _ => "unknown[]".to_owned(),
        }
    }

    fn object(&mut self, object: &'a Map<String, Value>, depth: usize) -> String {
        let properties = match object.get("properties") {
            Some(Value::Object(p)) if !p.is_empty() => p,
            _ => {
                return match object.get("additionalProperties") {
                    Some(Value::Bool(false)) => "Record<string, never>".to_owned(),
                    Some(extra @ Value::Object(_)) => format!("Record<string, {}>", self.ty(extra, depth + 1)),
                    _ => "Record<string, unknown>".to_owned(),
                };
            }
        };
        let required: Vec<&str> = match object.get("required") {
            Some(Value::Array(r)) => r.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        let indent = "  ".repeat(depth + 1);
        let mut out = "{\n".to_owned();
        for (name, schema) in properties {
            if let Some(Value::String(d)) = schema.get("description") {
                comment(&mut out, d, &indent);
            }
            let key = if is_identifier(name) {
                name.clone()
            } else {
                quoted(name)
            };
            let optional = if required.contains(&name.as_str()) { "" } else { "?" };
            let ty = self.ty(schema, depth + 1);
            let _ = writeln!(out, "{indent}{key}{optional}: {ty};");
        }
        // Declared properties must fit the index signature: `unknown` always does.
        if matches!(
            object.get("additionalProperties"),
            Some(Value::Object(_) | Value::Bool(true))
        ) {
            let _ = writeln!(out, "{indent}[key: string]: unknown;");
        }
        let _ = write!(out, "{}}}", "  ".repeat(depth));
        out
    }

    /// The type a local `$ref` names, inlined; a reference inside its own expansion, or
    /// one that leaves the document, is `unknown`.
    fn reference(&mut self, reference: &'a str, depth: usize) -> String {
        if self.expanding.contains(&reference) {
            return "unknown".to_owned();
        }
        let Some(pointer) = reference.strip_prefix('#') else {
            return "unknown".to_owned();
        };
        let Some(target) = self.root.pointer(pointer) else {
            return "unknown".to_owned();
        };
        self.expanding.push(reference);
        let ty = self.ty(target, depth);
        self.expanding.pop();
        ty
    }
}

/// Whether `schema` says anything about a value's type (a branch of `anyOf` holding only
/// `required`, as failures are admitted, does not).
fn is_typed(schema: &Value) -> bool {
    const TYPED: [&str; 10] = [
        "type",
        "properties",
        "items",
        "prefixItems",
        "enum",
        "const",
        "$ref",
        "anyOf",
        "oneOf",
        "allOf",
    ];
    match schema {
        Value::Object(o) => TYPED.iter().any(|k| o.contains_key(*k)),
        Value::Bool(_) => true,
        _ => false,
    }
}

/// A JSON value as a TypeScript literal type.
fn literal(value: &Value) -> String {
    match value {
        Value::String(_) | Value::Number(_) | Value::Bool(_) | Value::Null => value.to_string(),
        _ => "unknown".to_owned(),
    }
}

/// `members` as a union, each once, in order.
fn union(members: Vec<String>) -> String {
    let mut seen: Vec<String> = Vec::new();
    for m in members {
        if !seen.contains(&m) {
            seen.push(m);
        }
    }
    if seen.iter().any(|m| m == "unknown") {
        return "unknown".to_owned();
    }
    match seen.len() {
        0 => "never".to_owned(),
        1 => seen.remove(0),
        _ => seen.join(" | "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_schema_becomes_a_method_with_its_docs_optional_fields_unions_and_refs() {
        let input = json!({
            "type": "object",
            "properties": {
                "input": {"type": "string", "description": "The text."},
                "mode": {"enum": ["encode", "decode"]},
                "tree": {"$ref": "#/$defs/Node"},
                "weird key": {"type": ["integer", "null"]}
            },
            "required": ["input"],
            "additionalProperties": false,
            "$defs": {"Node": {"type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}}}
        });
        let output = json!({"type": "object", "properties": {"output": {"type": "string"}}, "required": ["output"]});
        let d = declaration(&Typed {
            slug: "base64-codec",
            description: "Encodes */ base64.",
            input: &input,
            resolves: Resolves::Envelope(Some(&output)),
        });
        assert!(d.contains("/**\n   * Encodes *\\/ base64."), "{d}");
        assert!(d.contains("tools.call(\"base64-codec\", params)"), "{d}");
        assert!(d.contains("  base64_codec(params: {"), "{d}");
        assert!(d.contains("/** The text. */\n    input: string;"), "{d}");
        assert!(d.contains("mode?: \"encode\" | \"decode\";"), "{d}");
        assert!(
            d.contains("children?: unknown[];"),
            "a reference into itself is unknown: {d}"
        );
        assert!(d.contains("\"weird key\"?: number | null;"), "{d}");
        assert!(d.contains("result: {\n      output: string;\n    };"), "{d}");
        assert!(d.trim_end().ends_with("}>;"), "{d}");
    }

    #[test]
    fn failure_branches_and_fan_out_stay_bounded() {
        // Failures admitted as constraint-only branches add nothing to the type.
        let admitted = json!({"type": "object", "properties": {"ok": {"type": "boolean"}}, "anyOf": [{"required": ["ok"]}, {"required": ["error"]}]});
        let d = declaration(&Typed {
            slug: "flat",
            description: "",
            input: &json!({}),
            resolves: Resolves::Own(Some(&admitted)),
        });
        assert!(
            d.contains("flat(params?: Record<string, unknown>): Promise<{\n    ok?: boolean;\n  }>;"),
            "{d}"
        );
        // Each level references the next twice: without the node budget, 2^depth.
        let mut defs = serde_json::Map::new();
        for i in 0..40 {
            defs.insert(
                format!("N{i}"),
                json!({"type": "object", "properties": {"a": {"$ref": format!("#/$defs/N{}", i + 1)}, "b": {"$ref": format!("#/$defs/N{}", i + 1)}}}),
            );
        }
        let wide = json!({"$ref": "#/$defs/N0", "$defs": defs});
        let d = declaration(&Typed {
            slug: "wide",
            description: "",
            input: &wide,
            resolves: Resolves::Own(None),
        });
        assert!(d.len() < 200_000, "{} characters", d.len());
        assert!(d.contains("Promise<{ content: unknown[] }>"), "{d}");
    }
}
