//! Traces across the hops of a call, received by the real OTLP/HTTP receiver of
//! `telemetry.rs`: the run of one tool call, each `fetch` and each inner call of code
//! mode as child spans, and with `TOOLGATE_TRACE_STEPS` its steps too (admission,
//! validation, the run, its wait for a place, the execution), the context
//! passed on to a snippet's `fetch` only where `TOOLGATE_FETCH_TRACE` allows, to a real
//! `toolgate catalogue serve` (which continues it) and to upstream MCP servers over stdio
//! (`_meta`) and HTTP (`_meta` and headers), and no argument or secret in any span.

use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::routing::get;
use serde_json::{Value, json};

use crate::hostile_upstreams::py_http;
use crate::telemetry::{PARENT, TRACE, receiver};
use crate::upstream::{py_server, servers_file};
use crate::util::{CatalogueServer, fixtures, raw_exchange};

/// The one span of `spans` that `is` picks (the test fails naming them all otherwise).
fn one<'a>(spans: &'a [Value], what: &str, is: impl Fn(&Value) -> bool) -> &'a Value {
    let found: Vec<&Value> = spans.iter().filter(|s| is(s)).collect();
    assert_eq!(found.len(), 1, "{what}: {found:#?}\namong {spans:#?}");
    found[0]
}

/// Whether `span` is named `name`, in the client's trace, with `parent` its parent span.
fn under(span: &Value, name: &str, parent: &Value) -> bool {
    span["name"] == name && span["trace_id"] == TRACE && span["parent_span_id"] == parent["span_id"]
}

/// A site on 127.0.0.1 that answers `ok` and keeps the `traceparent` of each request
/// (`None` for one without).
async fn site() -> (String, Arc<Mutex<Vec<Option<String>>>>) {
    let seen: Arc<Mutex<Vec<Option<String>>>> = Arc::default();
    async fn answer(State(seen): State<Arc<Mutex<Vec<Option<String>>>>>, headers: HeaderMap) -> &'static str {
        let traceparent = headers.get("traceparent").map(|v| v.to_str().unwrap().to_owned());
        seen.lock().unwrap().push(traceparent);
        "ok"
    }
    let app = Router::new().fallback(get(answer)).with_state(seen.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (base, seen)
}

fn traced_call(name: &str, arguments: Value) -> Value {
    let traceparent = format!("00-{TRACE}-{PARENT}-01");
    json!({"method": "tools/call", "params": {"name": name, "arguments": arguments, "_meta": {"traceparent": traceparent}}})
}

