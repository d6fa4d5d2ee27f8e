//! Integration tests: the real binary, spoken to over real stdio (and HTTP) with real
//! clients. One test binary, one module per concern.

mod util;

mod access;
mod batch;
mod catalogue_api;
mod catalogue_check;
mod catalogue_extras;
mod catalogue_tools;
mod conformance;
mod demo;
mod execution_modes;
mod fetch_policy;
mod history;
mod http;
mod http_notifications;
mod index_bounds;
mod inspector;
mod interop;
mod js_fetch;
mod js_limits;
mod js_workers;
mod mcp_surface;
mod nyxilum;
mod nyxilum_repl;
mod oauth;
mod observability;
mod one_path;
mod operator;
mod pagination;
mod principals;
mod prompts;
mod rate_limits;
mod resources;
mod run_javascript;
mod sandbox;
mod sandbox_leaks;
mod search;
mod shell;
mod source_naming;
mod stdout_purity;
mod terminal;
mod tool_client;
mod upstream;
mod upstream_lifecycle;
mod validators;
