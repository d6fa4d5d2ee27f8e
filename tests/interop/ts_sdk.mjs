#!/usr/bin/env node
// Interop test: drive toolgate over stdio with the official MCP TypeScript SDK client.
//
// Usage: node tests/interop/ts_sdk.mjs NODE_MODULES TOOLGATE_BINARY NX_STANDIN
//
// NODE_MODULES is the folder scripts/test installs tests/interop/package-lock.json into
// (target/interop/node/node_modules); the SDK is loaded from there by path, since this
// script lives outside it. The server runs with TOOLGATE_RUNTIMES=js,nyxilum over the
// stand-in NyxilumNode and the embedded catalogue, in this process's working folder.
//
// The SDK's Client.callTool checks structuredContent against the tool's advertised
// outputSchema, even when isError is true, and throws when it does not match. So every
// tool family is called directly with good input and with bad input, and each call must
// come back as a result (never a throw) with the expected isError and structuredContent.code.
//
// Every check runs, whatever the others did: one "ok: ..." line per check passed, one
// "FAIL: ..." line (with what came back) per check failed. Exits 0 only when every check
// passed, 1 when one failed, 2 on a usage or setup problem. A global timeout bounds the run.

import { check, deadline, expect, finish, sdk as load, show } from "./harness.mjs";

const GLOBAL_TIMEOUT_MS = 120_000;
const REQUEST_TIMEOUT_MS = 30_000;

const [nodeModules, binary, standin] = process.argv.slice(2);
if (!nodeModules || !binary || !standin) {
  console.error("usage: node ts_sdk.mjs NODE_MODULES TOOLGATE_BINARY NX_STANDIN");
  process.exit(2);
}

const { Client } = await load(nodeModules, "client/index.js");
const { StdioClientTransport } = await load(nodeModules, "client/stdio.js");

const timer = deadline(GLOBAL_TIMEOUT_MS);

const transport = new StdioClientTransport({
  command: binary,
  args: [],
  env: { TOOLGATE_RUNTIMES: "js,nyxilum", NX_NODE_PATH: standin, TOOLGATE_CATALOGUE: "embedded", TOOLGATE_ADVERTISE: "all" },
  cwd: process.cwd(),
  stderr: "inherit",
});
const client = new Client({ name: "toolgate-ts-sdk-interop", version: "1.0.0" });
await client.connect(transport, { timeout: REQUEST_TIMEOUT_MS });
const opts = { timeout: REQUEST_TIMEOUT_MS };

/**
 * tools/call through the SDK. A throw here means the SDK rejected the answer (a
 * structuredContent that breaks the advertised outputSchema) or the server answered a
 * protocol error: either way the check fails with the SDK's message.
 */
async function call(name, args) {
  try {
    return await client.callTool({ name, arguments: args }, undefined, opts);
  } catch (e) {
    throw new Error(`client.callTool threw (the SDK did not accept the answer): ${e.message}`);
  }
}

/** Asserts a successful result and returns its structuredContent. */
function success(r) {
  const s = r.structuredContent;
  expect(r.isError !== true, `expected success, got isError true: ${show(r)}`);
  expect(s && typeof s === "object", `expected structuredContent, got ${show(r)}`);
  expect(s.success === true, `expected structuredContent.success true, got ${show(s)}`);
  return s;
}

