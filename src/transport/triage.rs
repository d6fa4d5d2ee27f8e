//! What one line read from stdin is: a message for rmcp, or a request toolgate answers
//! itself because rmcp would answer it wrongly or not at all.
//!
//! rmcp 3.11 decodes each line into its typed message union. Three outcomes of that are
//! wrong for a client, and this module sorts them out before rmcp sees the line:
//!
//! - a request whose envelope or params do not decode is answered `−32600 Invalid
//!   request` *without* its `id`, so the client cannot tell which call failed; here it is
//!   answered with its `id` whenever the `id` is readable (an integer or a string), and
//!   with `"id": null` otherwise, as JSON-RPC 2.0 asks;
//! - a request for a method rmcp types (`tools/call`, `prompts/get`, ...) whose params do
//!   not fit that type falls through to rmcp's catch-all custom request and is answered
//!   `−32601 Method not found`; here it is `−32602 Invalid params` naming the problem;
//! - a line over the cap is dropped with a log line and the client waits forever; here
//!   it is answered `−32600` with the `id` when either end of the line shows it (see
//!   [`overlong_reply`]).
//!
//! What rmcp does well is kept: a line that is not JSON at all is ignored (answering
//! garbage risks an error storm with a peer that echoes it), a broken notification or
//! response gets no answer (JSON-RPC never answers those), and a non-standard
//! notification is ignored.

use rmcp::RoleServer;
use rmcp::service::RxJsonRpcMessage;
use serde_json::{Value, json};

/// JSON-RPC 2.0 "Invalid Request".
pub(super) const INVALID_REQUEST: i64 = -32600;

/// JSON-RPC 2.0 "Parse error".
pub(super) const PARSE_ERROR: i64 = -32700;

/// JSON-RPC 2.0 "Invalid params".
pub(super) const INVALID_PARAMS: i64 = -32602;

/// What to do with one line.
#[derive(Debug)]
pub(super) enum Triage {
    /// Hand it to rmcp.
    Message(Box<RxJsonRpcMessage<RoleServer>>),
    /// Write this JSON-RPC error response and do not hand the line on.
    Reply(Value),
    /// Drop it; the text says why, for the debug log.
    Ignore(String),
}

/// Sorts one line (without its newline) as the module says. A message rmcp decodes is
/// parsed once, as rmcp would; only a line it cannot use is parsed again as plain JSON.
pub(super) fn triage(line: &[u8]) -> Triage {
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    // Parsing multiplies a message (5.5 million `{}` held 1.25 GB): its shape is
    // checked first, from its bytes.
    if let Err(exceeded) = crate::message::scan(line) {
        return Triage::Reply(error(
            id_at_ends(line).unwrap_or(Value::Null),
            INVALID_REQUEST,
            &format!("Invalid request: {exceeded}"),
        ));
    }
    match serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(line) {
        Ok(rmcp::model::JsonRpcMessage::Request(request)) => {
            if let rmcp::model::ClientRequest::CustomRequest(custom) = &request.request
                && let Ok(value) = serde_json::from_slice::<Value>(line)
                && let Some(why) = typed_params_error(&custom.method, &value)
            {
                return Triage::Reply(error(
                    value.get("id").cloned().unwrap_or(Value::Null),
                    INVALID_PARAMS,
                    &format!("Invalid params for {}: {why}", custom.method),
                ));
            }
            Triage::Message(Box::new(rmcp::model::JsonRpcMessage::Request(request)))
        }
        Ok(message) => Triage::Message(Box::new(message)),
        // A request whose text breaks JSON inside (a lone surrogate `\ud800`, a bad
        // escape) but whose id is readable is answered; garbage is not.
        Err(e) if e.is_syntax() || e.is_eof() => match id_at_ends(line) {
            Some(id) => Triage::Reply(error(id, PARSE_ERROR, &format!("Parse error: {e}"))),
            None => Triage::Ignore(format!("not JSON: {e}")),
        },
        Err(e) => match serde_json::from_slice::<Value>(line) {
            Ok(value) => undecodable(&value, &e.to_string()),
            Err(e) => Triage::Ignore(format!("not JSON: {e}")),
        },
    }
}

/// A JSON value rmcp cannot decode: a request is answered, anything else is dropped.
fn undecodable(value: &Value, why: &str) -> Triage {
    let Some(object) = value.as_object() else {
        return Triage::Reply(error(
            Value::Null,
            INVALID_REQUEST,
            "Invalid request: a message must be one JSON object (batches are not supported)",
        ));
    };
    if !object.contains_key("method") && (object.contains_key("result") || object.contains_key("error")) {
        return Triage::Ignore(format!("an undecodable response: {why}"));
    }
    let Some(id) = object.get("id") else {
        return Triage::Ignore(format!("an undecodable notification: {why}"));
    };
    let id = readable_id(id).unwrap_or(Value::Null);
    let problem = if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        "\"jsonrpc\" must be \"2.0\"".to_owned()
    } else if id.is_null() {
        "\"id\" must be an integer or a string".to_owned()
    } else if !object.get("method").is_some_and(Value::is_string) {
        "\"method\" must be a string".to_owned()
    } else if !object.get("params").is_none_or(Value::is_object) {
        "\"params\" must be an object".to_owned()
    } else {
        let method = object.get("method").and_then(Value::as_str).unwrap_or_default();
        let detail = typed_params_error(method, value).unwrap_or_else(|| why.to_owned());
        return Triage::Reply(error(
            id,
            INVALID_PARAMS,
            &format!("Invalid params for {method}: {detail}"),
        ));
    };
    Triage::Reply(error(id, INVALID_REQUEST, &format!("Invalid request: {problem}")))
}

