"""The terminal view of calls: one line per model or tool call as it is recognized."""

from __future__ import annotations

import time
from typing import TextIO

from agentshark.apis.model import Call, GenericPart, TextPart, ToolCallPart
from agentshark.output.report import RenderOptions
from agentshark.pipeline import Item, SourceReport

_COLUMNS = (
    ("TIME", 12),
    ("API", 30),
    ("PROVIDER", 10),
    ("MODEL", 22),
    ("STREAM", 6),
    ("OK", 3),
    ("FINISH", 12),
    ("TOKENS", 11),
    ("OUTPUT", 60),
)


_MARGIN = 2048  # text redacted past a preview's cut, so a secret across it is still found


def _clip(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


class CallsTextWriter:
    def __init__(self, out: TextIO, opts: RenderOptions) -> None:
        self._out = opts.redactor.stream(out)  # every line redacted, whatever writes it
        self._redact = opts.redactor.text
        self._opts = opts
        self._header_done = False
        self._calls = 0

    def _line(self, cells: list[str]) -> None:
        # Redacted before the cut: a cut secret no longer has the shape that finds it.
        parts = [
            _clip(self._redact(c), w).ljust(w) for c, (_, w) in zip(cells, _COLUMNS, strict=True)
        ]
        self._out.write(" ".join(parts).rstrip() + "\n")

    def write(self, item: Item) -> None:
        if isinstance(item, Call):
            if not self._header_done:
                self._line([name for name, _ in _COLUMNS])
                self._header_done = True
            self._calls += 1
            self._call(item)
        elif isinstance(item, SourceReport):
            if item.format == "keylog":
                return
            self._out.write(f"\n{item.path}: {item.format}, {item.exchanges} exchanges\n")
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
        self._line(
            [
                when,
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

    def _summary(self, call: Call) -> str:
        """Tool calls with an argument preview, then the first words of the answer, or the
        error."""
        if call.error is not None:
            e = call.error
            return f"ERROR {e.status or ''} {e.type or ''}: {e.message or ''}".strip()
        bits: list[str] = []
        for message in call.output_messages:
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


def _n(value: int | None) -> str:
    return "?" if value is None else str(value)
