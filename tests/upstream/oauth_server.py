#!/usr/bin/env python3
"""A small OAuth-protected MCP server on 127.0.0.1 for tests/upstream_oauth.rs: the
protected resource (Streamable HTTP at /mcp, JSON answers) and its own authorization server
(RFC 9728 and RFC 8414 metadata, dynamic registration, authorization code with PKCE S256,
refresh tokens), standard library only.

Usage: python3 oauth_server.py ISSUED_FILE

It prints its base URL on stdout once it listens, and appends every token it issues to
ISSUED_FILE (one a line), so the test can look for them where they must not be. Access
tokens expire at once (`expires_in: 0`), so a client that refreshes before expiry
refreshes before each request; the tool `whoami` answers how many refreshes there were.
The authorization and token requests must carry `resource` naming /mcp.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ISSUED = sys.argv[1]
LOCK = threading.Lock()
CLIENTS: dict[str, list[str]] = {}
CODES: dict[str, dict] = {}
ACCESS: set[str] = set()
REFRESH: set[str] = set()
COUNT = {"refreshes": 0}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def base(self) -> str:
        return f"http://127.0.0.1:{self.server.server_port}"

    def answer(self, status: int, body=None, headers=None):
        data = b"" if body is None else json.dumps(body).encode()
        self.send_response(status)
        if body is not None:
            self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def refuse(self, why: str):
        self.answer(400, {"error": "invalid_request", "error_description": why})

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(url.query))
        base = self.base()
        if url.path == "/.well-known/oauth-protected-resource/mcp":
            return self.answer(200, {
                "resource": f"{base}/mcp",
                "authorization_servers": [base],
                "scopes_supported": ["echo"],
            })
        if url.path == "/.well-known/oauth-authorization-server":
            return self.answer(200, {
                "issuer": base,
                "authorization_endpoint": f"{base}/authorize",
                "token_endpoint": f"{base}/token",
                "registration_endpoint": f"{base}/register",
                "response_types_supported": ["code"],
                "grant_types_supported": ["authorization_code", "refresh_token"],
                "code_challenge_methods_supported": ["S256"],
                "token_endpoint_auth_methods_supported": ["none"],
                "scopes_supported": ["echo"],
            })
        if url.path == "/authorize":
            redirects = CLIENTS.get(query.get("client_id", ""))
            if redirects is None or query.get("redirect_uri") not in redirects:
                return self.refuse("unknown client or redirect_uri")
            if query.get("response_type") != "code" or query.get("code_challenge_method") != "S256":
                return self.refuse("code with PKCE S256 only")
            if query.get("resource") != f"{base}/mcp":
                return self.refuse("resource must name /mcp")
            code = secrets.token_urlsafe(16)
            with LOCK:
                CODES[code] = query
            location = query["redirect_uri"] + "?" + urllib.parse.urlencode(
                {"code": code, "state": query.get("state", "")}
            )
            return self.answer(302, None, {"location": location})
        return self.answer(404 if url.path != "/mcp" else 405)

    def do_DELETE(self):
        self.answer(405)

    def do_POST(self):
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length)
        path = urllib.parse.urlsplit(self.path).path
        if path == "/register":
            asked = json.loads(body)
            client_id = "client-" + secrets.token_hex(4)
            with LOCK:
                CLIENTS[client_id] = asked.get("redirect_uris", [])
            return self.answer(201, {
                "client_id": client_id,
                "redirect_uris": CLIENTS[client_id],
                "token_endpoint_auth_method": "none",
            })
        if path == "/token":
            return self.token(dict(urllib.parse.parse_qsl(body.decode())))
        if path == "/mcp":
            return self.mcp(body)
        return self.answer(404)

    def token(self, form: dict):
        if form.get("resource") != f"{self.base()}/mcp":
            return self.refuse("resource must name /mcp")
        grant = form.get("grant_type")
        with LOCK:
            if grant == "authorization_code":
                asked = CODES.pop(form.get("code", ""), None)
                verifier = form.get("code_verifier", "")
                challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
                if asked is None or asked.get("code_challenge") != challenge:
                    return self.answer(400, {"error": "invalid_grant"})
            elif grant == "refresh_token":
                if form.get("refresh_token") not in REFRESH:
                    return self.answer(400, {"error": "invalid_grant"})
                REFRESH.discard(form["refresh_token"])
                COUNT["refreshes"] += 1
            else:
                return self.answer(400, {"error": "unsupported_grant_type"})
            access, refresh = "at-" + secrets.token_urlsafe(24), "rt-" + secrets.token_urlsafe(24)
            ACCESS.add(access)
            REFRESH.add(refresh)
            with open(ISSUED, "a") as issued:
                issued.write(f"{access}\n{refresh}\n")
        return self.answer(200, {
            "access_token": access,
            "token_type": "Bearer",
            "expires_in": 0,
            "refresh_token": refresh,
            "scope": "echo",
        })

    def mcp(self, body: bytes):
        token = (self.headers.get("authorization") or "").removeprefix("Bearer ")
        if token not in ACCESS:
            metadata = f"{self.base()}/.well-known/oauth-protected-resource/mcp"
            return self.answer(401, {"error": "invalid_token"}, {
                "www-authenticate": f'Bearer resource_metadata="{metadata}", scope="echo"'
            })
        message = json.loads(body)
        if "id" not in message:
            return self.answer(202)
        method = message.get("method")
        if method == "initialize":
            result = {
                "protocolVersion": "2025-06-18",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "oauth-test-server", "version": "1.0.0"},
            }
        elif method == "tools/list":
            result = {"tools": [{"name": "whoami", "description": "How many refreshes there were.",
                                 "inputSchema": {"type": "object"}}]}
        elif method == "tools/call":
            result = {"content": [{"type": "text", "text": f"refreshes: {COUNT['refreshes']}"}]}
        elif method == "ping":
            result = {}
        else:
            return self.answer(200, {"jsonrpc": "2.0", "id": message["id"],
                                     "error": {"code": -32601, "message": "no such method"}},
                               {"mcp-session-id": "s1"})
        self.answer(200, {"jsonrpc": "2.0", "id": message["id"], "result": result}, {"mcp-session-id": "s1"})


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(f"http://127.0.0.1:{server.server_port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