/// The `id` as the answer must repeat it, if it is one rmcp could have used.
fn readable_id(id: &Value) -> Option<Value> {
    match id {
        Value::String(_) => Some(id.clone()),
        Value::Number(n) if n.is_i64() => Some(id.clone()),
        _ => None,
    }
}

/// A JSON-RPC error response.
pub(super) fn error(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// Why `value` (a whole request) does not decode as the typed request of `method`, or
/// `None` when rmcp has no typed request of that name (or it decodes after all). The
/// deprecated methods are listed too: rmcp still types them.
#[allow(deprecated)]
fn typed_params_error(method: &str, value: &Value) -> Option<String> {
    use rmcp::model as m;
    fn check<T: serde::de::DeserializeOwned>(value: &Value) -> Option<String> {
        let request = json!({"method": value.get("method"), "params": value.get("params")});
        let request = match request {
            Value::Object(mut o) => {
                o.retain(|_, v| !v.is_null());
                Value::Object(o)
            }
            other => other,
        };
        serde_json::from_value::<T>(request).err().map(|e| e.to_string())
    }
    match method {
        "ping" => check::<m::PingRequest>(value),
        "initialize" => check::<m::InitializeRequest>(value),
        "server/discover" => check::<m::DiscoverRequest>(value),
        "completion/complete" => check::<m::CompleteRequest>(value),
        "logging/setLevel" => check::<m::SetLevelRequest>(value),
        "prompts/get" => check::<m::GetPromptRequest>(value),
        "prompts/list" => check::<m::ListPromptsRequest>(value),
        "resources/list" => check::<m::ListResourcesRequest>(value),
        "resources/templates/list" => check::<m::ListResourceTemplatesRequest>(value),
        "resources/read" => check::<m::ReadResourceRequest>(value),
        "resources/subscribe" => check::<m::SubscribeRequest>(value),
        "resources/unsubscribe" => check::<m::UnsubscribeRequest>(value),
        "tools/call" => check::<m::CallToolRequest>(value),
        "tools/list" => check::<m::ListToolsRequest>(value),
        _ => None,
    }
}

/// What is kept of a line longer than the cap (`crate::message::LineEnds`).
pub(super) use crate::message::LineEnds as Overlong;

/// The line's top-level `id`, when its first or last bytes show it.
fn overlong_id(over: &Overlong) -> Option<Value> {
    leading_id(over.head()).or_else(|| trailing_id(over.tail()))
}

/// The answer to a line longer than `cap` bytes: `−32600` naming the cap, with the
/// line's `id` when either end of it shows the id, else `null`.
pub(super) fn overlong_reply(over: &Overlong, cap: usize) -> Value {
    error(
        overlong_id(over).unwrap_or(Value::Null),
        INVALID_REQUEST,
        &format!(
            "Invalid request: the message was {} bytes, over the limit of {cap} bytes for one line on stdin; it was discarded unread",
            over.len
        ),
    )
}

/// The line's top-level `id`, when its first or last bytes show it.
fn id_at_ends(line: &[u8]) -> Option<Value> {
    let keep = crate::limits::STDIO_ID_SEARCH_BYTES.min(line.len());
    leading_id(&line[..keep]).or_else(|| trailing_id(&line[line.len() - keep..]))
}

/// The `id` among the members that open the object, read with a real JSON parser until
/// the text runs out (the cut falls inside a long value). The parser's own verdict is
/// not used: it fails on the cut text even after the `id` was read.
fn leading_id(head: &[u8]) -> Option<Value> {
    use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};
    struct FirstId<'a>(&'a mut Option<Value>);
    impl<'de> Visitor<'de> for FirstId<'_> {
        type Value = ();
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                if key == "id" {
                    *self.0 = readable_id(&map.next_value::<Value>()?);
                    return Ok(());
                }
                map.next_value::<IgnoredAny>()?;
            }
            Ok(())
        }
    }
    let mut found = None;
    let _ = serde_json::Deserializer::from_slice(head).deserialize_map(FirstId(&mut found));
    found
}

