#!/usr/bin/env python3
"""Interop test: drive `toolgate --http` with the official MCP Python SDK's Streamable
HTTP client, two sessions at once.

Usage: python3 tests/interop/python_http.py URL      (e.g. http://127.0.0.1:PORT/mcp)

The agent path in each session: search, schema, run, batch with progress, history; then
isolation: one session's runs are invisible to the other. Prints one "ok: ..." line per
check and "ok: all checks passed" at the end (exit 0); on the first failure prints FAIL
with what was expected and what came back (exit 1). Bounded by a global timeout.
"""

from __future__ import annotations

import sys
from typing import Any

try:
    import anyio
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.types import Implementation
    from python_sdk import leaf_exceptions  # beside this script
except ImportError as exc:  # pragma: no cover - environment problem, not a test failure
    print(f"SETUP: the MCP Python SDK is not importable ({exc})", file=sys.stderr)
    sys.exit(2)

GLOBAL_TIMEOUT_SECONDS = 90


class CheckFailed(Exception):
    def __init__(self, what: str, expected: Any, got: Any) -> None:
        super().__init__(what)
        self.what, self.expected, self.got = what, expected, got


def check(condition: bool, what: str, expected: Any, got: Any) -> None:
    if not condition:
        raise CheckFailed(what, expected, got)
    print(f"ok: {what}", flush=True)


def structured(result: Any) -> dict[str, Any]:
    return result.structured_content or {}


async def agent_path(session: ClientSession, who: str) -> None:
    meta = "toolgate"
    found = structured(await session.call_tool(meta, {"command": "search", "query": "encode text as base64"}))
    slugs = [r["slug"] for r in found.get("results", [])]
    check("base64-codec" in slugs[:3], f"{who}: search finds base64-codec", "in the top 3", slugs)
    schema = structured(await session.call_tool(meta, {"command": "schema", "slug": "base64-codec"}))
    check("input_schema" in schema, f"{who}: schema has the input schema", "input_schema", list(schema))
    ran = await session.call_tool(
        meta, {"command": "run", "slug": "base64-codec", "params": {"mode": "encode", "input": who}}
    )
    body = structured(ran)
    check(body.get("success") is True, f"{who}: run succeeds", True, body)
    ticks: list[float] = []

    async def progress(value: float, total: float | None, message: str | None) -> None:
        ticks.append(value)

    runs = [
        {"slug": "base64-codec", "params": {"mode": "encode", "input": f"{who}-{i}"}} for i in range(3)
    ]
    batch = await session.call_tool(meta, {"command": "batch", "runs": runs}, progress_callback=progress)
    check(structured(batch).get("succeeded") == 3, f"{who}: batch runs all three", 3, structured(batch))
    check(len(ticks) >= 2, f"{who}: batch reports progress", "at least 2 ticks", ticks)
    history = structured(await session.call_tool(meta, {"command": "history"}))
    ids = [r["id"] for r in history.get("runs", [])]
    check(len(ids) == 4, f"{who}: history holds its own four runs", 4, ids)


async def open_session(url: str, who: str, stack: Any) -> ClientSession:
    read, write, *_ = await stack.enter_async_context(streamable_http_client(url))
    session = await stack.enter_async_context(
        ClientSession(read, write, client_info=Implementation(name=f"python-http-{who}", version="1"))
    )
    init = await session.initialize()
    check(init.server_info.name == "toolgate", f"{who}: initialize over HTTP", "toolgate", init.server_info.name)
    return session


async def run_checks(url: str) -> None:
    from contextlib import AsyncExitStack

    async with AsyncExitStack() as stack:
        alice = await open_session(url, "alice", stack)
        bob = await open_session(url, "bob", stack)
        async with anyio.create_task_group() as group:
            group.start_soon(agent_path, alice, "alice")
            group.start_soon(agent_path, bob, "bob")
        shown = structured(await bob.call_tool("toolgate", {"command": "history", "show": "r1"}))
        text = str(shown)
        check("alice" not in text, "bob's r1 is his own run, not alice's", "no 'alice'", shown)


async def reported(checks: Any, timeout: float) -> int:
    """Runs `checks` (an awaitable) within `timeout` seconds; prints the first failed check,
    or the unexpected error, or that all passed; the exit status to use."""
    try:
        with anyio.fail_after(timeout):
            await checks
    except BaseException as exc:  # noqa: BLE001 - report everything, including groups
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        for leaf in leaf_exceptions(exc):
            if isinstance(leaf, CheckFailed):
                print(f"FAIL: {leaf.what}\n  expected: {leaf.expected}\n  got: {leaf.got}", flush=True)
                return 1
        print(f"FAIL: unexpected {exc!r}", flush=True)
        return 1
    print("ok: all checks passed", flush=True)
    return 0


async def main(url: str) -> int:
    return await reported(run_checks(url), GLOBAL_TIMEOUT_SECONDS)

if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(f"usage: {sys.argv[0]} URL", file=sys.stderr)
        sys.exit(2)
    sys.exit(anyio.run(main, sys.argv[1]))
