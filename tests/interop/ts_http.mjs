#!/usr/bin/env node
// Interop test: drive `toolgate --http` with the official MCP TypeScript SDK's
// StreamableHTTPClientTransport, two sessions at once.
//
// Usage: node tests/interop/ts_http.mjs NODE_MODULES URL   (URL: http://127.0.0.1:PORT/mcp)
//
// The agent path in each session — search, schema, run, batch with progress, history —
// then isolation: one session's runs are invisible to the other, and a session ended with
// DELETE is gone. One "ok: ..." line per check passed, one "FAIL: ..." per check failed;
// exits 0 only when every check passed ("ok: all checks passed"), 1 otherwise, 2 on a
// usage or setup problem. A global timeout bounds the run.

import { check, deadline, expect, finish, sdk as load, show } from "./harness.mjs";

const GLOBAL_TIMEOUT_MS = 90_000;

const [nodeModules, url] = process.argv.slice(2);
if (!nodeModules || !url) {
  console.error("usage: node ts_http.mjs NODE_MODULES URL");
  process.exit(2);
}

const { Client } = await load(nodeModules, "client/index.js");
const { StreamableHTTPClientTransport } = await load(nodeModules, "client/streamableHttp.js");

const timer = deadline(GLOBAL_TIMEOUT_MS);

async function open(who) {
  const transport = new StreamableHTTPClientTransport(new URL(url));
  const client = new Client({ name: `ts-http-${who}`, version: "1.0.0" });
  await client.connect(transport);
  return { client, transport };
}

async function agentPath(client, who) {
  const meta = (args, extra) => client.callTool({ name: "toolgate", arguments: args }, undefined, extra);
  await check(`${who}: search`, async () => {
    const r = await meta({ command: "search", query: "encode text as base64" });
    const slugs = r.structuredContent.results.map((x) => x.slug);
    expect(slugs.slice(0, 3).includes("base64-codec"), show(slugs));
    return "base64-codec in the top 3";
  });
  await check(`${who}: schema`, async () => {
    const r = await meta({ command: "schema", slug: "base64-codec" });
    expect(r.structuredContent.input_schema, show(r.structuredContent));
  });
  await check(`${who}: run`, async () => {
    const r = await meta({ command: "run", slug: "base64-codec", params: { mode: "encode", input: who } });
    expect(r.structuredContent.success === true && !r.isError, show(r));
  });
  await check(`${who}: batch with progress`, async () => {
    const ticks = [];
    const runs = [0, 1, 2].map((i) => ({ slug: "base64-codec", params: { mode: "encode", input: `${who}-${i}` } }));
    const r = await meta({ command: "batch", runs }, { onprogress: (p) => ticks.push(p.progress) });
    expect(r.structuredContent.succeeded === 3, show(r.structuredContent));
    expect(ticks.length >= 2, `progress ticks: ${show(ticks)}`);
    return `${ticks.length} progress ticks`;
  });
  await check(`${who}: history holds its own four runs`, async () => {
    const r = await meta({ command: "history" });
    expect(r.structuredContent.runs.length === 4, show(r.structuredContent.runs));
  });
}

try {
  const alice = await open("alice");
  const bob = await open("bob");
  await check("two sessions have different ids", async () => {
    expect(alice.transport.sessionId && alice.transport.sessionId !== bob.transport.sessionId,
      `${alice.transport.sessionId} / ${bob.transport.sessionId}`);
  });
  await Promise.all([agentPath(alice.client, "alice"), agentPath(bob.client, "bob")]);
  await check("bob's r1 is his own run", async () => {
    const r = await bob.client.callTool({ name: "toolgate", arguments: { command: "history", show: "r1" } });
    expect(!JSON.stringify(r.structuredContent).includes("alice"), show(r.structuredContent));
  });
  await check("a session ended with DELETE is gone", async () => {
    const id = alice.transport.sessionId;
    await alice.transport.terminateSession();
    const r = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream", "mcp-session-id": id },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }),
    });
    expect(r.status === 404, `status ${r.status}`);
  });
  await alice.client.close();
  await bob.client.close();
} finally {
  clearTimeout(timer);
}
finish();