/// A snippet's run, traced: two fetches (to a site `TOOLGATE_FETCH_TRACE` names, and one
/// it does not) and one inner call, run with `env` added; its spans once the call's are
/// in, the span of the snippet's worker run (checked to be the call's, or under its
/// `execute` step with `steps`), and each fetch. What each site saw is checked here: the
/// context went to the named host only, from that fetch's span.
async fn snippet(steps: bool) -> (Vec<Value>, Value) {
    let mut receiver = receiver().await;
    let endpoint = format!("http://127.0.0.1:{}", receiver.port);
    let (traced, traced_seen) = site().await;
    let (plain, plain_seen) = site().await;
    let allowed = traced.trim_start_matches("http://").to_owned();
    let code = format!(
        r#"const a = await fetch("{traced}/x?token=SECRET-QUERY");
const b = await fetch("{plain}/y");
const c = await tools.base64_codec({{input: "SECRET-ARGUMENT", mode: "encode"}});
return [a.status, b.status, typeof c];"#
    );
    let mut env = vec![
        ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
        ("TOOLGATE_RUNTIMES", "js"),
        ("TOOLGATE_FETCH_ALLOW", "127.0.0.1"),
        ("TOOLGATE_FETCH_TRACE", allowed.as_str()),
    ];
    if steps {
        env.push(("TOOLGATE_TRACE_STEPS", "true"));
    }
    let (lines, stderr) = raw_exchange(&env, &[traced_call("run_javascript", json!({"code": code}))]).await;
    let answer = lines.iter().find(|l| l["id"] == 1).unwrap();
    assert_eq!(
        answer["result"]["structuredContent"]["result"],
        json!([200, 200, "object"]),
        "{answer:#}\n{stderr}"
    );
    // The call's span ends last: once it is in, all are.
    let spans = receiver
        .until(|got| got.iter().any(|s| s["name"] == "tools/call run_javascript"))
        .await;
    let call = one(&spans, "the call", |s| s["name"] == "tools/call run_javascript");
    assert_eq!(
        (&call["trace_id"], &call["parent_span_id"]),
        (&json!(TRACE), &json!(PARENT))
    );
    let js = one(&spans, "the worker's run", |s| {
        s["name"] == "javascript" && s["attributes"]["toolgate.job"] == "snippet"
    });
    assert_eq!(js["trace_id"], TRACE, "{js:#}");
    // Each fetch is a client span of the run, naming the host and port asked for only.
    let fetches: Vec<&Value> = spans.iter().filter(|s| under(s, "fetch GET", js)).collect();
    assert_eq!(fetches.len(), 2, "{spans:#?}");
    for fetch in &fetches {
        assert_eq!(fetch["kind"], 3, "a client span: {fetch:#}");
        let a = &fetch["attributes"];
        assert_eq!(a["http.request.method"], "GET", "{fetch:#}");
        assert_eq!(a["server.address"], "127.0.0.1", "{fetch:#}");
        assert_eq!(a["http.response.status_code"], 200, "{fetch:#}");
    }
    // The context went to the host the operator named, and only there.
    let port = |base: &str| json!(base.rsplit(':').next().unwrap().parse::<i64>().unwrap());
    let to_traced = fetches
        .iter()
        .find(|f| f["attributes"]["server.port"] == port(&traced))
        .unwrap();
    assert_eq!(
        *traced_seen.lock().unwrap(),
        vec![Some(format!(
            "00-{TRACE}-{}-01",
            to_traced["span_id"].as_str().unwrap()
        ))]
    );
    assert_eq!(
        *plain_seen.lock().unwrap(),
        vec![None],
        "TOOLGATE_FETCH_TRACE does not name it"
    );
    // The code's own call is a tool execution (GenAI's `execute_tool`) of the run.
    let inner = one(&spans, "the inner call", |s| under(s, "execute_tool base64-codec", js));
    assert_eq!(
        inner["attributes"]["gen_ai.operation.name"], "execute_tool",
        "{inner:#}"
    );
    assert_eq!(inner["attributes"]["gen_ai.tool.name"], "base64-codec", "{inner:#}");
    // Names and codes only: no argument, no query string, no result.
    let all = serde_json::to_string(&spans).unwrap();
    assert!(!all.contains("SECRET"), "{spans:#?}");
    let js = js.clone();
    (spans, js)
}

#[tokio::test]
async fn a_snippets_run_fetches_and_inner_calls_are_children_of_its_call() {
    let (spans, js) = snippet(false).await;
    let call = one(&spans, "the call", |s| s["name"] == "tools/call run_javascript");
    assert_eq!(
        js["parent_span_id"], call["span_id"],
        "the run is the call's child: {js:#}"
    );
    let inner = one(&spans, "the inner call", |s| s["name"] == "execute_tool base64-codec");
    let tool_js = one(&spans, "the tool's worker run", |s| under(s, "javascript", inner));
    assert_eq!(tool_js["attributes"]["toolgate.job"], "tool", "{tool_js:#}");
    // By default the steps are not spans (`TOOLGATE_TRACE_STEPS` adds them).
    let steps: Vec<&Value> = spans.iter().filter(|s| crate::telemetry::is_step(s)).collect();
    assert!(steps.is_empty(), "{steps:#?}");
}

