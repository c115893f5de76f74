"""The terminal form (rich): the plain form's text, coloured by meaning, fitted to the
terminal without cutting, never reading captured text as markup or control sequences; chosen
by --color, NO_COLOR and FORCE_COLOR; on a real pty."""

from __future__ import annotations

import io
import json
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest
from rich.cells import cell_len
from rich.console import Console

from agentshark.apis.model import Call
from agentshark.cli import main
from agentshark.output import calls_text, text
from agentshark.output.calls_text import CallsTextWriter
from agentshark.output.census import Census
from agentshark.output.redact import redactor
from agentshark.output.report import RenderOptions
from agentshark.output.screen import Line, PlainScreen, Seg, Table, cells_text, use_color
from agentshark.output.show import render_call
from agentshark.output.term import STYLES, RichProgress, RichScreen, fit
from agentshark.output.text import TextWriter
from agentshark.output.trace_text import TraceTextWriter
from agentshark.pipeline import Options, SourceReport, run
from agentshark.trace.collect import Analysis
from tests.helpers import CAPTURES, ROOT
from tests.output.wire import lost_segment, request, response, tcp_pcap

EXAMPLE = str(ROOT / "examples" / "agent_chat.pcap")
MCP_HTTP = str(CAPTURES / "mcp_http_plain" / "capture.pcap")
MCP_STDIO = str(CAPTURES / "mcp_stdio_time" / "transcript.jsonl")
SHENZHEN = str(ROOT / "tests/data/runs/seed004_shenzhen/capture.pcap")
SGR = re.compile(r"\x1b\[[0-9;]*m")


def _console(width: int) -> Console:
    return Console(
        record=True,
        force_terminal=True,
        width=width,
        file=io.StringIO(),
        color_system="standard",
        markup=False,
        emoji=False,
        highlight=False,
    )


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class _Recording(RichScreen):
    """A rich screen that keeps each row's cells with what it drew for them."""

    def __init__(self, console: Console) -> None:
        super().__init__(console, redactor(True))
        self.drawn: list[tuple[Table, list[Seg], bool, str]] = []

    def widths(self, table: Table, wide: bool) -> list[int]:
        return self._fitted(table, wide)

    def row(self, table: Table, cells: list[Seg], *, wide: bool) -> None:  # type: ignore[override]
        self._console.export_text(clear=True)
        super().row(table, cells, wide=wide)
        drawn = self._console.export_text(clear=False)
        if not self.drawn:  # the header is drawn with the first row, on one line
            heading, drawn = drawn.split("\n", 1)
            assert heading.split() == [c.name for c in table.columns]
        self.drawn.append((table, list(cells), wide, drawn))


def _table_view(path: str, screen: object, *, calls: bool, wide: bool, out: io.StringIO) -> None:
    make = CallsTextWriter if calls else TextWriter
    writer = make(out, RenderOptions(), screen)  # type: ignore[arg-type]
    writer.wide = wide
    census = Census(1)
    for item in census.watch(run([path], Options(calls=calls))):
        writer.write(item)
    writer.finish(census)


def test_use_color_follows_the_flag_then_no_color_force_color_and_the_terminal() -> None:
    tty, pipe = _Terminal(), io.StringIO()
    assert use_color("always", pipe, {"NO_COLOR": "1"})
    assert not use_color("never", tty, {"FORCE_COLOR": "1"})
    assert use_color("auto", tty, {}) and not use_color("auto", pipe, {})
    assert not use_color("auto", tty, {"NO_COLOR": "1"})
    assert use_color("auto", tty, {"NO_COLOR": ""})  # set but empty: not set (no-color.org)
    assert use_color("auto", pipe, {"FORCE_COLOR": "1"})
    assert not use_color("auto", tty, {"NO_COLOR": "1", "FORCE_COLOR": "1"})
    assert not use_color("auto", tty, {"TERM": "dumb"})


@pytest.mark.parametrize("width", [80, 120, 200])
@pytest.mark.parametrize("wide", [False, True])
@pytest.mark.parametrize(("path", "calls"), [(EXAMPLE, True), (MCP_HTTP, True), (EXAMPLE, False)])
def test_tables_fit_the_terminal_and_cut_nothing(
    width: int, wide: bool, path: str, calls: bool
) -> None:
    """Every drawn line fits; each column, read down its rows, is the plain form's cell."""
    console = _console(width)
    screen = _Recording(console)
    _table_view(path, screen, calls=calls, wide=wide, out=io.StringIO())
    assert len(screen.drawn) > 3
    for table, cells, wide_, drawn in screen.drawn:
        widths = screen.widths(table, wide_)
        lines = drawn.rstrip("\n").split("\n")
        assert all(cell_len(ln) <= width for ln in lines), drawn
        want = cells_text(table, cells, redactor(True), wide=wide_)
        start = 0
        for cell, w in zip(want, widths, strict=True):
            column = "".join(ln[start : start + w] for ln in lines)
            assert column.replace(" ", "") == cell.replace(" ", ""), (cell, drawn)
            start += w + 1
        if wide_:
            assert "…" not in drawn or any("…" in c for c, _ in cells)


