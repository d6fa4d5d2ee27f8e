// Installed into every fresh QuickJS context after the console: minimal shims of the web
// APIs scripts expect — fetch, Headers, Response, AbortController/AbortSignal,
// TextEncoder, TextDecoder. The host functions arrive as arguments and stay private to
// this closure:
//   host.fetch(url, method, headersJson, body|null, redirect, id) → Promise of
//     {status, statusText, url, redirected, headers: [[name, value]…], body: ArrayBuffer}
//     or {error: {name, message}}; the host enforces scheme, size and time limits and
//     the address policy, and follows redirects itself ("follow", "manual", "error").
//   host.abort(id) drops the request in flight with that id.
//   host.encode(string) → ArrayBuffer of its UTF-8 bytes.
//   host.decode(ArrayBuffer, fatal) → string (U+FFFD for bad bytes unless fatal).
(function (host) {
  "use strict";
  const BODY_LIMIT = host.bodyLimit;

  function define(name, value) {
    Object.defineProperty(globalThis, name, { value, writable: true, configurable: true, enumerable: false });
  }

  class DOMException extends Error {
    constructor(message = "", name = "Error") {
      super(message);
      Object.defineProperty(this, "name", { value: name, configurable: true, writable: true });
    }
  }

  function bytesOf(value) {
    if (value instanceof ArrayBuffer) return value.slice(0);
    if (ArrayBuffer.isView(value)) return value.buffer.slice(value.byteOffset, value.byteOffset + value.byteLength);
    return host.encode(String(value));
  }

  class TextEncoder {
    get encoding() { return "utf-8"; }
    encode(input = "") { return new Uint8Array(host.encode(String(input))); }
  }

  const UTF8_LABELS = ["utf-8", "utf8", "unicode-1-1-utf-8"];
  class TextDecoder {
    #fatal;
    constructor(label = "utf-8", options = {}) {
      if (!UTF8_LABELS.includes(String(label).trim().toLowerCase())) {
        throw new RangeError("TextDecoder: only utf-8 is supported, not \"" + label + "\"");
      }
      this.#fatal = Boolean(options && options.fatal);
    }
    get encoding() { return "utf-8"; }
    get fatal() { return this.#fatal; }
    decode(input) {
      if (input === undefined) return "";
      if (!(input instanceof ArrayBuffer) && !ArrayBuffer.isView(input)) {
        throw new TypeError("TextDecoder.decode: expected an ArrayBuffer or a view of one");
      }
      const text = host.decode(bytesOf(input), this.#fatal);
      if (text === null) throw new TypeError("TextDecoder.decode: the input is not valid UTF-8");
      return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
    }
  }

  class Headers {
    #map = new Map();
    constructor(init) {
      if (init === undefined || init === null) return;
      if (init instanceof Headers) {
        init.forEach((value, name) => this.append(name, value));
      } else if (typeof init[Symbol.iterator] === "function") {
        for (const pair of init) {
          const [name, value, ...rest] = Array.from(pair);
          if (rest.length || value === undefined) throw new TypeError("Headers: each pair must be [name, value]");
          this.append(name, value);
        }
      } else if (typeof init === "object") {
        for (const name of Object.keys(init)) this.append(name, init[name]);
      } else {
        throw new TypeError("Headers: expected an object, an array of pairs or Headers");
      }
    }
    static #name(name) {
      const n = String(name).toLowerCase();
      if (!/^[!#$%&'*+\-.^_`|~0-9a-z]+$/.test(n)) throw new TypeError("Headers: invalid header name \"" + name + "\"");
      return n;
    }
    static #value(value) {
      const v = String(value).replace(/^[\t\n\r ]+|[\t\n\r ]+$/g, "");
      if (/[\0\r\n]/.test(v)) throw new TypeError("Headers: invalid header value");
      return v;
    }
    append(name, value) {
      const n = Headers.#name(name);
      const v = Headers.#value(value);
      const old = this.#map.get(n);
      this.#map.set(n, old === undefined ? v : old + ", " + v);
    }
    set(name, value) { this.#map.set(Headers.#name(name), Headers.#value(value)); }
    get(name) { const v = this.#map.get(Headers.#name(name)); return v === undefined ? null : v; }
    has(name) { return this.#map.has(Headers.#name(name)); }
    delete(name) { this.#map.delete(Headers.#name(name)); }
    forEach(callback, thisArg) { for (const [n, v] of this.entries()) callback.call(thisArg, v, n, this); }
    *entries() { yield* [...this.#map.entries()].sort((a, b) => (a[0] < b[0] ? -1 : 1)); }
    *keys() { for (const [n] of this.entries()) yield n; }
    *values() { for (const [, v] of this.entries()) yield v; }
    [Symbol.iterator]() { return this.entries(); }
  }

  class Response {
    #bytes;
    #used = false;
    constructor(body = null, init = {}) {
      const status = init.status === undefined ? 200 : Number(init.status);
      if (!Number.isInteger(status) || status < 200 || status > 599) {
        throw new RangeError("Response: status must be an integer from 200 to 599");
      }
      this.#bytes = body === null || body === undefined ? new ArrayBuffer(0) : bytesOf(body);
      Object.defineProperties(this, {
        status: { value: status, enumerable: true },
        statusText: { value: init.statusText === undefined ? "" : String(init.statusText), enumerable: true },
        headers: { value: new Headers(init.headers), enumerable: true },
        url: { value: init.url === undefined ? "" : String(init.url), enumerable: true },
        redirected: { value: Boolean(init.redirected), enumerable: true },
        type: { value: "basic", enumerable: true },
        body: { value: null, enumerable: true },
      });
    }
    get ok() { return this.status >= 200 && this.status <= 299; }
    get bodyUsed() { return this.#used; }
    #take() {
      if (this.#used) return Promise.reject(new TypeError("Response: body has already been read"));
      this.#used = true;
      return Promise.resolve(this.#bytes);
    }
    arrayBuffer() { return this.#take().then((b) => b.slice(0)); }
    text() { return this.#take().then((b) => host.decode(b, false)).then((t) => (t.charCodeAt(0) === 0xfeff ? t.slice(1) : t)); }
    json() { return this.text().then((t) => JSON.parse(t)); }
    clone() {
      if (this.#used) throw new TypeError("Response.clone: body has already been read");
      return new Response(this.#bytes, this);
    }
  }

  class AbortSignal {
    #aborted = false;
    #reason = undefined;
    #listeners = [];
    constructor(key) {
      if (key !== AbortSignal.#key) throw new TypeError("AbortSignal: use new AbortController().signal");
      this.onabort = null;
    }
    static #key = {};
    static #make() { return new AbortSignal(AbortSignal.#key); }
    static abort(reason) { const s = AbortSignal.#make(); s.#fire(reason); return s; }
    static timeout() { throw new TypeError("AbortSignal.timeout is unavailable: there are no timers here"); }
    get aborted() { return this.#aborted; }
    get reason() { return this.#reason; }
    throwIfAborted() { if (this.#aborted) throw this.#reason; }
    addEventListener(type, listener) { if (type === "abort" && typeof listener === "function") this.#listeners.push(listener); }
    removeEventListener(type, listener) { this.#listeners = this.#listeners.filter((l) => l !== listener); }
    #fire(reason) {
      if (this.#aborted) return;
      this.#aborted = true;
      this.#reason = reason === undefined ? new DOMException("This operation was aborted", "AbortError") : reason;
      const event = { type: "abort", target: this };
      const listeners = this.#listeners;
      this.#listeners = [];
      if (typeof this.onabort === "function") this.onabort(event);
      for (const l of listeners) l.call(this, event);
    }
    static _controller() {
      const signal = AbortSignal.#make();
      return { signal, abort: (reason) => signal.#fire(reason) };
    }
  }
  const controllerOf = AbortSignal._controller;
  delete AbortSignal._controller;

  class AbortController {
    #inner = controllerOf();
    get signal() { return this.#inner.signal; }
    abort(reason) { this.#inner.abort(reason); }
  }

  let nextId = 1;
  function fetch(input, init = {}) {
    return new Promise((resolve, reject) => {
      init = init === null || init === undefined ? {} : init;
      const url = typeof input === "object" && input !== null && "url" in input ? String(input.url) : String(input);
      const method = init.method === undefined ? "GET" : String(init.method).toUpperCase();
      const headers = new Headers(init.headers);
      let body = null;
      if (init.body !== undefined && init.body !== null) {
        if (method === "GET" || method === "HEAD") {
          throw new TypeError("fetch: a " + method + " request cannot have a body");
        }
        if (typeof init.body === "string" && !headers.has("content-type")) {
          headers.set("content-type", "text/plain;charset=UTF-8");
        }
        body = bytesOf(init.body);
        if (body.byteLength > BODY_LIMIT) {
          throw new TypeError("fetch: the request body is " + body.byteLength + " bytes, over the limit of " + BODY_LIMIT);
        }
      }
      const redirect = init.redirect === undefined ? "follow" : String(init.redirect);
      if (redirect !== "follow" && redirect !== "manual" && redirect !== "error") {
        throw new TypeError("fetch: redirect must be \"follow\", \"manual\" or \"error\", not \"" + redirect + "\"");
      }
      const signal = init.signal;
      if (signal && signal.aborted) throw signal.reason;
      const id = nextId++;
      let settled = false;
      const onAbort = () => {
        if (settled) return;
        settled = true;
        host.abort(id);
        reject(signal.reason);
      };
      if (signal) signal.addEventListener("abort", onAbort);
      host.fetch(url, method, JSON.stringify([...headers]), body, redirect, id).then((r) => {
        if (signal) signal.removeEventListener("abort", onAbort);
        if (settled) return;
        settled = true;
        if (r.error) {
          const e = r.error.name === "TypeError" ? new TypeError(r.error.message) : new DOMException(r.error.message, r.error.name);
          reject(e);
          return;
        }
        resolve(new Response(r.body, r));
      });
    });
  }

  define("DOMException", DOMException);
  define("TextEncoder", TextEncoder);
  define("TextDecoder", TextDecoder);
  define("Headers", Headers);
  define("Response", Response);
  define("AbortSignal", AbortSignal);
  define("AbortController", AbortController);
  define("fetch", fetch);
})