#[tokio::test]
async fn with_trace_steps_each_step_of_a_call_is_a_child_span_too() {
    let (spans, js) = snippet(true).await;
    let call = one(&spans, "the call", |s| s["name"] == "tools/call run_javascript");
    one(&spans, "its admission", |s| under(s, "admit", call));
    let run = one(&spans, "its run", |s| under(s, "run", call));
    assert_eq!(run["attributes"]["tool"], "run_javascript", "{run:#}");
    one(&spans, "its validation", |s| under(s, "validate", run));
    let execute = one(&spans, "its execution", |s| {
        s["parent_span_id"] == run["span_id"] && s["name"].as_str().unwrap().starts_with("execute ")
    });
    assert_eq!(js["parent_span_id"], execute["span_id"], "{js:#}");
    let queue = one(&spans, "its wait for a place", |s| under(s, "queue", &js));
    assert_eq!(queue["attributes"]["toolgate.queue"], "javascript", "{queue:#}");
    // The inner call's steps are under its span: admitted, run, executed.
    let inner = one(&spans, "the inner call", |s| s["name"] == "execute_tool base64-codec");
    one(&spans, "its admission", |s| under(s, "admit", inner));
    let inner_run = one(&spans, "its run", |s| under(s, "run", inner));
    assert_eq!(inner_run["attributes"]["tool"], "base64-codec", "{inner_run:#}");
    let inner_execute = one(&spans, "its execution", |s| {
        s["parent_span_id"] == inner_run["span_id"] && s["name"] == "execute catalogue"
    });
    let tool_js = one(&spans, "the tool's worker run", |s| {
        under(s, "javascript", inner_execute)
    });
    assert_eq!(tool_js["attributes"]["toolgate.job"], "tool", "{tool_js:#}");
}

#[tokio::test]
async fn the_trace_continues_into_a_catalogue_api_which_serves_it_as_a_child() {
    let mut receiver = receiver().await;
    let endpoint = format!("http://127.0.0.1:{}", receiver.port);
    let exporting = |service: &'static str| {
        vec![
            ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.clone()),
            ("OTEL_SERVICE_NAME", service.to_owned()),
            ("OTEL_BSP_SCHEDULE_DELAY", "100".to_owned()),
        ]
    };
    let env = exporting("catalogue");
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let server = CatalogueServer::launch(&[fixtures().as_os_str()], &env).await;
    let mut env = exporting("gateway");
    env.push(("TOOLGATE_API_URL", server.host.clone()));
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let (lines, stderr) = raw_exchange(&env, &[traced_call("echo", json!({"message": "SECRET-MESSAGE"}))]).await;
    let answer = lines.iter().find(|l| l["id"] == 1).unwrap();
    assert_ne!(answer["result"]["isError"], true, "{answer:#}\n{stderr}");
    let route = "POST /api/tools/{slug}/run";
    let spans = receiver
        .until(|got| {
            got.iter()
                .any(|s| s["service"] == "catalogue" && s["name"] == route && s["trace_id"] == TRACE)
                && got.iter().any(|s| s["service"] == "gateway" && s["name"] == route)
        })
        .await;
    let client = one(&spans, "the gateway's request", |s| {
        s["service"] == "gateway" && s["name"] == route
    });
    assert_eq!(client["kind"], 3, "a client span: {client:#}");
    assert_eq!(client["trace_id"], TRACE, "{client:#}");
    for (key, value) in [
        ("http.request.method", json!("POST")),
        ("url.template", json!("/api/tools/{slug}/run")),
        ("server.address", json!("127.0.0.1")),
        ("http.response.status_code", json!(200)),
    ] {
        assert_eq!(client["attributes"][key], value, "{key}: {client:#}");
    }
    // The API continued the gateway's trace, its server span a child of the request.
    let served = one(&spans, "the API's answer", |s| {
        s["service"] == "catalogue" && s["name"] == route
    });
    assert_eq!(served["kind"], 2, "a server span: {served:#}");
    assert_eq!(served["trace_id"], TRACE, "{served:#}");
    assert_eq!(served["parent_span_id"], client["span_id"], "{served:#}");
    for (key, value) in [
        ("http.request.method", json!("POST")),
        ("http.route", json!("/api/tools/{slug}/run")),
        ("http.response.status_code", json!(200)),
    ] {
        assert_eq!(served["attributes"][key], value, "{key}: {served:#}");
    }
    let spans = receiver
        .until(|got| {
            got.iter()
                .any(|s| s["service"] == "catalogue" && s["name"] == "javascript")
        })
        .await;
    let ran = one(&spans, "the API's run", |s| {
        s["service"] == "catalogue" && s["name"] == "javascript"
    });
    assert_eq!(ran["trace_id"], TRACE, "{ran:#}");
    assert_eq!(ran["parent_span_id"], served["span_id"], "{ran:#}");
    assert!(!serde_json::to_string(&spans).unwrap().contains("SECRET"), "{spans:#?}");
}

