"""The terminal form of the text views: the lines, rows and trees a view builds
(:mod:`agentshark.output.screen`), drawn with ``rich``.

When it is used (:func:`agentshark.output.screen.use_color`): ``--color always``; never with
``--color never``; with ``--color auto`` (the default) when ``NO_COLOR`` is not set
(https://no-color.org: set and not empty), and ``FORCE_COLOR`` is set, or the output is a
terminal whose ``TERM`` is not ``dumb``. Otherwise the views write their plain text
(:class:`~agentshark.output.screen.PlainScreen`). This module alone imports ``rich``, and only
when it draws.

What it draws is the plain form's text, never more:

* **Colour means something**: errors red, incomplete (and warnings) yellow, complete green,
  secondary facts dim, titles bold (:data:`STYLES`, by the view's tones).
* **Tables fit the terminal**: columns narrowed to its width (widest first, never an id or a
  time, never under their heading), cells that do not fit wrapped or folded within their
  column, never cut; a cut happens only where the plain form cuts (a terminal without
  ``--wide``), and ``--wide`` gives growing columns the spare width.
* **Trees** with guide lines, a label too long for the terminal wrapped under itself.
* **Redaction**: every line (every table row, every block of :meth:`RichScreen.lines`) is
  checked against the one redactor on the exact text the plain form would write; when it
  would change that text, the redacted text is drawn (unstyled if the change crosses styles).
* **Captured text is never markup**: content goes into ``rich`` as
  :class:`~rich.text.Text` (markup, emoji codes and highlighting are off on the console too),
  and control characters are escaped (:func:`~agentshark.output.screen.neutralize`) before.

Rows are laid out here rather than by :class:`rich.table.Table`, which re-measures every cell
of a table at each print (several ms a row): the views print each row as its call or exchange
is recognized, thousands of them on a large capture.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from typing import TextIO

from rich.cells import cell_len
from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    TaskID,
    TaskProgressColumn,
    TextColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)
from rich.segment import Segment, Segments
from rich.style import Style
from rich.text import Text

from agentshark.output.redact import Redactor
from agentshark.output.screen import (
    Line,
    Node,
    Seg,
    Table,
    Tone,
    cells_text,
    neutralize,
    plain,
    row_text,
    tree_lines,
)

STYLES: dict[Tone, str] = {
    "error": "red",
    "incomplete": "yellow",
    "ok": "green",
    "dim": "dim",
    "head": "bold",
    "label": "cyan",
    "name": "magenta",
}
_STYLE = {tone: Style.parse(style) for tone, style in STYLES.items()}
_GUIDE = Style.parse("dim")


class _Console(Console):
    def on_broken_pipe(self) -> None:
        """A reader that stopped (``| head``) ends the run as it does the plain form's (the
        CLI's BrokenPipeError, exit 0), not with rich's exit status 1."""
        try:
            super().on_broken_pipe()  # quiet from now on, stdout onto /dev/null
        except SystemExit:
            raise BrokenPipeError from None


def console(file: TextIO | None = None, *, stderr: bool = False) -> Console:
    """A console that draws colour (the caller decided it should), reads no markup, emoji
    codes or highlights into text. ``file`` None follows ``sys.stdout`` (or ``sys.stderr``)
    as it is at each write, so that a progress bar can redirect it. Its size is the
    terminal's when made (rich would ask the OS at each print)."""
    made = _Console(
        file=file,
        stderr=stderr,
        force_terminal=True,
        no_color=False,
        markup=False,
        emoji=False,
        highlight=False,
    )
    made.size = made.size
    return made


