"""The terminal view of calls: one line per model or tool call as it is recognized.

ID is what ``agentshark show --call`` takes. COMPLETE says whether the whole call was seen
(the response arrived, its stream ended), never whether it succeeded: OUTPUT says that
(``ERROR 404 ...`` for an HTTP or API error, ``JSON-RPC ERROR -32601 ...`` for a JSON-RPC
error answer, ``TOOL ERROR ...`` for an MCP tool result with ``isError``). A call that is not
complete is followed by the reasons: its diagnostics, else those of its exchange. Cells are
cut to their width only when ``wide`` is off. After the last input, a summary line: the
number of calls, or "0 calls" and why, and the exchanges of API families recognized but not
parsed yet.
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
from agentshark.output.census import Census, plural, reasons
from agentshark.output.report import RenderOptions
from agentshark.pipeline import Item, SourceReport

_COLUMNS = (
    ("TIME", 12),
    ("ID", 7),
    ("API", 30),
    ("PROVIDER", 10),
    ("MODEL", 22),
    ("STREAM", 6),
    ("COMPLETE", 8),
    ("FINISH", 12),
    ("TOKENS", 11),
    ("OUTPUT", 60),
)


_MARGIN = 2048  # text redacted past a preview's cut, so a secret across it is still found


def _clip(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


class CallsTextWriter:
    wide = False  # never cut a cell (set by the CLI)

    def __init__(self, out: TextIO, opts: RenderOptions) -> None:
        self._out = opts.redactor.stream(out)  # every line redacted, whatever writes it
        self._redact = opts.redactor.text
        self._opts = opts
        self._header_done = False
        self._calls = 0
        self._unfinished: dict[str, list[Diagnostic]] = {}  # incomplete exchanges' reasons

    def _line(self, cells: list[str]) -> None:
        # Redacted before the cut: a cut secret no longer has the shape that finds it.
        parts = [
            _clip(self._redact(c), w).ljust(w) for c, (_, w) in zip(cells, _COLUMNS, strict=True)
        ]
        self._out.write(" ".join(parts).rstrip() + "\n")

    def _row(self, cells: list[str]) -> None:
        """A table line: cells cut to their column (:meth:`_line`), or whole when wide."""
        if not self.wide:
            return self._line(cells)
        parts = [" ".join(c.split()).ljust(w) for c, (_, w) in zip(cells, _COLUMNS, strict=True)]
        self._out.write(" ".join(parts).rstrip() + "\n")
        return None

    def write(self, item: Item) -> None:
        if isinstance(item, Call):
            if not self._header_done:
                self._row([name for name, _ in _COLUMNS])
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
            self._out.write(f"\n{item.path}: {item.format}, {exchanges}\n")
            for d in item.diagnostics:
                self._out.write(f"  ! {d.code}: {d.message}\n")

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
        self._row(
            [
                when,
                call.id,
                call.api if call.operation in (None, "chat") else f"{call.api} {call.operation}",
                call.provider or "-",
                model,
                "yes" if call.stream else "no",
                "yes" if call.complete else "NO",
                ",".join(call.finish_reasons) or "-",
                tokens,
                self._summary(call),
            ]
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
                elif isinstance(part, GenericPart):
                    bits.append(f"[{part.type}]")
        return " ".join(bits) or "-"

    def _reasons(self, call: Call) -> None:
        """Why ``call`` is not complete, as the JSON report has it."""
        # The exchange's causes (a gap, a cut head) before the call's own consequences.
        why = reasons([*self._unfinished.get(call.exchange_id, []), *call.diagnostics])
        for d in why:
            where = f" ({d.location})" if d.location else ""
            self._out.write(f"    ! {d.code}: {d.message}{where}\n")
        if not why:
            self._out.write(
                f"    ! incomplete: its exchange {call.exchange_id} did not end in the capture "
                "(see `agentshark exchanges`)\n"
            )
        self._unfinished.pop(call.exchange_id, None)

    def finish(self, census: Census, apis: tuple[str, ...] = ()) -> None:
        """After the last item: how many calls, or why none; the unparsed families."""
        w = self._out.write
        if self._calls:
            w(f"\n{plural(self._calls, 'call')}\n")
        else:
            w(f"\n0 calls: {census.why_no_calls(apis)}\n")
        for line in census.not_parsed_lines():
            w(f"  {line}\n")
        if self._calls:
            w(
                "COMPLETE: yes when the whole call was seen (its response ended); it says "
                "nothing of success, see OUTPUT\n"
            )


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
