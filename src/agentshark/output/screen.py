"""What the text views draw, and the plain form of it: styled lines, table rows, trees.

The views (:mod:`~agentshark.output.text`, :mod:`~agentshark.output.calls_text`,
:mod:`~agentshark.output.trace_text`, :mod:`~agentshark.output.show`) build their content
once, as :data:`Line` values (segments of text, each with a :data:`Tone` that says what it
means: an error, an incomplete call, a secondary fact), table rows of a :class:`Table` and
trees of :class:`Node`; a :class:`Screen` draws them. :class:`PlainScreen` writes the
plain text the views always wrote (what the golden and view tests read; tones are dropped);
:class:`agentshark.output.term.RichScreen` draws the same text with ``rich`` on a terminal.

Both go through the one :class:`~agentshark.output.redact.Redactor` (the plain form writes to
its line stream, the rich form checks each line against it) and both escape C0 and C1 control
characters (:func:`neutralize`): captured text (a model name, a tool name, a URL) must not drive
the terminal.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol, TextIO

from agentshark.output.redact import Redactor

Tone = Literal["error", "incomplete", "ok", "dim", "head", "label", "name"]
"""What a segment means: ``error`` (red), ``incomplete`` (yellow: not the whole thing was
seen, or a warning), ``ok`` (green), ``dim`` (a secondary fact), ``head`` (a title),
``label`` (the name of a field or part), ``name`` (a tool or model name)."""

Seg = tuple[str, Tone | None]
Line = tuple[Seg, ...]

# C0 (but tab and line feed), DEL, C1: escaped as \xNN. ESC starts every terminal control
# sequence; C1's CSI (0x9b) and OSC (0x9d) do alone on some terminals.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def neutralize(text: str) -> str:
    """``text`` with CRLF read as LF and every other control character but tab and LF shown
    as its escape (``\\x1b``), so that captured text cannot drive the terminal."""
    if "\r\n" in text:
        text = text.replace("\r\n", "\n")
    if _CONTROL.search(text) is None:
        return text
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1], text)


COLOR_CHOICES = ("auto", "always", "never")


def use_color(mode: str, stream: TextIO, environ: Mapping[str, str]) -> bool:
    """Whether to draw with ``rich`` on ``stream`` for ``--color mode``: always, never, or
    (``auto``) when ``NO_COLOR`` is not set (https://no-color.org: set and not empty) and
    ``FORCE_COLOR`` is, or ``stream`` is a terminal whose ``TERM`` is not ``dumb``."""
    if mode != "auto":
        return mode == "always"
    if environ.get("NO_COLOR"):
        return False
    if environ.get("FORCE_COLOR"):
        return True
    if environ.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty is not None and isatty())


def plain(line: Line) -> str:
    return "".join(text for text, _ in line)


def severity_tone(severity: str) -> Tone:
    """A diagnostic's or incident's tone: errors red, warnings yellow, the rest dim."""
    return "error" if severity == "error" else "incomplete" if severity == "warning" else "dim"


@dataclass(frozen=True, slots=True, kw_only=True)
class Column:
    name: str
    width: int  # the plain form's width; a cut cell is this long
    grow: bool = False  # takes a terminal's spare width (rich form)
    keep: bool = False  # never cut, never narrowed (an id or time another command takes)


@dataclass(frozen=True, slots=True, kw_only=True)
class Table:
    columns: tuple[Column, ...]
    squash: bool = False  # whitespace runs in a cell read as one space


@dataclass(slots=True, kw_only=True)
class Node:
    """A tree node; ``label`` None is a level that is not drawn (its children keep their
    indent, as the spans of a trace without an agent span do)."""

    label: Line | None
    children: list[Node] = field(default_factory=list)


class Screen(Protocol):
    """Where a view draws. ``width`` is the terminal's, or None for the plain form."""

    @property
    def width(self) -> int | None: ...

    def line(self, *segs: Seg) -> None:
        """One line (no segments: an empty line)."""

    def lines(self, lines: Sequence[Line]) -> None:
        """A block of lines, redacted as one text."""

    def header(self, table: Table, *, wide: bool) -> None: ...

    def row(self, table: Table, cells: Sequence[Seg], *, wide: bool) -> None:
        """A table row: one cell per column; ``wide`` never cuts a cell."""

    def tree(self, root: Node) -> None: ...

    def flush(self) -> None: ...


def clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def cells_text(table: Table, cells: Sequence[Seg], redactor: Redactor, *, wide: bool) -> list[str]:
    """The text of each cell as the plain form shows it: squashed when the table says so;
    unless ``wide``, redacted (before the cut: a cut secret no longer has the shape that finds
    it) and cut to its column."""
    out: list[str] = []
    for (text, _), column in zip(cells, table.columns, strict=True):
        if not wide:
            text = redactor.text(text)
        if table.squash:
            text = " ".join(text.split())
        text = neutralize(text)
        out.append(text if wide or column.keep else clip(text, column.width))
    return out


def row_text(table: Table, texts: Sequence[str]) -> str:
    parts = [t.ljust(c.width) for t, c in zip(texts, table.columns, strict=True)]
    return " ".join(parts).rstrip()


def tree_lines(root: Node) -> Iterable[tuple[str, str, Line]]:
    """``(prefix, continuation, label)`` of every drawn node, depth first: the guides
    before its label, and those before a wrapped label's further lines."""
    if root.label is not None:
        yield "", "", root.label
    yield from _branches(root.children, "")


def _branches(nodes: Sequence[Node], guides: str) -> Iterable[tuple[str, str, Line]]:
    for i, node in enumerate(nodes):
        last = i == len(nodes) - 1
        if node.label is not None:
            yield (
                guides + ("└─ " if last else "├─ "),
                guides + ("   " if last else "│  "),
                node.label,
            )
        yield from _branches(node.children, guides + ("   " if last else "│  "))


class PlainScreen:
    """The plain text: what the views write when not on a terminal, with ``NO_COLOR`` or
    ``--color never``; tones are dropped, every line goes out through the redactor's line
    stream."""

    def __init__(self, out: TextIO, redactor: Redactor) -> None:
        self._out = redactor.stream(out)  # every line redacted, whatever writes it
        self._redactor = redactor

    @property
    def width(self) -> int | None:
        return None

    def line(self, *segs: Seg) -> None:
        self._out.write(neutralize(plain(segs)) + "\n")

    def lines(self, lines: Sequence[Line]) -> None:
        self._out.write("\n".join(neutralize(plain(ln)) for ln in lines) + "\n")

    def header(self, table: Table, *, wide: bool) -> None:
        self.row(table, [(c.name, "head") for c in table.columns], wide=wide)

    def row(self, table: Table, cells: Sequence[Seg], *, wide: bool) -> None:
        texts = cells_text(table, cells, self._redactor, wide=wide)
        self._out.write(row_text(table, texts) + "\n")

    def tree(self, root: Node) -> None:
        for prefix, _, label in tree_lines(root):
            self._out.write(prefix + neutralize(plain(label)) + "\n")

    def flush(self) -> None:
        self._out.flush()
