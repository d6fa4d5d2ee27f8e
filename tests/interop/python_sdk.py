#!/usr/bin/env python3
"""Interop test: drive toolgate over stdio with the official MCP Python SDK.

Usage: python3 tests/interop/python_sdk.py PATH_TO_TOOLGATE_BINARY

Needs the SDK pinned in tests/requirements.txt (`pip install -r tests/requirements.txt`).
Prints one "ok: ..." line per check passed and exits 0. On the first failed check
it prints what was expected and what came back, and exits 1. Exits 2 when the
SDK is not installed or the usage is wrong.

The whole run is bounded by a global timeout, so it can never hang.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from typing import Any

try:
    import anyio
    from mcp import ClientSession, MCPError, StdioServerParameters, stdio_client
    from mcp.client import stdio as mcp_stdio
    from mcp.types import Implementation
except ImportError as exc:  # pragma: no cover - environment problem, not a test failure
    print(
        f"SETUP: the MCP Python SDK is not importable ({exc}); "
        "install it with `pip install -r tests/requirements.txt`",
        file=sys.stderr,
    )
    sys.exit(2)

GLOBAL_TIMEOUT_SECONDS = 60
REQUEST_TIMEOUT_SECONDS = 30


class CheckFailed(Exception):
    def __init__(self, what: str, expected: Any, got: Any) -> None:
        super().__init__(what)
        self.what = what
        self.expected = expected
        self.got = got


def ok(message: str) -> None:
    print(f"ok: {message}", flush=True)


def check(condition: bool, what: str, expected: Any, got: Any) -> None:
    if not condition:
        raise CheckFailed(what, expected, got)


def show(value: Any) -> str:
    """Render a value (pydantic model, dict, ...) for a failure message."""
    if hasattr(value, "model_dump"):
        value = value.model_dump(by_alias=True, mode="json", exclude_none=True)
    try:
        return json.dumps(value, indent=2, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return repr(value)


def text_of(result: Any) -> str:
    """All text content blocks of a CallToolResult, joined."""
    return "\n".join(
        block.text for block in result.content if getattr(block, "type", None) == "text"
    )


def server_parameters(binary: str) -> StdioServerParameters:
    # stdio_client spawns the server with get_default_environment() | params.env,
    # where the defaults are HOME, LOGNAME, PATH, SHELL, TERM and USER taken from
    # this process. Drop the ones other than PATH and HOME from our own environment
    # (this script does not need them) so the server really sees only
    # PATH, HOME and TOOLGATE_CATALOGUE.
    for key in mcp_stdio.DEFAULT_INHERITED_ENV_VARS:
        if key not in ("PATH", "HOME"):
            os.environ.pop(key, None)
    env = {
        "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", "/tmp"),
        "TOOLGATE_CATALOGUE": "embedded",
    }
    return StdioServerParameters(command=binary, args=[], env=env)


async def list_all_tools(session: ClientSession) -> list[Any]:
    from mcp.types import PaginatedRequestParams

    listing = await session.list_tools()
    tools = list(listing.tools)
    pages = 1
    while listing.next_cursor is not None:
        pages += 1
        check(pages <= 100, "tools/list pagination terminates", "at most 100 pages", f"{pages} pages")
        listing = await session.list_tools(params=PaginatedRequestParams(cursor=listing.next_cursor))
        tools.extend(listing.tools)
    return tools


async def call(session: ClientSession, name: str, arguments: dict[str, Any], what: str) -> Any:
    """tools/call that turns SDK-side failures into a CheckFailed with context."""
    try:
        return await session.call_tool(name, arguments)
    except MCPError as exc:
        raise CheckFailed(
            what,
            "a CallToolResult (tool-level errors belong in isError, not in a JSON-RPC error)",
            f"JSON-RPC error {exc.error.code}: {exc.error.message} data={show(exc.error.data)}",
        ) from exc
    except RuntimeError as exc:
        # ClientSession.call_tool re-validates a successful result's structuredContent
        # against the tool's advertised outputSchema and raises RuntimeError on mismatch.
        raise CheckFailed(
            what,
            "a result the SDK accepts (structuredContent conforming to the advertised outputSchema)",
            f"SDK rejected the result: {exc}",
        ) from exc


async def run_checks(binary: str) -> None:
    params = server_parameters(binary)
    async with stdio_client(params) as (read_stream, write_stream):
        async with ClientSession(
            read_stream,
            write_stream,
            read_timeout_seconds=REQUEST_TIMEOUT_SECONDS,
            client_info=Implementation(name="toolgate-python-sdk-interop", version="1.0.0"),
        ) as session:
            # 1. initialize
            init = await session.initialize()
            check(
                init.server_info.name == "toolgate",
                "initialize: serverInfo.name",
                "toolgate",
                show(init.server_info),
            )
            ok(
                f"initialize: server {init.server_info.name} {init.server_info.version}, "
                f"protocol {init.protocol_version}"
            )

            # 2. tools/list
            tools = await list_all_tools(session)
            names = [tool.name for tool in tools]
            check(bool(tools), "tools/list: at least one tool", "a non-empty list", names)
            check(names[0] == "toolgate", "tools/list: first tool", "toolgate (the meta-tool)", names)
            ok(f"tools/list: {len(tools)} tools, meta-tool 'toolgate' first")

            by_name = {tool.name: tool for tool in tools}
            check("env-validator" in by_name, "tools/list: env-validator listed", "env-validator", names)
            env_validator = by_name["env-validator"]
            required = env_validator.input_schema.get("required")
            check(
                isinstance(required, list) and "env_content" in required,
                "env-validator inputSchema.required",
                'a list containing "env_content"',
                show(env_validator.input_schema),
            )
            ok("env-validator: inputSchema requires env_content")
            output_schema = env_validator.output_schema
            check(
                isinstance(output_schema, dict) and output_schema.get("type") == "object",
                "env-validator outputSchema",
                'an object schema ({"type": "object", ...})',
                show(output_schema),
            )
            ok("env-validator: outputSchema is an object schema")
            check(
                isinstance(env_validator.title, str) and env_validator.title.strip() != "",
                "env-validator title",
                "a non-empty title",
                show(env_validator),
            )
            ok(f"env-validator: title {env_validator.title!r}")

            # 3. direct call; the SDK validates structuredContent against outputSchema
            what = "env-validator with valid env_content"
            result = await call(
                session, "env-validator", {"env_content": "DEBUG=true\nPORT=8080"}, what
            )
            check(result.is_error is False, f"{what}: isError", False, show(result))
            structured = result.structured_content
            check(isinstance(structured, dict), f"{what}: structuredContent", "an object", show(result))
            check(structured.get("success") is True, f"{what}: structuredContent.success", True, show(structured))
            inner = structured.get("result")
            check(
                isinstance(inner, dict) and inner.get("valid") is True,
                f"{what}: structuredContent.result.valid",
                True,
                show(structured),
            )
            check(text_of(result).strip() != "", f"{what}: text content", "non-empty text", show(result))
            ok(
                "env-validator call: isError false, success true, result.valid true, text present, "
                "structuredContent accepted by the SDK's outputSchema validation"
            )

            # 4. meta-tool run with a misspelt slug
            what = "toolgate run with slug 'env-validatr'"
            result = await call(
                session, "toolgate", {"command": "run", "slug": "env-validatr", "params": {}}, what
            )
            check(result.is_error is True, f"{what}: isError", True, show(result))
            structured = result.structured_content
            check(isinstance(structured, dict), f"{what}: structuredContent", "an object", show(result))
            check(
                structured.get("code") == "TOOL_NOT_FOUND",
                f"{what}: structuredContent.code",
                "TOOL_NOT_FOUND",
                show(structured),
            )
            check(
                structured.get("retryable") is False,
                f"{what}: structuredContent.retryable",
                False,
                show(structured),
            )
            check(
                "env-validator" in text_of(result),
                f"{what}: error text suggests the right slug",
                'text mentioning "env-validator"',
                show(result),
            )
            ok("meta-tool run with misspelt slug: TOOL_NOT_FOUND, not retryable, suggests env-validator")

            # 5. missing required field
            what = "env-validator with {}"
            result = await call(session, "env-validator", {}, what)
            check(result.is_error is True, f"{what}: isError", True, show(result))
            structured = result.structured_content
            check(isinstance(structured, dict), f"{what}: structuredContent", "an object", show(result))
            check(
                structured.get("code") == "INVALID_PARAMS",
                f"{what}: structuredContent.code",
                "INVALID_PARAMS",
                show(structured),
            )
            message = structured.get("error")
            check(
                isinstance(message, str) and "env_content" in message,
                f"{what}: error message names the missing field",
                'structuredContent.error mentioning "env_content"',
                show(structured),
            )
            ok("env-validator with missing env_content: INVALID_PARAMS naming env_content")

            # 6. a batch with a progress callback: an opening tick, then one per run
            what = "meta-tool batch of 3 with a progress callback"
            ticks: list[tuple[float, float | None]] = []

            async def on_progress(progress: float, total: float | None, message: str | None) -> None:
                ticks.append((progress, total))

            runs = [
                {"slug": "env-validator", "params": {"env_content": "A=1"}},
                {"slug": "slugify", "params": {"text": "Hello World"}},
                {"slug": "jwt-decoder", "params": {"token": "not-a-jwt"}},
            ]
            try:
                result = await session.call_tool(
                    "toolgate", {"command": "batch", "runs": runs}, progress_callback=on_progress
                )
            except MCPError as exc:
                raise CheckFailed(what, "a CallToolResult", f"JSON-RPC error {exc.error.message}") from exc
            structured = result.structured_content or {}
            check(
                (structured.get("total"), structured.get("succeeded"), structured.get("failed")) == (3, 2, 1),
                f"{what}: tally",
                "total 3, succeeded 2, failed 1 (the malformed JWT fails alone)",
                show(structured),
            )
            check(
                [p for p, _ in ticks] == [0, 1, 2, 3] and all(t == 3 for _, t in ticks),
                f"{what}: progress ticks",
                "progress 0, 1, 2, 3 of total 3",
                show(ticks),
            )
            ok("meta-tool batch: isolated failure, progress 0..3 of 3 through the SDK's callback")


def leaf_exceptions(exc: BaseException) -> list[BaseException]:
    """Flatten (nested) exception groups raised out of anyio task groups."""
    if isinstance(exc, BaseExceptionGroup):
        leaves: list[BaseException] = []
        for inner in exc.exceptions:
            leaves.extend(leaf_exceptions(inner))
        return leaves
    return [exc]


async def main(binary: str) -> int:
    try:
        with anyio.fail_after(GLOBAL_TIMEOUT_SECONDS):
            await run_checks(binary)
    except BaseException as exc:  # noqa: BLE001 - report everything, including groups
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        leaves = leaf_exceptions(exc)
        for leaf in leaves:
            if isinstance(leaf, CheckFailed):
                print(f"FAIL: {leaf.what}", flush=True)
                print(f"  expected: {leaf.expected}", flush=True)
                print(f"  got: {leaf.got}", flush=True)
                return 1
        if any(isinstance(leaf, TimeoutError) for leaf in leaves):
            print(f"FAIL: interop run did not finish within {GLOBAL_TIMEOUT_SECONDS}s", flush=True)
            return 1
        for leaf in leaves:
            print(f"FAIL: unexpected {type(leaf).__name__}: {leaf}", flush=True)
        print("  (the server's own stderr, if any, is shown on stderr; traceback follows)", flush=True)
        traceback.print_exception(exc)
        return 1
    print("ok: all checks passed", flush=True)
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(f"usage: {sys.argv[0]} PATH_TO_TOOLGATE_BINARY", file=sys.stderr)
        sys.exit(2)
    binary_path = os.path.abspath(sys.argv[1])
    if not (os.path.isfile(binary_path) and os.access(binary_path, os.X_OK)):
        print(f"FAIL: {binary_path} is not an executable file", flush=True)
        sys.exit(1)
    sys.exit(anyio.run(main, binary_path))
