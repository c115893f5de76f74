"""The terminal view of calls: one line per model or tool call as it is recognized.

ID is what ``agentshark show --call`` takes. COMPLETE says whether the whole call was seen
(the response arrived, its stream ended), never whether it succeeded: OUTPUT says that
(``ERROR 404 ...`` for an HTTP or API error, ``JSON-RPC ERROR -32601 ...`` for a JSON-RPC
error answer, ``TOOL ERROR ...`` for an MCP tool result with ``isError``). A call that is not
complete is followed by the reasons: its diagnostics, else those of its exchange. Cells are
cut to their width only when ``wide`` is off (never ID). After the last input, a summary
line: the number of calls, or "0 calls" and why, and the exchanges of API families recognized
but not parsed yet. The view builds its rows and lines once; a
:class:`~agentshark.output.screen.Screen` draws them, plain or with ``rich``: COMPLETE green or
yellow, errors red, reasons by severity.
"""

from __future__ import annotations

import time
from typing import TextIO

from agentshark.apis.model import (
    Call,
    GenericPart,
    Part,
    TextPart,
    ToolCallPart,
    ToolCallResponsePart,
)
from agentshark.errors import Diagnostic
from agentshark.model import Exchange
from agentshark.output.census import Census, plural, reasons, unsaid_reason
from agentshark.output.report import RenderOptions
from agentshark.output.screen import Column, PlainScreen, Screen, Table, Tone, severity_tone
from agentshark.pipeline import Item, SourceReport

TABLE = Table(
    columns=(
        Column(name="TIME", width=12, keep=True),
        Column(name="ID", width=7, keep=True),
        Column(name="API", width=30),
        Column(name="PROVIDER", width=10),
        Column(name="MODEL", width=22),
        Column(name="STREAM", width=6),
        Column(name="COMPLETE", width=8),
        Column(name="FINISH", width=12),
        Column(name="TOKENS", width=11),
        Column(name="OUTPUT", width=60, grow=True),
    ),
    squash=True,
)


_MARGIN = 2048  # text redacted past a preview's cut, so a secret across it is still found


