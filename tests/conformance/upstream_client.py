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
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
from pathlib import Path

from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client

SCENARIO = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")

# The upstream tool each scenario waits for, and its arguments.
CALLS = {
    "tools_call": ("conf__add_numbers", {"a": 2, "b": 3}),
    "elicitation-sep1034-client-defaults": ("conf__test_client_elicitation_defaults", {}),
    "sse-retry": ("conf__test_reconnection", {}),
}


async def accept_defaults(_context, _params: types.ElicitRequestParams) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={})


async def main() -> int:
    binary, url = sys.argv[1], sys.argv[-1]
    with tempfile.TemporaryDirectory() as home:
        servers = Path(home) / "servers.json"
        servers.write_text(json.dumps({"mcpServers": {"conf": {"url": url}}}))
        env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": home,
            "TOOLGATE_UPSTREAMS": str(servers),
            "TOOLGATE_ADVERTISE": "all",
            "TOOLGATE_SEARCH": "lexical",
        }
        params = StdioServerParameters(command=binary, args=[], env=env)
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write, elicitation_callback=accept_defaults) as session:
                await session.initialize()
                tools = await session.list_tools()
                names = [t.name for t in tools.tools]
                print(f"toolgate lists: {names}", file=sys.stderr)
                if SCENARIO in CALLS:
                    name, arguments = CALLS[SCENARIO]
                    if name not in names:
                        print(f"{name} is not listed", file=sys.stderr)
                        return 1
                    result = await session.call_tool(name, arguments)
                    print(f"{name}: {result.model_dump_json()}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
