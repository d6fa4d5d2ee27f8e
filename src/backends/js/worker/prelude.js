// Installed into every fresh QuickJS context before the caller's code runs.
// Receives the host's write(stream, text) and keeps it private in this closure
// (it returns the inspect function to the host, never to user code):
// stream 1 is stdout, 2 is stderr. Formatting follows Node's util.inspect closely
// enough for logs to read the same: strings bare at top level, quoted inside objects.
(function (write) {
  "use strict";
  const MAX_DEPTH = 2;
  const MAX_ITEMS = 100;
  function quote(s) {
    return "'" + s.replace(/\\/g, "\\\\").replace(/'/g, "\\'").replace(/\n/g, "\\n") + "'";
  }
  function key(k) {
    return /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(k) ? k : quote(k);
  }
  function inspect(v, depth, seen) {
    switch (typeof v) {
      case "string": return depth === 0 ? v : quote(v);
      case "number": return Object.is(v, -0) ? "-0" : String(v);
      case "bigint": return String(v) + "n";
      case "boolean": case "undefined": return String(v);
      case "symbol": return v.toString();
      case "function": return "[Function: " + (v.name || "(anonymous)") + "]";
    }
    if (v === null) return "null";
    if (seen.includes(v)) return "[Circular *1]";
    if (v instanceof Error) return v.stack ? v.name + ": " + v.message + "\n" + v.stack.trimEnd() : String(v);
    if (v instanceof Date) return isNaN(v) ? "Invalid Date" : v.toISOString();
    if (v instanceof RegExp) return String(v);
    const inner = seen.concat([v]);
    if (Array.isArray(v)) {
      if (depth > MAX_DEPTH) return "[Array]";
      const items = v.slice(0, MAX_ITEMS).map((x) => inspect(x, depth + 1, inner));
      if (v.length > MAX_ITEMS) items.push("... " + (v.length - MAX_ITEMS) + " more items");
      return items.length ? "[ " + items.join(", ") + " ]" : "[]";
    }
    if (v instanceof Map) {
      if (depth > MAX_DEPTH) return "[Map]";
      const items = [...v].slice(0, MAX_ITEMS).map(([k, x]) => inspect(k, depth + 1, inner) + " => " + inspect(x, depth + 1, inner));
      return "Map(" + v.size + ") {" + (items.length ? " " + items.join(", ") + " " : "") + "}";
    }
    if (v instanceof Set) {
      if (depth > MAX_DEPTH) return "[Set]";
      const items = [...v].slice(0, MAX_ITEMS).map((x) => inspect(x, depth + 1, inner));
      return "Set(" + v.size + ") {" + (items.length ? " " + items.join(", ") + " " : "") + "}";
    }
    if (depth > MAX_DEPTH) return "[Object]";
    const keys = Object.keys(v);
    const items = keys.slice(0, MAX_ITEMS).map((k) => key(k) + ": " + inspect(v[k], depth + 1, inner));
    if (keys.length > MAX_ITEMS) items.push("... " + (keys.length - MAX_ITEMS) + " more items");
    return items.length ? "{ " + items.join(", ") + " }" : "{}";
  }
  function line(args) {
    return args.map((a) => inspect(a, 0, [])).join(" ");
  }
  const out = (...args) => write(1, line(args));
  const err = (...args) => write(2, line(args));
  globalThis.console = {
    log: out, info: out, debug: out, dir: (v) => write(1, inspect(v, 1, [])),
    warn: err, error: err,
    trace: (...args) => write(2, "Trace: " + line(args) + "\n" + new Error().stack.split("\n").slice(1).join("\n").trimEnd()),
    assert: (cond, ...args) => { if (!cond) write(2, "Assertion failed" + (args.length ? ": " + line(args) : "")); },
  };
  // The host formats a snippet's return value with the same rules.
  return (v) => inspect(v, 1, []);
})
