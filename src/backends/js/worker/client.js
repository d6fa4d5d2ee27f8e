// Installed into every fresh QuickJS context after the web shims: timers (setTimeout,
// setInterval and their clear functions), `mcp`, the MCP client of the call the code
// runs for, and `tools`, the tools the code may call (removed for a catalogue tool's run). The host functions arrive as arguments and stay private to this closure:
//   host.sleep(ms) → Promise resolved after ms (capped at a day; the run's deadline ends
//     the run long before).
//   host.note(json) → undefined, or why the note was refused (thrown as a TypeError):
//     the run sent its share, or the note is too large.
//   host.ask(kind, paramsJson) → Promise of {result: json} or {error: {name, message}}.
//   host.call(name, isFunction, paramsJson) and host.search(query, limit) → Promise of
//     {result: json} or {error: {name, message, code?, retryable?}}: the `tools` global.
//   host.loadWeb() → the web shims' installer (web.js), called with host on the first use
//     of one of the names it defines: most runs never fetch, and installing the shims in
//     every engine was about a sixth of a short run's CPU.
(function (host) {
  "use strict";

  function define(name, value) {
    Object.defineProperty(globalThis, name, { value, writable: true, configurable: true, enumerable: false });
  }

  const WEB_NAMES = ["DOMException", "TextEncoder", "TextDecoder", "Headers", "Response", "AbortSignal", "AbortController", "fetch"];
  let webInstalled = false;
  function installWeb(name) {
    if (!webInstalled) {
      // The installer redefines each name as a plain value, replacing the accessors below.
      host.loadWeb()(host);
      webInstalled = true;
    }
    const now = Object.getOwnPropertyDescriptor(globalThis, name);
    if (now && now.get) throw new ReferenceError(name + " is not available");
  }
  for (const name of WEB_NAMES) {
    Object.defineProperty(globalThis, name, {
      configurable: true,
      enumerable: false,
      get() {
        installWeb(name);
        return globalThis[name];
      },
      set(value) {
        installWeb(name);
        globalThis[name] = value;
      },
    });
  }

  let nextTimer = 1;
  const live = new Set();

  function delay(ms) {
    const n = Number(ms);
    return Number.isFinite(n) && n > 0 ? n : 0;
  }

  function setTimeout(callback, ms, ...args) {
    if (typeof callback !== "function") throw new TypeError("setTimeout: the callback must be a function");
    const id = nextTimer++;
    live.add(id);
    host.sleep(delay(ms)).then(() => {
      if (live.delete(id)) callback(...args);
    });
    return id;
  }

  function setInterval(callback, ms, ...args) {
    if (typeof callback !== "function") throw new TypeError("setInterval: the callback must be a function");
    const id = nextTimer++;
    const every = delay(ms);
    live.add(id);
    const tick = () => host.sleep(every).then(() => {
      if (!live.has(id)) return;
      callback(...args);
      tick();
    });
    tick();
    return id;
  }

  function clearTimer(id) {
    live.delete(id);
  }

  const LEVELS = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"];

  function note(value) {
    const refused = host.note(JSON.stringify(value));
    if (refused !== undefined && refused !== null) throw new TypeError(refused);
  }

  function optionalNumber(what, value) {
    if (value === undefined || value === null) return null;
    if (typeof value !== "number" || !Number.isFinite(value)) throw new TypeError(what + " must be a finite number");
    return value;
  }

  async function ask(kind, what, params) {
    if (params === null || typeof params !== "object" || Array.isArray(params)) {
      throw new TypeError(what + ": the request's params must be an object");
    }
    const r = await host.ask(kind, JSON.stringify(params));
    if (r.error) {
      const e = new Error(r.error.message);
      e.name = r.error.name === "TypeError" ? "TypeError" : "McpError";
      throw e;
    }
    return JSON.parse(r.result);
  }

  const mcp = Object.freeze({
    // notifications/message at an MCP level; data is any JSON value.
    log(level, data, logger) {
      const name = String(level);
      if (!LEVELS.includes(name)) {
        throw new TypeError("mcp.log: the level must be one of " + LEVELS.join(", ") + ", not \"" + name + "\"");
      }
      const sent = data === undefined ? null : data;
      note({ note: "log", level: name, logger: logger === undefined || logger === null ? null : String(logger), data: sent });
    },
    // notifications/progress, when the call carried a progress token (else dropped).
    progress(progress, total, message) {
      const done = optionalNumber("mcp.progress: progress", progress);
      if (done === null) throw new TypeError("mcp.progress: progress must be a finite number");
      note({
        note: "progress",
        progress: done,
        total: optionalNumber("mcp.progress: total", total),
        message: message === undefined || message === null ? null : String(message),
      });
    },
    // sampling/createMessage: params as MCP's ({messages, maxTokens, ...}); the result.
    sample(params) {
      return ask("sample", "mcp.sample", params);
    },
    // elicitation/create: params as MCP's ({message, requestedSchema}); the result.
    elicit(params) {
      return ask("elicit", "mcp.elicit", params);
    },
  });

  // `tools`: every tool the caller may run, called through the server's one call path
  // (validation, the caller's scope and rate, history). tools.call(slug, params) and
  // tools.<function>(params) (the slug with "-" as "_") resolve to the tool's structured
  // result; a failure rejects with an Error carrying `code` and `retryable`.
  // tools.search(query, {limit}) resolves to the ranked list the meta-tool gives.
  function toolError(e) {
    const error = new Error(e.message);
    error.name = e.code === undefined ? (e.name === "TypeError" ? "TypeError" : "ToolError") : "ToolError";
    if (e.code !== undefined) {
      error.code = e.code;
      error.retryable = e.retryable === true;
    }
    return error;
  }

  async function callTool(what, name, isFunction, params) {
    const sent = params === undefined ? {} : params;
    if (sent === null || typeof sent !== "object" || Array.isArray(sent)) {
      throw new TypeError(what + ": the params must be an object");
    }
    const r = await host.call(name, isFunction, JSON.stringify(sent));
    if (r.error) throw toolError(r.error);
    return JSON.parse(r.result);
  }

  const api = Object.freeze({
    call(slug, params) {
      if (typeof slug !== "string" || slug === "") {
        return Promise.reject(new TypeError("tools.call: the first argument must be a tool's slug"));
      }
      return callTool("tools.call", slug, false, params);
    },
    async search(query, options) {
      if (typeof query !== "string") throw new TypeError("tools.search: the query must be a string");
      let limit;
      if (options !== undefined && options !== null) {
        if (typeof options !== "object") throw new TypeError("tools.search: the options must be an object");
        if (options.limit !== undefined && options.limit !== null) {
          if (typeof options.limit !== "number" || !Number.isInteger(options.limit)) {
            throw new TypeError("tools.search: limit must be an integer");
          }
          limit = options.limit;
        }
      }
      const r = await host.search(query, limit);
      if (r.error) throw toolError(r.error);
      return JSON.parse(r.result);
    },
  });
  // Names every object answers (then, toJSON, toString, constructor, ...) stay what
  // they are, so awaiting, printing or serialising `tools` calls nothing; a tool with
  // such a name is reached with tools.call.
  const own = (name) => Object.prototype.hasOwnProperty.call(api, name);
  const reserved = (name) => name === "then" || name === "toJSON" || name in Object.prototype;
  const tools = new Proxy(api, {
    get(target, name) {
      if (typeof name !== "string" || own(name) || reserved(name)) return target[name];
      return (params) => callTool("tools." + name, name, true, params);
    },
    has(target, name) {
      return typeof name === "string" && (own(name) || !reserved(name));
    },
    set() {
      return false;
    },
    defineProperty() {
      return false;
    },
    deleteProperty() {
      return false;
    },
  });

  define("setTimeout", setTimeout);
  define("setInterval", setInterval);
  define("clearTimeout", clearTimer);
  define("clearInterval", clearTimer);
  define("mcp", mcp);
  define("tools", tools);
})
