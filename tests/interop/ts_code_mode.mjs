#!/usr/bin/env node
// Interop test: code mode driven by the official MCP TypeScript SDK over Streamable HTTP.
//
// Usage: node tests/interop/ts_code_mode.mjs NODE_MODULES URL FULL_KEY CODER_KEY LIMITED_URL
//
// URL serves the embedded catalogue, run_javascript and the upstream `py`; FULL_KEY holds
// every scope, CODER_KEY runtimes and search but not run; LIMITED_URL admits 4 anonymous
// runs a minute. The same checks as python_code_mode.py: one snippet searches, calls three
// catalogue tools in sequence and two in parallel, an upstream tool, catches a validation
// error and returns a summary; history shows its children; scopes and rates hold inside
// code. The TS SDK also checks each structuredContent against the tool's outputSchema.
// One "ok: ..." line per check passed, "FAIL: ..." per check failed; exit 0 only when all
// passed, 1 otherwise, 2 on a usage or setup problem. A global timeout bounds the run.

import { readFileSync } from "node:fs";

import { check, deadline, expect, finish, sdk as load, show } from "./harness.mjs";

const GLOBAL_TIMEOUT_MS = 120_000;

const [nodeModules, url, fullKey, coderKey, limitedUrl] = process.argv.slice(2);
if (!limitedUrl) {
  console.error("usage: node ts_code_mode.mjs NODE_MODULES URL FULL_KEY CODER_KEY LIMITED_URL");
  process.exit(2);
}

const { Client } = await load(nodeModules, "client/index.js");
const { StreamableHTTPClientTransport } = await load(nodeModules, "client/streamableHttp.js");

const timer = deadline(GLOBAL_TIMEOUT_MS);

// The snippet python_code_mode.py runs too.
const SNIPPET = readFileSync(new URL("./code_mode_snippet.js", import.meta.url), "utf8");

async function open(at, key, who) {
  const requestInit = key ? { headers: { authorization: `Bearer ${key}` } } : undefined;
  const transport = new StreamableHTTPClientTransport(new URL(at), { requestInit });
  const client = new Client({ name: `ts-code-${who}`, version: "1.0.0" });
  await client.connect(transport);
  // The SDK checks a result against the tool's outputSchema only once it has listed it.
  await client.listTools();
  return client;
}

const run = async (client, code) => (await client.callTool({ name: "run_javascript", arguments: { code } })).structuredContent;

try {
  const agent = await open(url, fullKey, "agent");
  let parent;
  await check("the snippet searches, calls five catalogue tools and an upstream, catches a validation error", async () => {
    const ran = await run(agent, SNIPPET);
    expect(ran.success === true, show(ran));
    const r = ran.result;
    expect(r.found === "base64-codec", show(r));
    expect(JSON.stringify(r.steps) === JSON.stringify([true, true, true, true, true]), show(r));
    expect(r.loud === "FROM CODE", show(r));
    expect(r.invalid && r.invalid.code === "INVALID_PARAMS" && r.invalid.retryable === false, show(r));
    parent = ran.run_id;
    return show(r);
  });
  await check("history shows the snippet's seven calls as its children", async () => {
    const r = await agent.callTool({ name: "toolgate", arguments: { command: "history" } });
    const runs = r.structuredContent.runs;
    const children = runs.filter((x) => x.parent_run_id === parent);
    expect(children.length === 7, show(runs));
    expect(runs.some((x) => x.id === parent && x.parent_run_id === undefined), show(runs));
  });

  const coder = await open(url, coderKey, "coder");
  await check("without `run`, a call is refused outside code and inside it", async () => {
    const outside = await coder.callTool({ name: "toolgate", arguments: { command: "run", slug: "base64-codec", params: { input: "x" } } });
    expect(outside.structuredContent.code === "FORBIDDEN", show(outside.structuredContent));
    const inside = await run(coder, 'return await tools.base64_codec({input: "x"}).then(() => "ran", (e) => e.code);');
    expect(inside.result === "FORBIDDEN", show(inside));
  });

  const limited = await open(limitedUrl, undefined, "limited");
  await check("a rate-limited caller is limited inside code", async () => {
    const code = `const codes = [];
      for (let i = 0; i < 4; i++) codes.push(await tools.base64_codec({input: "x"}).then(() => "ok", (e) => e.code));
      return codes;`;
    const ran = await run(limited, code);
    expect(JSON.stringify(ran.result) === JSON.stringify(["ok", "ok", "ok", "RATE_LIMITED"]), show(ran));
  });
  await agent.close();
  await coder.close();
  await limited.close();
} finally {
  clearTimeout(timer);
}
finish();