def fit(table: Table, total: int, *, wide: bool, sample: Sequence[str] | None = None) -> list[int]:
    """Column widths for a terminal ``total`` cells wide. From the plain widths, or, given
    the ``sample`` of a first row, from what its cells take (never under a heading, never
    over the plain width; ``keep`` columns keep theirs): spare width goes back to the
    ``grow`` columns, then a cell at a time to the others, up to their plain widths (with
    ``wide``, the rest to the ``grow`` columns); a row too wide narrows the widest column
    first (a ``grow`` column counts half its width, so it keeps about twice the others';
    never a ``keep`` column, never under its heading) until it fits."""
    columns = table.columns
    floor = [max(len(c.name), 3) for c in columns]
    widths = [c.width for c in columns]
    if sample is not None:
        widths = [
            c.width if c.keep else max(floor[i], min(c.width, _cells(text)))
            for i, (c, text) in enumerate(zip(columns, sample, strict=True))
        ]
    spare = total - (len(columns) - 1) - sum(widths)
    growing = [i for i, c in enumerate(columns) if c.grow]
    for i in growing:
        back = max(min(spare, columns[i].width - widths[i]), 0)
        widths[i] += back
        spare -= back
    others = [i for i in range(len(columns)) if i not in growing]
    while spare > 0 and (short := [i for i in others if widths[i] < columns[i].width]):
        for i in short[:spare]:  # one cell each in turn
            widths[i] += 1
            spare -= 1
    if spare > 0 and wide and growing:
        share, rest = divmod(spare, len(growing))
        for n, i in enumerate(growing):
            widths[i] += share + (1 if n < rest else 0)
        return widths
    narrow = [i for i, c in enumerate(columns) if not c.keep]
    while spare < 0:
        room = [i for i in narrow if widths[i] > floor[i]]
        if not room:
            break  # the terminal is narrower than the headings: it wraps the rows itself
        widest = max(room, key=lambda i: widths[i] / (2 if columns[i].grow else 1))
        widths[widest] -= 1
        spare += 1
    return widths


class RichScreen:
    """A :class:`~agentshark.output.screen.Screen` drawn with ``rich`` on ``console``."""

    def __init__(self, console: Console, redactor: Redactor, *, batch: bool = False) -> None:
        """``batch``: hold what is drawn until :meth:`flush` (or a few thousand pieces), for
        views that draw once at the end (``analyze``, ``show``); else each row and line goes
        out as it comes, as the input is read."""
        self._console = console
        self._redactor = redactor
        self._batch = batch
        self._held: list[Segment] = []
        self._header: tuple[Table, bool] | None = None  # to draw with the first row
        self._widths: dict[tuple[int, bool], list[int]] = {}
        self._width = console.width  # the terminal's at the start (rich asks the OS each time)

    @property
    def width(self) -> int | None:
        return self._width

    # --- redaction: the plain form's text, checked as the plain form's line stream does ---

    def _safe(self, lines: Sequence[Line]) -> list[Line]:
        """``lines`` neutralized, and redacted as their text is when written as one."""
        clean = [tuple((neutralize(t), tone) for t, tone in line) for line in lines]
        if not self._redactor.enabled:
            return clean
        block = "\n".join(plain(line) for line in clean)
        redacted = self._redactor.text(block)
        if redacted == block:
            return clean
        each = [tuple((self._redactor.text(t), tone) for t, tone in line) for line in clean]
        if "\n".join(plain(line) for line in each) == redacted:
            return each
        return [((text, None),) for text in redacted.split("\n")]

    def _text(self, line: Line) -> Text:
        text = Text()
        for part, tone in line:
            text.append(part, STYLES[tone] if tone else None)
        return text

    def _wrapped(self, line: Line, prefix: str = "", continuation: str = "") -> list[Segment]:
        """``line`` after the guides ``prefix``, as segments: as it is when it fits the
        terminal, else word-wrapped (long words folded) with ``continuation`` before each
        further line."""
        width = self._width
        if _cells(prefix) + sum(_cells(t) for t, _ in line) <= width:
            out = [Segment(prefix, _GUIDE)] if prefix else []
            out += [Segment(t, _STYLE[tone] if tone else None) for t, tone in line if t]
            return out
        out = []
        room = max(width - cell_len(continuation), 20)
        for n, piece in enumerate(self._text(line).wrap(self._console, room, overflow="fold")):
            if n:
                out.append(Segment.line())
            guides = continuation if n else prefix
            if guides:
                out.append(Segment(guides, _GUIDE))
            out += piece.render(self._console)
        return out

    def _print(self, lines: Sequence[list[Segment]]) -> None:
        held = self._held
        for n, segments in enumerate(lines):
            if n:
                held.append(Segment.line())
            held += segments
        held.append(Segment.line())  # a renderable ends its own lines
        if not self._batch or len(held) > 4096:
            self._release()

    def _release(self) -> None:
        if self._held:
            self._console.print(Segments(self._held), soft_wrap=True)
            self._held = []

    def line(self, *segs: Seg) -> None:
        (safe,) = self._safe([segs])
        self._print([self._wrapped(safe)])

    def lines(self, lines: Sequence[Line]) -> None:
        self._print([self._wrapped(line) for line in self._safe(lines)])

    # --- tables ----------------------------------------------------------------------------

    def _fitted(self, table: Table, wide: bool, sample: Sequence[str] | None = None) -> list[int]:
        key = (id(table), wide)
        if key not in self._widths:
            self._widths[key] = fit(table, self._width, wide=wide, sample=sample)
        return self._widths[key]

    def header(self, table: Table, *, wide: bool) -> None:
        """Drawn with the first row, whose cells size the columns."""
        self._header = (table, wide)

    def _draw_header(self, sample: Sequence[str] | None) -> None:
        if self._header is not None:
            table, wide = self._header
            self._header = None
            self._fitted(table, wide, sample)
            self._draw(table, [(c.name, "head") for c in table.columns], wide=wide)

    def row(self, table: Table, cells: Sequence[Seg], *, wide: bool) -> None:
        texts = cells_text(table, cells, self._redactor, wide=wide)
        if self._redactor.enabled:
            joined = row_text(table, texts)
            redacted = self._redactor.text(joined)
            if redacted != joined:
                texts = [self._redactor.text(t) for t in texts]
                if row_text(table, texts) != redacted:  # a secret across cells: one line
                    self._draw_header(None)
                    self._print([[Segment(redacted)]])
                    return
        self._draw_header(texts)
        tones = [tone for _, tone in cells]
        self._draw(table, list(zip(texts, tones, strict=True)), wide=wide)

    def _draw(self, table: Table, cells: Sequence[Seg], *, wide: bool) -> None:
        """One row: each cell as it is when it fits its column, else wrapped within it;
        the row as tall as its tallest cell."""
        widths = self._fitted(table, wide)
        columns: list[list[tuple[list[Segment], int]]] = []
        for (text, tone), width in zip(cells, widths, strict=True):
            style = _STYLE[tone] if tone else None
            size = _cells(text)
            if size <= width:
                columns.append([([Segment(text, style)], size)])
                continue
            if text.isascii():  # a cell is one style: textwrap wraps as rich does, faster
                folded = textwrap.wrap(text, width, break_on_hyphens=False) or [""]
                columns.append([([Segment(piece, style)], len(piece)) for piece in folded])
                continue
            wrapped = Text(text, style or "").wrap(self._console, width, overflow="fold")
            columns.append(
                [(list(piece.render(self._console)), piece.cell_len) for piece in wrapped]
            )
        height = max(len(c) for c in columns)
        lines: list[list[Segment]] = []
        for j in range(height):
            line: list[Segment] = []
            for pieces, width in zip(columns, widths, strict=True):
                segments, size = pieces[j] if j < len(pieces) else ([], 0)
                line += segments
                line.append(Segment(" " * (width - size + 1)))
            lines.append(_rstrip(line))
        self._print(lines)

    # --- trees -----------------------------------------------------------------------------

    def tree(self, root: Node) -> None:
        lines = []
        for prefix, continuation, label in tree_lines(root):
            (safe,) = self._safe([label])
            lines.append(self._wrapped(safe, prefix, continuation))
        self._print(lines)

    def flush(self) -> None:
        self._draw_header(None)
        self._release()
        self._console.file.flush()


