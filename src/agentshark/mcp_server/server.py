"""``agentshark mcp-server``: agentshark as an MCP server (the official ``mcp`` SDK, 2.x).

Tools (each answers with structured JSON, and the same JSON as text content, per the MCP
spec's advice for structured tool output):

- ``list_captures(folder)``: the captures, HAR files, cassettes, transcripts and key logs
  under a folder of the root.
- ``list_traces(paths)``: the agent runs (traces) of some captures, one row each.
- ``show_trace(paths, trace_id)``: a trace as a tree: model calls, tool calls with where
  they ran and where their result went, the incidents of the trace.
- ``show_call(paths, call_id)``: one call's messages and parts, usage, error, timing.
- ``list_incidents(paths)``: the incidents found (filter by severity or rule).
- ``search_calls(paths, api, model, operation, tool, text, status)``: calls by what they are.
- ``diff_runs(before, after)``: what changed between two runs of the same agent
  (:mod:`agentshark.mcp_server.diff` defines it).

Every tool takes capture paths (``paths``: one or more files analyzed together, with
optional ``keylogs``), restricted to the server's root and cached
(:mod:`agentshark.mcp_server.captures`); listings are paged and strings clipped
(:mod:`agentshark.mcp_server.shape`). A tool that cannot answer (missing file, a path outside
the root, an id not in the capture, a bad filter) returns an MCP tool error (``isError``)
whose text says why. Everything goes through the redactor: the reports are made redacted
(unless the server runs with ``--no-redact``) and each answer is passed through it again.

Resources: ``agentshark://captures`` (the root's listing) and
``agentshark://report/{+path}``: the whole ``analyze --format json`` report of one capture
(for clients that read resources; it can be large, the tools are the bounded way).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

import orjson
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

from agentshark import __version__
from agentshark.mcp_server import tools
from agentshark.mcp_server.captures import Captures, PathRefusedError
from agentshark.mcp_server.diff import diff_reports
from agentshark.output.redact import redactor

Json = Any

__all__ = ["make_server"]

INSTRUCTIONS = """agentshark reads packet captures (pcap/pcapng, TLS decrypted with key logs), \
HAR files, VCR cassettes and MCP stdio transcripts of AI agents and answers what the agent \
sent and received: model calls with their messages, tool calls and where they ran, agent runs \
(traces), incidents (protocol mistakes, loops, failed tools). Start with list_captures, then \
list_traces or search_calls on a capture, then show_trace / show_call for detail; diff_runs \
compares two runs. Paths are relative to the server's root. Listings are paged: pass \
next_offset as offset for more. Credentials are redacted."""

Paths = Annotated[
    list[str],
    Field(description="capture files (relative to the root), analyzed together as one run"),
]
Keylogs = Annotated[
    list[str],
    Field(description="TLS key logs (SSLKEYLOGFILE) besides those beside the captures"),
]
Offset = Annotated[int, Field(description="first item of the page (next_offset of the last)")]
Limit = Annotated[int, Field(description="items per page (at most 200)")]
MaxChars = Annotated[int, Field(description="characters kept of each captured string")]
_READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False)


