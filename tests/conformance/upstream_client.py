#!/usr/bin/env python3
"""toolgate's upstream client as the client under test of the conformance suite's client
mode (tests/conformance.rs).

Usage: python3 upstream_client.py TOOLGATE_BINARY SERVER_URL   (the suite appends the URL)

The suite starts a scenario's MCP server and runs this with its URL. This writes an
mcpServers file naming that server as the upstream `conf`, starts toolgate on stdio with
it, and, as an MCP client of toolgate (the official Python SDK), makes the calls the
scenario expects: every request the suite's server sees comes from toolgate's upstream
client. Elicitation requests relayed by toolgate are accepted with no fields filled, as a
person who takes every default would.

The `auth/*` scenarios bring their own authorization server. The upstream's entry gets an
`oauth` object from what the scenario's context (MCP_CONFORMANCE_CONTEXT) gives: a
pre-registered client, a client-credentials client (secret or private key, written to
owner-only files), or nothing (a client ID metadata document URL, else dynamic
registration). For the authorization code, the wrapper runs `toolgate upstream login conf`
and plays the person's browser: it opens the printed address with an HTTP GET and follows
the authorization server's redirect to toolgate's loopback listener. When toolgate then
says the upstream needs a new login (a scope step-up, `insufficient_scope`), the wrapper
logs in once more and starts toolgate again, as an operator would.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client

SCENARIO = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
CONTEXT = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
AUTH = SCENARIO.startswith("auth/")
# The client ID metadata document the suite's authorization server expects (auth/basic-cimd).
CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"

# The upstream tool each scenario waits for, and its arguments.
CALLS = {
    "tools_call": ("conf__add_numbers", {"a": 2, "b": 3}),
    "elicitation-sep1034-client-defaults": ("conf__test_client_elicitation_defaults", {}),
    "sse-retry": ("conf__test_reconnection", {}),
}
AUTH_CALL = ("conf__test-tool", {})


async def accept_defaults(_context, _params: types.ElicitRequestParams) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={})


def secret_file(home: Path, name: str, text: str) -> str:
    path = home / name
    path.write_text(text)
    path.chmod(0o600)
    return str(path)


def oauth_entry(home: Path) -> dict:
    """The upstream's `oauth` object for this scenario, from its context."""
    if SCENARIO.startswith("auth/client-credentials"):
        entry = {"grant": "client_credentials", "clientId": CONTEXT["client_id"]}
        if "private_key_pem" in CONTEXT:
            entry["privateKeyFile"] = secret_file(home, "client-key.pem", CONTEXT["private_key_pem"])
            entry["signingAlgorithm"] = CONTEXT.get("signing_algorithm", "ES256")
        else:
            entry["clientSecretFile"] = secret_file(home, "client-secret", CONTEXT["client_secret"])
        return entry
    if "client_id" in CONTEXT:
        entry = {"clientId": CONTEXT["client_id"]}
        if "client_secret" in CONTEXT:
            entry["clientSecretFile"] = secret_file(home, "client-secret", CONTEXT["client_secret"])
        return entry
    return {"clientMetadataUrl": CLIENT_METADATA_URL}


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def login(binary: str, env: dict) -> bool:
    """Runs `toolgate upstream login conf`, playing the browser; true if it succeeded."""
    proc = subprocess.Popen(
        [binary, "upstream", "login", "conf"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    address = None
    for line in proc.stdout:
        print(f"login: {line.rstrip()}", file=sys.stderr)
        found = re.match(r"\s+(https?://\S+)$", line)
        if found:
            address = found.group(1)
            break
    if address is not None:
        # The browser: the authorization server answers with a redirect to toolgate's
        # loopback listener, which the browser then follows.
        opener = urllib.request.build_opener(NoRedirect)
        try:
            opener.open(address, timeout=30)
            print("login: the authorization server did not redirect", file=sys.stderr)
        except urllib.error.HTTPError as answer:
            location = answer.headers.get("Location")
            if location:
                with urllib.request.urlopen(location, timeout=30) as back:
                    back.read()
    out, err = proc.communicate(timeout=60)
    for line in (out + err).splitlines():
        print(f"login: {line}", file=sys.stderr)
    return proc.returncode == 0


async def session(binary: str, env: dict) -> str:
    """One toolgate on stdio, and the scenario's calls through it: "ok", "login" when
    toolgate says the upstream needs a (new) login, or "failed"."""
    params = StdioServerParameters(command=binary, args=[], env=env)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, elicitation_callback=accept_defaults) as client:
            await client.initialize()
            tools = await client.list_tools()
            names = [t.name for t in tools.tools]
            print(f"toolgate lists: {names}", file=sys.stderr)
            call = AUTH_CALL if AUTH else CALLS.get(SCENARIO)
            if call is None:
                return "ok"
            name, arguments = call
            if name not in names:
                print(f"{name} is not listed", file=sys.stderr)
                return "login" if AUTH else "failed"
            result = await client.call_tool(name, arguments)
            text = result.model_dump_json()
            print(f"{name}: {text}", file=sys.stderr)
            if result.is_error and AUTH:
                return "login" if "toolgate upstream login" in text else "failed"
    return "ok"


async def main() -> int:
    binary, url = sys.argv[1], sys.argv[-1]
    with tempfile.TemporaryDirectory() as home:
        home = Path(home)
        servers = home / "servers.json"
        entry = {"url": url}
        if AUTH:
            entry["oauth"] = oauth_entry(home)
        servers.write_text(json.dumps({"mcpServers": {"conf": entry}}))
        env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(home),
            "TOOLGATE_UPSTREAMS": str(servers),
            "TOOLGATE_ADVERTISE": "all",
            "TOOLGATE_SEARCH": "lexical",
        }
        person = AUTH and entry["oauth"].get("grant") != "client_credentials"
        if person and not login(binary, env):
            return 1
        outcome = await session(binary, env)
        if outcome == "login" and person:
            # A step-up: the operator logs in again (toolgate kept the scopes the server
            # asked for), and the call is made again.
            if not login(binary, env):
                return 1
            outcome = await session(binary, env)
    return 0 if outcome == "ok" else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