/** Asserts a failure with `code` in the shared failure body, and returns its structuredContent. */
function failure(r, code) {
  const s = r.structuredContent;
  expect(r.isError === true, `expected isError true, got ${show(r)}`);
  expect(s && typeof s === "object", `expected structuredContent, got ${show(r)}`);
  expect(s.success === false, `expected structuredContent.success false, got ${show(s)}`);
  expect(s.code === code, `expected structuredContent.code ${code}, got ${show(s)}`);
  expect(typeof s.error === "string" && s.error !== "", `expected a non-empty error message, got ${show(s)}`);
  expect(typeof s.retryable === "boolean", `expected a boolean retryable, got ${show(s)}`);
  const text = (r.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("\n");
  expect(text !== "", `expected a text block too, got ${show(r)}`);
  return s;
}

/** Asserts the SDK holds a validator for `name`, so its answers really are checked. */
function validated(name) {
  expect(client.getToolOutputValidator(name), `the SDK has no outputSchema validator for ${name}`);
}

/** A failure check: `args` to `name` must come back as `code`, accepted by the SDK. */
async function failsWith(what, name, args, code, more) {
  await check(`${what}: ${code}`, async () => {
    const s = failure(await call(name, args), code);
    if (more) more(s);
    return "accepted by the SDK";
  });
}

try {
  // initialize
  await check("initialize", async () => {
    const info = client.getServerVersion();
    const caps = client.getServerCapabilities();
    expect(info?.name === "toolgate", `serverInfo ${show(info)}`);
    expect(caps?.tools && caps?.resources && caps?.prompts, `capabilities ${show(caps)}`);
    return `server ${info.name} ${info.version}, tools/resources/prompts declared`;
  });

  // tools/list: every page, then the SDK caches the validators of them all.
  const tools = [];
  await check("tools/list", async () => {
    let cursor;
    for (let pages = 1; ; pages += 1) {
      expect(pages <= 100, "tools/list pagination did not end within 100 pages");
      const page = await client.listTools(cursor ? { cursor } : {}, opts);
      tools.push(...page.tools);
      cursor = page.nextCursor;
      if (!cursor) break;
    }
    // listTools caches only the page it fetched; cache the whole list when there were several.
    client.cacheToolMetadata(tools);
    const names = tools.map((t) => t.name);
    expect(names[0] === "toolgate", `meta-tool first, got ${names.slice(0, 3)}`);
    for (const want of [
      "env-validator", "jwt-decoder", "run_javascript", "run_typescript",
      "nyxilum_run", "nyxilum_repl_start", "nyxilum_repl_eval", "nyxilum_repl_stop",
    ]) {
      expect(names.includes(want), `${want} not listed: ${names.join(", ")}`);
    }
    for (const name of ["env-validator", "jwt-decoder", "run_javascript", "run_typescript", "nyxilum_run", "nyxilum_repl_eval"]) {
      validated(name);
    }
    return `${tools.length} tools, meta-tool first; every tool called below advertises an outputSchema`;
  });

  // A catalogue tool, called directly.
  await check("env-validator with valid input: success", async () => {
    const s = success(await call("env-validator", { env_content: "DEBUG=true\nPORT=8080" }));
    expect(s.result?.valid === true, `result.valid true, got ${show(s)}`);
    expect(typeof s.run_id === "string", `run_id, got ${show(s)}`);
    return "result.valid true, accepted by the SDK";
  });
  await failsWith("env-validator without env_content (schema violation)", "env-validator", {}, "INVALID_PARAMS",
    (s) => expect(s.error.includes("env_content"), `message names env_content: ${s.error}`));
  await failsWith("env-validator with env_content 42 (wrong type)", "env-validator", { env_content: 42 }, "INVALID_PARAMS");
  await failsWith("jwt-decoder with a malformed token (fails at run time)", "jwt-decoder", { token: "not-a-jwt" }, "EXECUTION_ERROR");

  // The meta-tool.
  await check("meta-tool search: success", async () => {
    const r = await call("toolgate", { command: "search", query: "validate env file" });
    expect(r.isError !== true, `expected success, got ${show(r)}`);
    expect(JSON.stringify(r.structuredContent ?? r.content).includes("env-validator"), `finds env-validator: ${show(r)}`);
    return "finds env-validator";
  });
  await failsWith("meta-tool unknown command", "toolgate", { command: "frobnicate" }, "UNKNOWN_COMMAND");
  await failsWith("meta-tool run of a misspelt slug", "toolgate", { command: "run", slug: "env-validatr", params: {} }, "TOOL_NOT_FOUND");
  await failsWith("meta-tool run with params breaking the schema", "toolgate", { command: "run", slug: "env-validator", params: {} }, "INVALID_PARAMS");
  await check("meta-tool run of run_javascript: success", async () => {
    const r = await call("toolgate", { command: "run", slug: "run_javascript", params: { code: "return 1" } });
    const s = success(r);
    expect(JSON.stringify(s).includes("1"), `the result 1: ${show(s)}`);
    return "the meta-tool reaches a runtime tool";
  });

  // run_javascript and run_typescript.
  await check("run_javascript with valid code: success", async () => {
    const s = success(await call("run_javascript", { code: "console.log('hi'); return 1 + 1" }));
    expect(s.result === 2 && s.stdout === "hi\n" && s.timed_out === false, `result 2, stdout hi: ${show(s)}`);
    return "result 2, stdout \"hi\\n\"";
  });
  await failsWith("run_javascript without code (schema violation)", "run_javascript", {}, "INVALID_PARAMS");
  await failsWith("run_javascript that throws", "run_javascript", { code: "console.log('before'); throw new Error('boom')" },
    "EXECUTION_ERROR", (s) => expect(s.error.includes("boom") && s.stdout === "before\n", `error names boom, stdout kept: ${show(s)}`));
  await check("run_typescript with valid code: success", async () => {
    const s = success(await call("run_typescript", { code: "const x: number = 41; return x + 1;" }));
    expect(s.result === 42, `result 42: ${show(s)}`);
    return "result 42";
  });
  await failsWith("run_typescript with code 42 (wrong type)", "run_typescript", { code: 42 }, "INVALID_PARAMS");
  await failsWith("run_typescript that throws", "run_typescript", { code: "const n: number = 1; throw new Error('typed boom ' + n);" }, "EXECUTION_ERROR");

  // nyxilum_run over the stand-in.
  await check("nyxilum_run with valid code: success", async () => {
    const s = success(await call("nyxilum_run", { code: 'func main() { print("hi") }' }));
    expect(s.exitCode === 0 && s.stdout === "hi\n", `exitCode 0, stdout hi: ${show(s)}`);
    return "exitCode 0, stdout \"hi\\n\"";
  });
  await failsWith("nyxilum_run without code (schema violation)", "nyxilum_run", {}, "INVALID_PARAMS");
  await failsWith("nyxilum_run that throws", "nyxilum_run", { code: 'throw "boom"' }, "EXECUTION_ERROR",
    (s) => expect(s.exitCode === 1, `exitCode 1: ${show(s)}`));

  // A nyxilum REPL session.
  let session;
  await check("nyxilum_repl_start: success", async () => {
    const s = success(await call("nyxilum_repl_start", {}));
    session = s.sessionId;
    expect(typeof session === "string", `a sessionId: ${show(s)}`);
    return "a session";
  });
  await check("nyxilum_repl_eval in that session: success", async () => {
    const s = success(await call("nyxilum_repl_eval", { session_id: session ?? "none", code: "print(40 + 2)" }));
    expect(s.output === "42\n", `output 42: ${show(s)}`);
    return "output \"42\\n\"";
  });
  await failsWith("nyxilum_repl_eval without session_id (schema violation)", "nyxilum_repl_eval", { code: "1" }, "INVALID_PARAMS");
  await failsWith("nyxilum_repl_eval in an unknown session", "nyxilum_repl_eval", { session_id: "no-such-session", code: "1" }, "SESSION_NOT_FOUND");
  await check("nyxilum_repl_stop: success", async () => {
    success(await call("nyxilum_repl_stop", { session_id: session ?? "none" }));
    return "session stopped";
  });

  // Resources and prompts.
  await check("resources/read toolgate://guide", async () => {
    const listed = await client.listResources({}, opts);
    expect(listed.resources.some((r) => r.uri === "toolgate://guide"), `listed: ${show(listed.resources.map((r) => r.uri))}`);
    const read = await client.readResource({ uri: "toolgate://guide" }, opts);
    const text = read.contents[0]?.text ?? "";
    expect(text.startsWith("# "), `markdown text: ${show(read)}`);
    return `listed and read (${text.length} characters)`;
  });
  await check("prompts/get find-tool", async () => {
    const listed = await client.listPrompts({}, opts);
    expect(listed.prompts.some((p) => p.name === "find-tool"), `listed: ${show(listed.prompts.map((p) => p.name))}`);
    const got = await client.getPrompt({ name: "find-tool", arguments: { goal: "validate an env file" } }, opts);
    const text = got.messages.map((m) => m.content?.text ?? "").join("\n");
    expect(text.includes("validate an env file") && text.includes("env-validator"), `names the goal and env-validator: ${show(got)}`);
    return "names the goal and env-validator";
  });
} finally {
  await client.close();
  clearTimeout(timer);
}

finish();