def make_server(captures: Captures) -> MCPServer:
    """The MCP server over ``captures`` (its root, key logs and redaction)."""
    server = MCPServer(
        "agentshark",
        instructions=INSTRUCTIONS,
        version=__version__,
        log_level="WARNING",
    )
    redact = redactor(captures.redact)

    def answer(make: Callable[[], dict[str, Json]]) -> CallToolResult:
        try:
            data = redact.json(make())
        except tools.ToolFailureError as exc:
            raise ToolError(redact.text(str(exc))) from None
        text = orjson.dumps(data, option=orjson.OPT_NON_STR_KEYS).decode()
        return CallToolResult(
            content=[TextContent(type="text", text=text)], structured_content=data
        )

    def tool(fn: Callable[..., CallToolResult]) -> None:
        server.add_tool(fn, annotations=_READ_ONLY, structured_output=False)

    def list_captures(folder: str = "", offset: Offset = 0, limit: Limit = 50) -> CallToolResult:
        """The captures, HAR files, VCR cassettes, MCP transcripts and TLS key logs under a
        folder of the root ("" is the root), with their detected format and size."""
        return answer(lambda: tools.list_captures(captures, folder, offset, limit))

    def list_traces(
        paths: Paths, keylogs: Keylogs | None = None, offset: Offset = 0, limit: Limit = 20
    ) -> CallToolResult:
        """The agent runs (traces) in the captures: calls, model and tool calls, models,
        tools, errors, incidents and the first prompt of each; and the capture's summary."""
        return answer(lambda: tools.list_traces(captures, paths, keylogs or [], offset, limit))

    def show_trace(
        paths: Paths,
        trace_id: Annotated[str, Field(description="a trace id from list_traces (or a prefix)")],
        keylogs: Keylogs | None = None,
        offset: Offset = 0,
        limit: Limit = 50,
        max_chars: MaxChars = 500,
    ) -> CallToolResult:
        """One trace as a tree (depth-first spans): the agent span, each model call with its
        status and finish reasons, each tool call with its arguments, where it ran (an MCP/
        A2A/HTTP call, or not seen on the wire) and which call got its result back."""
        return answer(
            lambda: tools.show_trace(
                captures, paths, keylogs or [], trace_id, offset, limit, max_chars
            )
        )

    def show_call(
        paths: Paths,
        call_id: Annotated[str, Field(description="a call id (call3) from search_calls")],
        keylogs: Keylogs | None = None,
        offset: Annotated[
            int, Field(description="first input message; negative counts from the end")
        ] = 0,
        limit: Limit = 20,
        max_chars: MaxChars = 2000,
    ) -> CallToolResult:
        """One call: system instructions, input messages (paged), output messages with every
        part (text, reasoning, tool calls with arguments, tool results), tool definitions,
        usage, error, ids, timing and diagnostics."""
        return answer(
            lambda: tools.show_call(
                captures, paths, keylogs or [], call_id, offset, limit, max_chars
            )
        )

    def list_incidents(
        paths: Paths,
        keylogs: Keylogs | None = None,
        severity: Annotated[str | None, Field(description="error, warning or info")] = None,
        rule: Annotated[str | None, Field(description="a rule or its family (mcp)")] = None,
        offset: Offset = 0,
        limit: Limit = 50,
        max_chars: MaxChars = 500,
    ) -> CallToolResult:
        """The incidents found in the captures: protocol mistakes, repeated tool calls,
        failed tools, cut streams..., each with its rule, severity, message and evidence."""
        return answer(
            lambda: tools.list_incidents(
                captures, paths, keylogs or [], severity, rule, offset, limit, max_chars
            )
        )

    def search_calls(
        paths: Paths,
        keylogs: Keylogs | None = None,
        api: Annotated[str | None, Field(description="openai.chat, or a family: openai")] = None,
        model: Annotated[str | None, Field(description="substring of the model")] = None,
        operation: Annotated[str | None, Field(description="chat, tools/call...")] = None,
        tool: Annotated[str | None, Field(description="a tool asked for or executed")] = None,
        text: Annotated[str | None, Field(description="substring of any text of the call")] = None,
        status: Annotated[str | None, Field(description="ok, error or incomplete")] = None,
        offset: Offset = 0,
        limit: Limit = 20,
    ) -> CallToolResult:
        """Calls matching every filter given (none: all calls), one summary each: api,
        model, status, finish reasons, tools, tokens, duration, text excerpts, trace."""
        return answer(
            lambda: tools.search_calls(
                captures,
                paths,
                keylogs or [],
                tools.call_filter(api, model, operation, tool, text, status),
                offset,
                limit,
            )
        )

    def diff_runs(
        before: Annotated[list[str], Field(description="the captures of the first run")],
        after: Annotated[list[str], Field(description="the captures of the second run")],
        keylogs: Keylogs | None = None,
        limit: Limit = 20,
        max_chars: MaxChars = 300,
    ) -> CallToolResult:
        """What changed between two runs of the same agent: model calls compared step by
        step (model, status, error, finish reasons, tool calls and arguments, system prompt,
        input messages, output text, tokens), tool call and other call counts, finish
        reasons, incidents by rule. Times and ids are not compared."""

        def make() -> dict[str, Json]:
            b = tools._report(captures, before, keylogs or [])
            a = tools._report(captures, after, keylogs or [])
            return {
                "before": tools._header(captures, b, before),
                "after": tools._header(captures, a, after),
                **diff_reports(b, a, limit=min(max(limit, 1), 200), max_chars=max_chars),
            }

        return answer(make)

    for fn in (
        list_captures,
        list_traces,
        show_trace,
        show_call,
        list_incidents,
        search_calls,
        diff_runs,
    ):
        tool(fn)
    _resources(server, captures)
    return server


def _resources(server: MCPServer, captures: Captures) -> None:
    redact = redactor(captures.redact)

    def listing() -> str:
        try:
            return orjson.dumps(redact.json(captures.listing(""))).decode()
        except PathRefusedError as exc:
            raise ResourceError(str(exc)) from None

    def report(path: str) -> str:
        try:
            return captures.report([path]).to_bytes().decode()
        except PathRefusedError as exc:
            raise ResourceError(str(exc)) from None

    server.resource(
        "agentshark://captures",
        name="captures",
        description="the captures, HAR files, cassettes, transcripts and key logs of the root",
        mime_type="application/json",
    )(listing)
    server.resource(
        "agentshark://report/{+path}",
        name="report",
        description="the analyze --format json report of one capture (path under the root)",
        mime_type="application/json",
    )(report)