#[tokio::test]
async fn upstream_servers_receive_the_context_in_meta_and_over_http_in_headers() {
    let mut receiver = receiver().await;
    let endpoint = format!("http://127.0.0.1:{}", receiver.port);
    let (stdio_state, http_state) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (_web, web) = py_http(http_state.path(), true).await;
    let dir = tempfile::tempdir().unwrap();
    let file = servers_file(dir.path(), json!({"py": py_server(stdio_state.path()), "web": web}));
    let env = [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
        ("TOOLGATE_UPSTREAMS", file.as_str()),
        ("TOOLGATE_ADVERTISE", "all"),
    ];
    let calls = [
        traced_call("py__trace_context", json!({})),
        traced_call("web__trace_context", json!({})),
    ];
    let (lines, stderr) = raw_exchange(&env, &calls).await;
    let spans = receiver
        .until(|got| {
            got.iter()
                .filter(|s| s["name"] == "tools/call trace_context" && s["kind"] == 3)
                .count()
                == 2
        })
        .await;
    for (id, server) in [(1, "py"), (2, "web")] {
        let answer = lines.iter().find(|l| l["id"] == id).unwrap();
        let got = &answer["result"]["structuredContent"];
        let client = one(&spans, server, |s| {
            s["name"] == "tools/call trace_context" && s["attributes"]["toolgate.upstream"] == server
        });
        assert_eq!(client["trace_id"], TRACE, "{client:#}");
        assert_eq!(client["attributes"]["gen_ai.tool.name"], "trace_context", "{client:#}");
        let sent = format!("00-{TRACE}-{}-01", client["span_id"].as_str().unwrap());
        assert_eq!(got["meta"], sent.as_str(), "{server}: {answer:#}\n{stderr}");
        let header = if server == "web" { json!(sent) } else { Value::Null };
        assert_eq!(got["header"], header, "{server}: {answer:#}");
    }
}

#[tokio::test]
async fn a_call_in_an_unsampled_trace_exports_nothing_and_passes_the_decision_on() {
    let mut receiver = receiver().await;
    let endpoint = format!("http://127.0.0.1:{}", receiver.port);
    let state = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = servers_file(dir.path(), json!({"py": py_server(state.path())}));
    let env = [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
        ("TOOLGATE_UPSTREAMS", file.as_str()),
        ("TOOLGATE_ADVERTISE", "all"),
    ];
    // The client's trace, not sampled (flags 00), then one that is, in a trace of its own.
    const SAMPLED: &str = "0af7651916cd43dd8448eb211c80319c";
    let call = |trace: &str, flags: &str| {
        let traceparent = format!("00-{trace}-{PARENT}-{flags}");
        json!({"method": "tools/call", "params": {"name": "py__trace_context", "arguments": {}, "_meta": {"traceparent": traceparent}}})
    };
    let (lines, stderr) = raw_exchange(&env, &[call(TRACE, "00"), call(SAMPLED, "01")]).await;
    // The upstream still hears of the trace, and that it is not sampled.
    let answer = lines.iter().find(|l| l["id"] == 1).unwrap();
    let meta = answer["result"]["structuredContent"]["meta"]
        .as_str()
        .unwrap_or_else(|| panic!("{answer:#}\n{stderr}"));
    let parts: Vec<&str> = meta.split('-').collect();
    assert_eq!((parts[0], parts[1], parts[3]), ("00", TRACE, "00"), "{meta}");
    assert_eq!(parts[2].len(), 16, "{meta}");
    // The sampled call's spans come last (the server exported them as it exited): by
    // then the unsampled one's would have arrived, and none did.
    let spans = receiver
        .until(|got| got.iter().any(|s| s["name"] == "tools/call py__trace_context"))
        .await;
    let call = one(&spans, "the sampled call", |s| {
        s["name"] == "tools/call py__trace_context"
    });
    assert_eq!(call["trace_id"], SAMPLED, "{call:#}");
    one(&spans, "its upstream call", |s| {
        s["name"] == "tools/call trace_context" && s["trace_id"] == SAMPLED
    });
    let unsampled: Vec<&Value> = spans.iter().filter(|s| s["trace_id"] == TRACE).collect();
    assert!(unsampled.is_empty(), "{unsampled:#?}");
}
