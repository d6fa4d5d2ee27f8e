#!/usr/bin/env python3
"""Interop test: the official MCP Python SDK's Streamable HTTP client as a host that can
sample and elicit, against `toolgate --http` serving the conformance fixture catalogue
(tests/fixtures/conformance): catalogue tools that log, report progress, ask the client to
sample and elicit, and return image content; catalogue resources and prompts.

Usage: python3 tests/interop/python_tool_client.py URL

Prints one "ok: ..." line per check and "ok: all checks passed" at the end (exit 0); on
the first failure prints FAIL with what was expected and what came back (exit 1).
"""

from __future__ import annotations

import sys
from typing import Any

try:
    import anyio
    from mcp import ClientSession, types
    from mcp.client.streamable_http import streamable_http_client
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


def first_text(result: Any) -> str:
    for block in result.content:
        if getattr(block, "type", None) == "text":
            return block.text
    return ""


asked: list[Any] = []
logged: list[Any] = []


async def sample(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
    asked.append(params)
    return types.CreateMessageResult(
        role="assistant", content=types.TextContent(type="text", text="sampled in python"), model="test-model"
    )


async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
    asked.append(params)
    return types.ElicitResult(action="accept", content={"username": "grace", "email": "grace@example.org"})


async def log(params: types.LoggingMessageNotificationParams) -> None:
    logged.append(params.data)


async def run_checks(url: str) -> None:
    async with streamable_http_client(url) as (read, write, *_):
        async with ClientSession(
            read, write, sampling_callback=sample, elicitation_callback=elicit, logging_callback=log
        ) as session:
            await session.initialize()
            said = first_text(await session.call_tool("test_sampling", {"prompt": "name a colour"}))
            check(said == "LLM response: sampled in python", "a tool's sampling request reaches the host", "LLM response: sampled in python", said)
            said = first_text(await session.call_tool("test_elicitation", {"message": "who are you?"}))
            check("action=accept" in said and "grace@example.org" in said, "a tool's elicitation reaches the host", "action=accept ... grace", said)
            ticks: list[float] = []

            async def progress(value: float, total: float | None, message: str | None) -> None:
                ticks.append(value)

            await session.call_tool("test_tool_with_progress", {}, progress_callback=progress)
            check(ticks == [0, 50, 100], "a tool's progress reaches the call", [0, 50, 100], ticks)
            await session.call_tool("test_tool_with_logging", {})
            with anyio.fail_after(30):
                while len(logged) < 3:
                    await anyio.sleep(0.01)
            check(logged[:3] == ["Tool execution started", "Tool processing data", "Tool execution completed"],
                  "a tool's log messages reach the host in order", "three messages", logged)
            image = await session.call_tool("test_image_content", {})
            kinds = [b.type for b in image.content]
            check(kinds == ["image"] and image.content[0].mime_type == "image/png", "image content arrives as an image", ["image"], kinds)
            read = await session.read_resource("test://template/42/data")
            check('"id":"42"' in read.contents[0].text, "a catalogue resource template is read", '"id":"42"', read.contents)
            prompt = await session.get_prompt("test_prompt_with_arguments", {"arg1": "a", "arg2": "b"})
            check(prompt.messages[0].content.text == "Prompt with arguments: arg1='a', arg2='b'",
                  "a catalogue prompt fills its arguments", "arg1='a', arg2='b'", prompt.messages)


async def main(url: str) -> int:
    try:
        with anyio.fail_after(GLOBAL_TIMEOUT_SECONDS):
            await run_checks(url)
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


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(f"usage: {sys.argv[0]} URL", file=sys.stderr)
        sys.exit(2)
    sys.exit(anyio.run(main, sys.argv[1]))
