#!/usr/bin/env python3
"""A small upstream MCP server on the official Python SDK, for tests/upstream.rs.

Usage: python3 tests/upstream/py_server.py STATE_DIR

It speaks MCP over stdio and keeps what the tests steer in STATE_DIR:

- it refuses to start (exit 3) while STATE_DIR/down exists, so a test holds it down
  for as long as it needs, with no timing involved;
- it writes its pid to STATE_DIR/pid, so a test can wait for it to exit;
- `echo`'s description is the text of STATE_DIR/echo_description when it exists;
- each start is counted in STATE_DIR/starts; from its second start on it also offers
  the tool `came_back`, so toolgate's relisting after a restart is a tools/list_changed
  a test can wait for.

Tools: `echo`, `shout` (structured output), `env` (reads its environment), `add_tool`
(adds a tool at run time and says tools/list_changed), `crash` (exits at once, and
with `stay_down` first creates STATE_DIR/down), `fail` (answers isError), and
`wait_for_cancel` / `was_cancelled` (a call that only a cancellation ends, and whether
one did), `hang` (stops answering anything, pings included), `chatty` (logs) and
`ticks` (progress reported back to back, then the answer), `trace_context` (the
`traceparent` its call carried in `_meta` and, over HTTP, in its headers).

For routing checks: `late_log` answers at once and, once a later call has reached the
server (`hold` or `poke`), sends a log message and a progress notification under its own
(ended) call's token; `hold` stays in flight until that late message has been sent
(with `announce`, it logs `holding` first), `poke` answers at once. `big` answers with a text of the given size (an answer over
toolgate's cap).

With `--http PORT` (and `--json` for plain JSON answers) it serves Streamable HTTP on
127.0.0.1:PORT instead of stdio; with STATE_DIR/hang_start present it never answers
`initialize` (it never starts serving).
"""

from __future__ import annotations

import asyncio
import argparse
import os
import sys
import time
from pathlib import Path

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

parser = argparse.ArgumentParser()
parser.add_argument("state")
parser.add_argument("--http", type=int)
parser.add_argument("--json", action="store_true")
options = parser.parse_args()
state = Path(options.state)
if (state / "down").exists():
    print("py_server: held down by the test", file=sys.stderr)
    sys.exit(3)
starts_file = state / "starts"
starts = int(starts_file.read_text()) + 1 if starts_file.exists() else 1
starts_file.write_text(str(starts))
(state / "pid").write_text(str(os.getpid()))

server = MCPServer("py-upstream")


# A test changes `echo`'s description between two starts through STATE_DIR/echo_description
# (an upstream redefining a tool it was approved with).
echo_file = state / "echo_description"
ECHO_DESCRIPTION = echo_file.read_text() if echo_file.exists() else "Echoes the given text back, unchanged."


@server.tool(description=ECHO_DESCRIPTION)
def echo(text: str) -> str:
    return text


@server.tool(title="Shout", description="Turns words into capitals and counts them.")
def shout(words: str) -> dict[str, object]:
    return {"loud": words.upper(), "count": len(words.split())}


@server.tool(description="Reports which of the named environment variables are set, and their values.")
def env(names: list[str]) -> dict[str, str | None]:
    return {n: os.environ.get(n) for n in names}


@server.tool(description="Adds a tool that answers with a fixed word, then tells the client the tool list changed.")
async def add_tool(name: str, word: str, ctx: Context) -> str:
    def added() -> str:
        return word

    server.add_tool(added, name=name, description=f"Answers {word}.")
    await ctx.session.send_tool_list_changed()
    return f"added {name}"


@server.tool(description="Ends this server's process at once, as a crash would.")
def crash(stay_down: bool = False) -> str:
    if stay_down:
        (state / "down").write_text("")
    os._exit(1)


cancelled = asyncio.Event()


@server.tool(description="Reports progress 0, then waits until the call is cancelled.")
async def wait_for_cancel(ctx: Context) -> str:
    await ctx.report_progress(0, 1)
    try:
        await asyncio.sleep(3600)
    except asyncio.CancelledError:
        cancelled.set()
        raise
    return "never cancelled"


@server.tool(description="Answers true once a wait_for_cancel call was cancelled (false after 30 s).")
async def was_cancelled() -> bool:
    try:
        await asyncio.wait_for(cancelled.wait(), 30)
        return True
    except asyncio.TimeoutError:
        return False


@server.tool(description="Blocks the whole server (its event loop included) for an hour: it stops answering.")
async def hang() -> str:
    time.sleep(3600)
    return "woke"


@server.tool(description="Logs the message to the client (at info level unless told), then answers done.")
async def chatty(message: str, ctx: Context, level: str = "info") -> str:
    await ctx.log(level, message, logger_name="py")
    return "done"


@server.tool(description="Reports progress 1 to count of count, back to back, then answers done.")
async def ticks(count: int, ctx: Context) -> str:
    for i in range(1, count + 1):
        await ctx.report_progress(i, count)
    return "done"


@server.tool(description="Always fails with the given message.")
def fail(message: str) -> str:
    raise ToolError(message)


# A later call reached the server (`hold` or `poke`); the late message has been sent.
later_call = asyncio.Event()
late_sent = asyncio.Event()


@server.tool(description="Answers at once; once a later call arrives, logs the message and reports progress late.")
async def late_log(message: str, ctx: Context) -> str:
    session = ctx.request_context.session
    meta = ctx.request_context.meta or {}
    token = meta.get("progress_token", meta.get("progressToken"))

    async def later() -> None:
        await later_call.wait()
        later_call.clear()
        await session.send_log_message(level="warning", data=message, logger="late")
        if token is not None:
            await session.send_progress_notification(token, 99, 100, message)
        late_sent.set()

    asyncio.get_running_loop().create_task(later())
    return "answered"


@server.tool(description="Lets a late_log message go, and answers once it has been sent (logs `holding` first when asked).")
async def hold(ctx: Context, announce: bool = False) -> str:
    if announce:
        await ctx.log("info", "holding", logger_name="py")
    late_sent.clear()
    later_call.set()
    await late_sent.wait()
    return "released"


@server.tool(description="Lets a late_log message go, and answers at once.")
def poke() -> str:
    later_call.set()
    return "poked"


@server.tool(description="Reports the W3C trace context the call carried: in its _meta, and over HTTP in its headers.")
def trace_context(ctx: Context) -> dict[str, str | None]:
    meta = ctx.request_context.meta or {}
    if not isinstance(meta, dict):
        meta = meta.model_dump() if hasattr(meta, "model_dump") else dict(meta)
    request = getattr(ctx.request_context, "request", None)
    headers = getattr(request, "headers", None) or {}
    return {
        "meta": meta.get("traceparent"),
        "header": headers.get("traceparent"),
    }


@server.tool(description="Answers with a text of `size` characters.")
def big(size: int) -> str:
    return "x" * size


if starts > 1:

    @server.tool(description="Exists only after a restart.")
    def came_back() -> int:
        return starts


if (state / "hang_start").exists():
    # Never answers initialize: reads nothing, writes nothing, until it is killed.
    time.sleep(3600)
if options.http is not None:
    server.run("streamable-http", host="127.0.0.1", port=options.http, json_response=options.json)
else:
    server.run("stdio")
