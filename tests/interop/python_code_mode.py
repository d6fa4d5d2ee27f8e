#!/usr/bin/env python3
"""Interop test: code mode driven by the official MCP Python SDK over Streamable HTTP.

Usage: python3 tests/interop/python_code_mode.py URL FULL_KEY CODER_KEY LIMITED_URL

URL serves the embedded catalogue, run_javascript and the upstream `py`
(tests/upstream/py_server.py); FULL_KEY holds every scope, CODER_KEY runtimes and search
but not run. LIMITED_URL admits 4 anonymous runs a minute. One snippet searches, calls
three catalogue tools in sequence and two in parallel, calls an upstream tool, catches a
validation error and returns a summary; the history shows the snippet and its children.
A caller without `run` is refused inside the code as outside; a rate-limited caller is
limited inside the code too. Prints one "ok: ..." line per check and "ok: all checks
passed" (exit 0); on the first failure FAIL with what was expected and what came back
(exit 1). Bounded by a global timeout.
"""

from __future__ import annotations

import sys
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

try:
    import anyio
    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.types import Implementation
    from python_http import check, reported, structured  # beside this script
except ImportError as exc:  # pragma: no cover - environment problem, not a test failure
    print(f"SETUP: the MCP Python SDK is not importable ({exc})", file=sys.stderr)
    sys.exit(2)

GLOBAL_TIMEOUT_SECONDS = 120

# The snippet ts_code_mode.mjs runs too.
SNIPPET = (Path(__file__).parent / "code_mode_snippet.js").read_text(encoding="utf-8")


async def open_session(url: str, key: str | None, who: str, stack: AsyncExitStack) -> ClientSession:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    http = await stack.enter_async_context(httpx2.AsyncClient(headers=headers, timeout=60))
    read, write, *_ = await stack.enter_async_context(streamable_http_client(url, http_client=http))
    session = await stack.enter_async_context(
        ClientSession(read, write, client_info=Implementation(name=f"python-code-{who}", version="1"))
    )
    await session.initialize()
    return session


async def run_code(session: ClientSession, code: str) -> dict[str, Any]:
    result = await session.call_tool("run_javascript", {"code": code})
    return structured(result)


async def run_checks(url: str, full_key: str, coder_key: str, limited_url: str) -> None:
    async with AsyncExitStack() as stack:
        agent = await open_session(url, full_key, "agent", stack)
        ran = await run_code(agent, SNIPPET)
        check(ran.get("success") is True, "the snippet runs", True, ran)
        summary = ran.get("result") or {}
        check(summary.get("found") == "base64-codec", "tools.search ranks base64-codec first", "base64-codec", summary)
        check(summary.get("steps") == [True] * 5, "five catalogue calls succeed (three in turn, two at once)", [True] * 5, summary)
        check(summary.get("loud") == "FROM CODE", "the upstream tool answers its structuredContent", "FROM CODE", summary)
        check(
            summary.get("invalid") == {"code": "INVALID_PARAMS", "retryable": False},
            "a validation error is caught in the code with its code",
            {"code": "INVALID_PARAMS", "retryable": False},
            summary,
        )
        history = structured(await agent.call_tool("toolgate", {"command": "history"}))
        runs = history.get("runs", [])
        parent = ran.get("run_id")
        children = [r for r in runs if r.get("parent_run_id") == parent]
        check(len(children) == 7, "history shows the snippet's seven calls as its children", 7, runs)
        check(any(r.get("id") == parent and "parent_run_id" not in r for r in runs), "and the snippet itself", parent, runs)

        coder = await open_session(url, coder_key, "coder", stack)
        outside = structured(await coder.call_tool("base64-codec", {"input": "x"}))
        check(outside.get("code") == "FORBIDDEN", "without `run`, a direct call is refused", "FORBIDDEN", outside)
        inside = await run_code(coder, 'return await tools.base64_codec({input: "x"}).then(() => "ran", (e) => e.code);')
        check(inside.get("result") == "FORBIDDEN", "and so is the same call from code", "FORBIDDEN", inside)

        limited = await open_session(limited_url, None, "limited", stack)
        code = """
        const codes = [];
        for (let i = 0; i < 4; i++) codes.push(await tools.base64_codec({input: "x"}).then(() => "ok", (e) => e.code));
        return codes;
        """
        ran = await run_code(limited, code)
        expected = ["ok", "ok", "ok", "RATE_LIMITED"]
        check(ran.get("result") == expected, "4 runs a minute: the snippet and three calls, then RATE_LIMITED", expected, ran)


async def main(url: str, full_key: str, coder_key: str, limited_url: str) -> int:
    return await reported(run_checks(url, full_key, coder_key, limited_url), GLOBAL_TIMEOUT_SECONDS)

if __name__ == "__main__":
    if len(sys.argv) != 5:
        print(f"usage: {sys.argv[0]} URL FULL_KEY CODER_KEY LIMITED_URL", file=sys.stderr)
        sys.exit(2)
    sys.exit(anyio.run(main, *sys.argv[1:]))