def _cells(text: str) -> int:
    """Terminal cells ``text`` takes (one a character in ASCII, found fast)."""
    return len(text) if text.isascii() else cell_len(text)


def _rstrip(line: list[Segment]) -> list[Segment]:
    """``line`` without its trailing spaces (as the plain form's rows)."""
    while line and not line[-1].text.rstrip(" "):
        line.pop()
    if line and line[-1].text.endswith(" "):
        last = line.pop()
        line.append(Segment(last.text.rstrip(" "), last.style))
    return line


class RichProgress:
    """The progress bar on stderr: bytes read of the total, rate (MB/s) and time left;
    started at the first report, kept on screen when done. While it shows, what is printed
    to ``sys.stdout`` goes above it (rich's stdout redirection)."""

    def __init__(self, console: Console) -> None:
        self._progress = Progress(
            TextColumn("reading"),
            BarColumn(),
            TaskProgressColumn(),
            DownloadColumn(),
            TransferSpeedColumn(),
            TimeRemainingColumn(),
            console=console,
        )
        self._task: TaskID | None = None

    @property
    def shown(self) -> bool:
        return self._task is not None

    def __call__(self, done: int, total: int) -> None:
        if self._task is None:
            self._progress.start()
            self._task = self._progress.add_task("reading", total=total or None)
        self._progress.update(self._task, completed=done)

    def finish(self) -> None:
        if self._task is not None:
            self._progress.stop()