def test_columns_are_sized_by_the_first_row_and_the_terminal() -> None:
    table = text.TABLE
    row = ["19:56:45.819", "c1", "POST", "http://127.0.0.1:18600/v1/chat/completions", "200"]
    row += ["application/json", "799", "1307", "1.6", "yes"]
    assert fit(table, 400, wide=False, sample=row) == [c.width for c in table.columns]
    at_130 = fit(table, 130, wide=False, sample=row)
    assert sum(at_130) + 9 <= 130 and at_130[3] == 44  # URL whole, others give way
    assert all(w >= len(c.name) for w, c in zip(at_130, table.columns, strict=True))
    at_80 = fit(table, 80, wide=False, sample=row)
    assert sum(at_80) + 9 <= 80 and at_80[0] == 12  # TIME is never narrowed
    wide = fit(table, 200, wide=True, sample=row)
    assert sum(wide) + 9 == 200 and wide[3] > 44  # --wide: the spare width to URL


def test_a_wide_enough_terminal_shows_the_plain_text_exactly() -> None:
    """The rich form draws the views' content: on a terminal as wide as the plain rows, its
    text is the plain form's (tables cut as on a terminal, the analyze tree, show)."""
    for path, calls in ((EXAMPLE, True), (MCP_STDIO, True), (EXAMPLE, False)):
        console = _console(400)
        _table_view(
            path, RichScreen(console, redactor(True)), calls=calls, wide=False, out=io.StringIO()
        )
        plain = _Terminal()
        _table_view(path, None, calls=calls, wide=False, out=plain)
        assert console.export_text() == plain.getvalue()
    for path in (EXAMPLE, MCP_STDIO, SHENZHEN):
        analysis = Analysis()
        items = list(analysis.watch(run([path], Options(calls=True))))
        analysis.finish()
        sources = [i for i in items if isinstance(i, SourceReport)]
        console = _console(1000)
        outputs = []
        for screen in (RichScreen(console, redactor(True)), None):
            out = io.StringIO()
            writer = TraceTextWriter(out, screen=screen)
            writer.write(analysis.traces, analysis.incidents, analysis.calls, sources, unclaimed=0)
            outputs.append(out.getvalue())
        assert console.export_text() == outputs[1]
        assert "└─ invoke_agent" in outputs[1]
    for item in run([SHENZHEN], Options(calls=True)):
        if isinstance(item, Call):
            console = _console(100)
            render_call(item, io.StringIO(), screen=RichScreen(console, redactor(True)))
            plain_show = io.StringIO()
            render_call(item, plain_show)
            assert console.export_text() == plain_show.getvalue()


def _styled(ansi: str, word: str) -> str:
    """The SGR codes in force where ``word`` starts in ``ansi``."""
    at = ansi.index(word)
    before = ansi[:at]
    last_reset = before.rfind("\x1b[0m")
    return "".join(SGR.findall(before[last_reset + 4 if last_reset >= 0 else 0 :]))


def _ansi(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main([*argv, "--no-progress", "--color", "always"]) == 0
    return capsys.readouterr().out


def test_colour_means_something(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "300")  # rich's width off a terminal
    red, yellow, green = "\x1b[31m", "\x1b[33m", "\x1b[32m"
    out = _ansi(capsys, "calls", EXAMPLE)
    assert red in _styled(out, "ERROR 404")
    assert f"{green}yes\x1b[0m" in out  # COMPLETE
    assert red in _styled(_ansi(capsys, "analyze", MCP_STDIO), "→ TOOL ERROR")
    assert red in _styled(_ansi(capsys, "exchanges", EXAMPLE), "404")
    lost = tmp_path / "lost.pcap"
    lost.write_bytes(lost_segment())
    out = _ansi(capsys, "calls", str(lost))
    assert f"{yellow}NO\x1b[0m" in out and yellow in _styled(out, "! ")
    assert yellow in _styled(_ansi(capsys, "show", str(lost), "--call", "call1"), "INCOMPLETE")
    assert STYLES["error"] == "red" and STYLES["incomplete"] == "yellow"


EVIL = (
    "Hi \x1b[31mRED\x1b[0m [bold]bold[/bold] [link=http://evil.example]click[/link] "
    "\x1b]8;;http://evil.example\x07link\x1b]8;;\x07 \x1b]0;title\x07 \x9b2J :smile: \x07\x08\r"
)


def _evil_capture(tmp_path: Path) -> str:
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "gpt-4o\x1b[5m[blink]",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": EVIL,
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {
                                "name": "get\x1b[2J[red]",
                                "arguments": json.dumps({"q": EVIL}),
                            },
                        }
                    ],
                },
                "finish_reason": "stop",
            }
        ],
    }
    chat = {"model": "gpt-4o", "messages": [{"role": "user", "content": EVIL}]}
    path = tmp_path / "evil.pcap"
    path.write_bytes(
        tcp_pcap(
            request("/v1/chat/completions?q=\x1b[31m[bold]", json.dumps(chat).encode()),
            response(json.dumps(body).encode()),
        )
    )
    return str(path)