class CallsTextWriter:
    wide = False  # never cut a cell (set by the CLI)

    def __init__(self, out: TextIO, opts: RenderOptions, screen: Screen | None = None) -> None:
        self._screen = screen if screen is not None else PlainScreen(out, opts.redactor)
        self._redact = opts.redactor.text
        self._opts = opts
        self._header_done = False
        self._calls = 0
        self._unfinished: dict[str, list[Diagnostic]] = {}  # incomplete exchanges' reasons

    def write(self, item: Item) -> None:
        if isinstance(item, Call):
            if not self._header_done:
                self._screen.header(TABLE, wide=self.wide)
                self._header_done = True
            self._calls += 1
            self._call(item)
        elif isinstance(item, Exchange):
            if not item.complete:
                self._unfinished[item.id] = list(item.diagnostics)
        elif isinstance(item, SourceReport):
            if item.format == "keylog":
                return
            exchanges = plural(item.exchanges, "exchange")
            self._screen.line()
            self._screen.line((f"{item.path}: ", "head"), (f"{item.format}, {exchanges}", None))
            for d in item.diagnostics:
                tone = severity_tone(d.severity)
                self._screen.line(("  ", None), (f"! {d.code}: {d.message}", tone))

    def _call(self, call: Call) -> None:
        started = call.timing.started
        when = (
            time.strftime("%H:%M:%S", time.gmtime(started)) + f".{started % 1:.3f}"[2:]
            if started
            else "-"
        )
        usage = call.usage
        tokens = f"{_n(usage.input_tokens)}/{_n(usage.output_tokens)}" if usage is not None else "-"
        model = call.response_model or call.request_model or "-"
        summary = self._summary(call)
        failed = call.error is not None or summary.startswith("TOOL ERROR")
        api = call.api if call.operation in (None, "chat") else f"{call.api} {call.operation}"
        self._screen.row(
            TABLE,
            [
                (when, "dim"),
                (call.id, "label"),
                (api, None),
                (call.provider or "-", "dim"),
                (model, "name"),
                ("yes" if call.stream else "no", None),
                ("yes", "ok") if call.complete else ("NO", "incomplete"),
                (",".join(call.finish_reasons) or "-", None),
                (tokens, None),
                (summary, "error" if failed else None),
            ],
            wide=self.wide,
        )
        if not call.complete:
            self._reasons(call)

    def _summary(self, call: Call) -> str:
        """Tool calls with an argument preview, then the first words of the answer, or the
        error."""
        if call.error is not None:
            return error_text(call)
        bits: list[str] = []
        for message in call.output_messages:
            if any(_is_error(p) for p in message.parts):
                bits.append("TOOL ERROR (isError):")
            for part in message.parts:
                if isinstance(part, ToolCallPart):
                    args = part.arguments_raw
                    if args is None and part.arguments is not None:
                        args = str(self._opts.redactor.json(part.arguments))
                    bits.append(f"{part.name}({self._redact(args or '')[:40]})")
                elif isinstance(part, TextPart) and part.content.strip():
                    bits.append(repr(self._redact(part.content.strip()[:_MARGIN])[:80]))
                elif isinstance(part, GenericPart) and part.type == "document":
                    docs = [p for p in message.parts if isinstance(p, GenericPart)]
                    bits.append(_documents(docs))
                    break  # a retrieval result: one summary for its documents
                elif isinstance(part, GenericPart):
                    bits.append(f"[{part.type}]")
        return " ".join(bits) or "-"

    def _reasons(self, call: Call) -> None:
        """Why ``call`` is not complete, as the JSON report has it."""
        # The exchange's causes (a gap, a cut head) before the call's own consequences.
        why = reasons([*self._unfinished.get(call.exchange_id, []), *call.diagnostics])
        for d in why:
            where = f" ({d.location})" if d.location else ""
            tone: Tone = "error" if d.severity == "error" else "incomplete"
            self._screen.line(("    ", None), (f"! {d.code}: {d.message}{where}", tone))
        if not why:
            text = unsaid_reason(call)
            if text.startswith("its exchange"):
                text += " (see `agentshark exchanges`)"
            self._screen.line(
                ("    ", None),
                (f"! incomplete: {text}", "incomplete"),
            )
        self._unfinished.pop(call.exchange_id, None)

    def finish(self, census: Census, apis: tuple[str, ...] = ()) -> None:
        """After the last item: how many calls, or why none; the unparsed families."""
        line = self._screen.line
        line()
        if self._calls:
            line((plural(self._calls, "call"), "head"))
        else:
            line((f"0 calls: {census.why_no_calls(apis)}", "incomplete"))
        for text in census.not_parsed_lines():
            line((f"  {text}", "incomplete"))
        if self._calls:
            line(
                (
                    "COMPLETE: yes when the whole call was seen (its response ended); it says "
                    "nothing of success, see OUTPUT",
                    "dim",
                )
            )
        self._screen.flush()


def error_text(call: Call) -> str:
    """A call's error as a user reads it: a JSON-RPC error by its code, not as "ERROR 200"."""
    e = call.error
    assert e is not None
    message = e.message or "(no message)"
    if e.type == "jsonrpc":
        status = f" (HTTP {e.status})" if e.status and e.status >= 400 else ""
        return f"JSON-RPC ERROR {e.code or '?'}{status}: {message}"
    head = " ".join(str(x) for x in (e.status, e.type, e.code) if x)
    return f"ERROR {head}: {message}" if head else f"ERROR: {message}"


def _is_error(part: Part) -> bool:
    """An MCP tool result (or a hosted tool call's) flagged as an error by the server."""
    return isinstance(part, ToolCallResponsePart) and part.provider_details.get("is_error") is True


def _n(value: int | None) -> str:
    return "?" if value is None else str(value)


def _documents(parts: list[GenericPart]) -> str:
    """A retrieval result: ``3 docs: d4 0.21, d1 0.32, …`` (the first ids and scores)."""
    shown = []
    for part in parts[:3]:
        doc_id, score = part.fields.get("id"), part.fields.get("score")
        score_text = f" {score:.3g}" if isinstance(score, int | float) else ""
        shown.append(f"{str(doc_id)[:24]}{score_text}")
    more = ", …" if len(parts) > 3 else ""
    return f"{len(parts)} doc{'s' if len(parts) != 1 else ''}: {', '.join(shown)}{more}"
