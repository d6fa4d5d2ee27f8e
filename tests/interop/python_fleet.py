#!/usr/bin/env python3
"""Interop test: one session of the official MCP Python SDK through a load-balanced fleet
of `toolgate --http` replicas goes on when a replica dies.

Usage: python3 tests/interop/python_fleet.py URL      (the balancer's /mcp URL)

Needs `run_javascript` (TOOLGATE_RUNTIMES=js) and the default catalogue's base64-codec.
Runs three tools and checks that a tool's log message reaches the client (its GET stream
may be open on any replica); then prints "kill: now" and waits for a line on stdin, while
the test kills a replica; then runs four more, reads the session's history (all seven
encodings, every run numbered in order), checks a log message reaches the client again,
and makes a call that outlives its stream (the fleet runs with TOOLGATE_HTTP_SSE_POLL_MS,
so the SDK resumes the call's stream with Last-Event-ID). A log message
is waited for (bounded); a call whose message cannot arrive — the GET stream is being
opened again after the kill — is followed by another, at most LOG_ATTEMPTS. Prints one
"ok: ..." line per check and "ok: all checks passed" (exit 0); on the first failure FAIL
with what was expected and what came back (exit 1).
"""

from __future__ import annotations

import sys
from typing import Any

try:
    import anyio
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.types import Implementation, LoggingMessageNotificationParams
    from python_http import check, reported, structured  # beside this script
except ImportError as exc:  # pragma: no cover - environment problem, not a test failure
    print(f"SETUP: the MCP Python SDK is not importable ({exc})", file=sys.stderr)
    sys.exit(2)

GLOBAL_TIMEOUT_SECONDS = 120
LOG_ATTEMPTS = 10
LOG_WAIT_SECONDS = 3


class Logs:
    """The log messages the session received, and a way to wait for one."""

    def __init__(self) -> None:
        self.seen: list[Any] = []
        self.arrived = anyio.Event()

    async def receive(self, params: LoggingMessageNotificationParams) -> None:
        self.seen.append(params.data)
        self.arrived.set()

    async def reaches(self, session: ClientSession, label: str) -> None:
        """Calls a tool logging `label-N` until one of its messages arrives (bounded)."""
        for attempt in range(LOG_ATTEMPTS):
            text = f"{label}-{attempt}"
            code = f"mcp.log('info', {text!r}, 'fleet'); return 1;"
            ran = await session.call_tool("run_javascript", {"code": code})
            check(not ran.is_error, f"{label}: the logging call {attempt} runs", "no error", ran)
            with anyio.move_on_after(LOG_WAIT_SECONDS):
                while not any(str(d).startswith(f"{label}-") for d in self.seen):
                    self.arrived = anyio.Event()
                    await self.arrived.wait()
            if any(str(d).startswith(f"{label}-") for d in self.seen):
                break
        got = [d for d in self.seen if str(d).startswith(f"{label}-")]
        check(len(got) >= 1, f"{label}: a tool's log message reaches the client", f"{label}-N", self.seen)


async def encode(session: ClientSession, text: str) -> None:
    ran = await session.call_tool(
        "toolgate", {"command": "run", "slug": "base64-codec", "params": {"mode": "encode", "input": text}}
    )
    check(structured(ran).get("success") is True, f"run {text}", True, structured(ran))


async def run_checks(url: str) -> None:
    logs = Logs()
    async with streamable_http_client(url) as (read, write, *_):
        async with ClientSession(
            read,
            write,
            logging_callback=logs.receive,
            client_info=Implementation(name="python-fleet", version="1"),
        ) as session:
            init = await session.initialize()
            check(init.server_info.name == "toolgate", "initialize through the balancer", "toolgate", init.server_info.name)
            for i in range(3):
                await encode(session, f"before-{i}")
            await logs.reaches(session, "before")
            print("kill: now", flush=True)
            line = await anyio.to_thread.run_sync(sys.stdin.readline)
            check(line.strip() == "killed", "the test killed a replica", "killed", line)
            for i in range(4):
                await encode(session, f"after-{i}")
            history = structured(await session.call_tool("toolgate", {"command": "history"}))
            runs = history.get("runs", [])
            ids = [r["id"] for r in runs]
            numbered = [f"r{n}" for n in range(len(ids), 0, -1)]
            check(ids == numbered, "history numbers the session's runs in order across the kill", numbered, ids)
            codec = [r["id"] for r in runs if r.get("slug") == "base64-codec"]
            check(len(codec) == 7, "history holds all seven encodings across the kill", 7, runs)
            await logs.reaches(session, "after")
            # A call longer than the fleet's TOOLGATE_HTTP_SSE_POLL_MS: the server closes its
            # stream mid-call, the SDK resumes it with Last-Event-ID through the balancer.
            code = "await new Promise((r) => setTimeout(r, 2000)); return 'outlived its stream';"
            late = await session.call_tool("run_javascript", {"code": code})
            text = " ".join(getattr(c, "text", "") for c in late.content)
            check("outlived its stream" in text, "a call outlives its closed stream (SEP-1699 polling)", "outlived its stream", late)


async def main(url: str) -> int:
    return await reported(run_checks(url), GLOBAL_TIMEOUT_SECONDS)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(f"usage: {sys.argv[0]} URL", file=sys.stderr)
        sys.exit(2)
    sys.exit(anyio.run(main, sys.argv[1]))
