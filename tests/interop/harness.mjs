// What the TypeScript SDK interop scripts share: loading the SDK from the node_modules
// scripts/test installed, a global deadline, and named checks that each print one
// "ok: ..." or "FAIL: ..." line, every check running whatever the others did.

import path from "node:path";
import { pathToFileURL } from "node:url";

/** Loads `file` of the MCP TypeScript SDK from `nodeModules`, or exits 2 saying why. */
export async function sdk(nodeModules, file) {
  const full = path.join(nodeModules, "@modelcontextprotocol/sdk/dist/esm", file);
  try {
    return await import(pathToFileURL(full).href);
  } catch (e) {
    console.error(`SETUP: cannot load the MCP TypeScript SDK from ${full} (${e.message}); run scripts/test`);
    process.exit(2);
  }
}

/** Ends the run as a failure if it has not finished within `ms`; returns the timer. */
export function deadline(ms) {
  return setTimeout(() => {
    console.log(`FAIL: the run did not finish within ${ms / 1000}s`);
    process.exit(1);
  }, ms);
}

let failures = 0;

/** A value as JSON, for failure messages. */
export const show = (v) => JSON.stringify(v, null, 2);

/** Runs one named check; a thrown Error is that check's failure. */
export async function check(what, body) {
  try {
    const detail = await body();
    console.log(`ok: ${detail ? `${what}: ${detail}` : what}`);
  } catch (e) {
    failures += 1;
    const detail = e instanceof Error ? e.message : show(e);
    console.log(`FAIL: ${what}\n  ${String(detail).replaceAll("\n", "\n  ")}`);
  }
}

/** Throws `message` unless `condition` holds. */
export function expect(condition, message) {
  if (!condition) throw new Error(message);
}

/** Exits 1 when a check failed, else prints "ok: all checks passed". */
export function finish() {
  if (failures > 0) {
    console.log(`${failures} check(s) failed`);
    process.exit(1);
  }
  console.log("ok: all checks passed");
}