/// The `id` when it is the object's last member, if it is one a reply can carry.
fn trailing_id(tail: &[u8]) -> Option<Value> {
    crate::message::trailing_id(tail).as_ref().and_then(readable_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(line: &str) -> Value {
        match triage(line.as_bytes()) {
            Triage::Reply(v) => v,
            other => panic!("{line}: expected a reply, got {other:?}"),
        }
    }

    #[test]
    fn a_wrongly_typed_tool_name_is_invalid_params_with_its_id() {
        let r = reply(r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":5}}"#);
        assert_eq!(r["id"], 7);
        assert_eq!(r["error"]["code"], INVALID_PARAMS);
        let message = r["error"]["message"].as_str().unwrap();
        assert!(message.starts_with("Invalid params for tools/call: "), "{message}");
        assert!(message.contains("integer"), "{message}");
    }

    #[test]
    fn an_invalid_request_keeps_a_readable_id() {
        for (line, id, code) in [
            (r#"{"jsonrpc":"2.0","id":8,"method":5}"#, json!(8), INVALID_REQUEST),
            (
                r#"{"jsonrpc":"1.0","id":"a","method":"ping"}"#,
                json!("a"),
                INVALID_REQUEST,
            ),
            (
                r#"{"jsonrpc":"2.0","id":10,"method":"tools/list","params":"x"}"#,
                json!(10),
                INVALID_REQUEST,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}"#,
                Value::Null,
                INVALID_REQUEST,
            ),
            (
                r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#,
                Value::Null,
                INVALID_REQUEST,
            ),
        ] {
            let r = reply(line);
            assert_eq!(r["id"], id, "{line}: {r}");
            assert!(r.as_object().unwrap().contains_key("id"), "{line}: {r}");
            assert_eq!(r["error"]["code"], code, "{line}: {r}");
        }
    }

    #[test]
    fn good_messages_pass_and_garbage_notifications_and_responses_get_no_answer() {
        for line in [
            r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x","arguments":{}}}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"vendor/thing","params":{"a":1}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        ] {
            assert!(matches!(triage(line.as_bytes()), Triage::Message(_)), "{line}");
        }
        for line in [
            "not json",
            r#"{"jsonrpc":"2.0","method":"notifications/progress","params":5}"#,
            r#"{"jsonrpc":"2.0","id":4,"result":5,"error":1}"#,
        ] {
            assert!(matches!(triage(line.as_bytes()), Triage::Ignore(_)), "{line}");
        }
    }

    #[test]
    fn a_request_that_breaks_json_inside_is_answered_with_its_id() {
        for line in [
            r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"x","arguments":{"s":"\ud800"}}}"#,
            r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"x","arguments":{"s":"\ud800"}},"id":5}"#,
            r#"{"jsonrpc":"2.0","id":5,"method":"ping","params":{"s":"\q"}}"#,
        ] {
            let r = reply(line);
            assert_eq!(r["id"], 5, "{line}: {r}");
            assert_eq!(r["error"]["code"], PARSE_ERROR, "{line}: {r}");
        }
    }

    #[test]
    fn a_message_too_deep_or_too_full_is_refused_unparsed_with_its_id() {
        let deep = format!(
            r#"{{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{{"name":"x","arguments":{{"a":{}1{}}}}}}}"#,
            "[".repeat(100),
            "]".repeat(100)
        );
        let r = reply(&deep);
        assert_eq!(r["id"], 6);
        assert!(r["error"]["message"].as_str().unwrap().contains("deeper than"), "{r}");
        let full = format!(
            r#"{{"jsonrpc":"2.0","id":7,"method":"ping","params":{{"a":[{}{{}}]}}}}"#,
            "{},".repeat(200_000)
        );
        let r = reply(&full);
        assert_eq!(r["id"], 7);
        assert!(r["error"]["message"].as_str().unwrap().contains("more than"), "{r}");
    }

    fn overlong(line: &str, keep: usize) -> Value {
        let mut over = Overlong::new(keep);
        for chunk in line.as_bytes().chunks(7) {
            over.push(chunk);
        }
        assert_eq!(over.len, line.len() as u64);
        overlong_reply(&over, 10)
    }

    #[test]
    fn an_overlong_line_is_answered_with_the_id_either_end_shows() {
        let big = "a".repeat(500);
        let first = format!(r#"{{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{{"s":"{big}"}}}}"#);
        let last = format!(r#"{{"method":"tools/call","params":{{"s":"{big}","id":9}},"jsonrpc":"2.0","id":"q"}}"#);
        let nested_last = format!(r#"{{"method":"tools/call","params":{{"s":"{big}","id":9}}}}"#);
        assert_eq!(overlong(&first, 64)["id"], 3);
        assert_eq!(overlong(&last, 64)["id"], "q");
        assert_eq!(
            overlong(&nested_last, 64)["id"],
            Value::Null,
            "a nested id is not the request's"
        );
        let r = overlong(&first, 64);
        assert_eq!(r["error"]["code"], INVALID_REQUEST);
        assert!(
            r["error"]["message"]
                .as_str()
                .unwrap()
                .contains("over the limit of 10 bytes")
        );
    }
}