@pytest.mark.parametrize("color", ["always", "never"])
def test_model_content_is_shown_literally_never_as_markup_or_control(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, color: str
) -> None:
    monkeypatch.setenv("COLUMNS", "400")
    evil = _evil_capture(tmp_path)
    for argv in (["exchanges"], ["calls", "--wide"], ["analyze"], ["show", "--call", "call1"]):
        assert main([argv[0], evil, *argv[1:], "--no-progress", "--color", color]) == 0
        out = capsys.readouterr().out
        # the only control sequences are the colours the view chose; no OSC (title, link)
        assert not re.sub(SGR, "", out).count("\x1b"), argv
        assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", re.sub(SGR, "", out)), argv
        if color == "never":
            assert "\x1b" not in out
        visible = re.sub(SGR, "", out)
        assert "\\x1b[" in visible, argv  # shown as its escape
        assert "[bold]" in visible or "[red]" in visible or "[blink]" in visible, argv
    assert main(["show", evil, "--call", "call1", "--no-progress", "--color", color]) == 0
    visible = re.sub(SGR, "", capsys.readouterr().out)
    assert "[link=http://evil.example]click[/link]" in visible
    assert ":smile:" in visible and "\\x9b2J" in visible and "\\x1b]0;title\\x07" in visible


def test_progress_bar_shows_rate_and_time_left() -> None:
    console = _console(100)
    bar = RichProgress(console)
    assert not bar.shown
    bar(50_000_000, 100_000_000)
    bar(100_000_000, 100_000_000)
    bar.finish()
    shown = console.export_text()
    assert bar.shown and "100%" in shown and re.search(r"[\d.]+ [kMGT]?B/s", shown)
    assert "100.0/100.0 MB" in shown and "0:00:00" in shown


def _pty_run(*argv: str, env: dict[str, str]) -> str:
    """The CLI's output on a real pseudo-terminal (stdout and stderr), 100 columns."""
    master, slave = pty.openpty()
    import fcntl
    import struct
    import termios

    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 100, 0, 0))
    full = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    full.update({"TERM": "xterm-256color", "COLUMNS": "100", **env})
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentshark", *argv],
        stdin=subprocess.DEVNULL,
        stdout=slave,
        stderr=slave,
        env=full,
        close_fds=True,
    )
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    assert proc.wait(timeout=120) == 0
    return b"".join(chunks).decode().replace("\r\n", "\n")


def test_on_a_real_terminal() -> None:
    coloured = _pty_run("calls", EXAMPLE, env={})
    assert SGR.search(coloured)
    assert all(cell_len(SGR.sub("", ln)) <= 100 for ln in coloured.splitlines())
    plain = SGR.sub("", coloured)
    assert "ERROR 404" in plain and "call6" in plain
    for env, argv in (({"NO_COLOR": "1"}, []), ({}, ["--color", "never"])):
        out = _pty_run("calls", EXAMPLE, *argv, env=env)
        assert "\x1b" not in out
        # the plain form as on a terminal: cut columns (the example's rows are 190 long)
        assert "…" in out and max(len(ln) for ln in out.splitlines()) > 100
    tree = _pty_run("analyze", EXAMPLE, env={})
    assert "└─ " in SGR.sub("", tree) and SGR.search(tree)


def test_table_columns_name_every_view_column() -> None:
    assert [c.name for c in calls_text.TABLE.columns][:2] == ["TIME", "ID"]
    assert [c.name for c in text.TABLE.columns][-1] == "COMPLETE"


def test_a_secret_split_across_styles_is_redacted_as_the_plain_line_is() -> None:
    """A labelled value whose label and value are in different segments: the plain form's
    line stream redacts the whole line, so the rich form draws that line (unstyled)."""
    secret = "Zq7Kp2Lm9Xw4Rt8Vb3Nc"
    line: Line = (("  password: ", "label"), (secret, "name"))
    console = _console(200)
    RichScreen(console, redactor(True)).line(*line)
    plain = io.StringIO()
    PlainScreen(plain, redactor(True)).line(*line)
    shown = console.export_text(styles=True)
    assert secret not in shown and secret in "".join(t for t, _ in line)
    assert SGR.sub("", shown) == plain.getvalue() and "[REDACTED" in shown
    console = _console(200)
    RichScreen(console, redactor(False)).line(*line)  # --no-redact: shown, styled
    assert secret in console.export_text(clear=False)
    assert "\x1b[35m" in console.export_text(styles=True)
