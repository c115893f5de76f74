"""The live run gives, for inputs pushed in any pieces, the items ``run`` gives for the
finished files: same exchanges, calls, connection and source reports, ids and order."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from agentshark.apis.model import Call
from agentshark.model import Exchange
from agentshark.output.report import (
    RenderOptions,
    call_json,
    connection_json,
    exchange_json,
    source_json,
)
from agentshark.pipeline import ConnectionReport, Item, Options, SourceReport, run
from agentshark.pipeline.live import LiveRun
from tests.helpers import CAPTURES, CORPUS

_R = RenderOptions(events=True)


def _js(item: Item) -> tuple[str, Any]:
    if isinstance(item, Call):
        return "call", call_json(item, _R)
    if isinstance(item, Exchange):
        return "exchange", exchange_json(item, _R)
    if isinstance(item, ConnectionReport):
        return "connection", connection_json(item)
    assert isinstance(item, SourceReport)
    return "source", source_json(item)


def _inputs() -> list[Path]:
    captures = sorted(
        p for p in CAPTURES.rglob("*") if p.is_file() and p.suffix in (".pcap", ".pcapng", ".jsonl")
    )
    documents = sorted(CORPUS.rglob("*.har"))[:6] + sorted(CORPUS.rglob("*.yaml"))[:12]
    return captures + documents


def _keylogs(path: Path) -> list[str]:
    """The key log of a TLS capture (``keylog.txt`` beside it), or none."""
    found = sorted(path.parent.glob("keylog.txt")) + sorted(path.parent.glob("*keys*.log"))
    return [str(k) for k in found][:1]


def _live(path: Path, pieces: list[int], keylogs: list[str]) -> list[tuple[str, Any]]:
    data = path.read_bytes()
    live = LiveRun([str(path)], Options(calls=True, keylogs=keylogs))
    out = [_js(i) for i in live.start()]
    pos = 0
    for size in pieces:
        out += [_js(i) for i in live.push(0, data[pos : pos + size])]
        pos += size
    out += [_js(i) for i in live.push(0, data[pos:])]
    out += [_js(i) for i in live.close()]
    return out


@pytest.mark.parametrize("path", _inputs(), ids=lambda p: "/".join(p.parts[-3:]))
def test_pieces_of_any_size_give_the_items_of_run(path: Path) -> None:
    keylogs = _keylogs(path) if path.suffix != ".jsonl" else []
    want = [_js(i) for i in run([str(path)], Options(calls=True, keylogs=keylogs))]
    rng = random.Random(path.name)
    size = path.stat().st_size
    pieces = [rng.choice((1, 3, 40, 700, 1500, 9000)) for _ in range(400)]
    assert _live(path, pieces, keylogs) == want
    assert _live(path, [size // 2], keylogs) == want


def test_an_exchange_comes_as_soon_as_its_answer_line_is_whole(tmp_path: Path) -> None:
    transcript = (CAPTURES / "mcp_stdio_time" / "transcript.jsonl").read_bytes()
    lines = transcript.splitlines(keepends=True)
    live = LiveRun([str(tmp_path / "t.jsonl")])
    assert live.push(0, lines[0][:-9]) == []  # half a line: held
    first = live.push(0, lines[0][-9:])  # the request line is whole, its answer is not there
    assert [i for i in first if isinstance(i, Exchange)] == []
    found: list[Item] = []
    for line in lines[1:]:
        found = live.push(0, line)
        if found:
            break
    exchanges = [i for i in found if isinstance(i, Exchange)]
    assert exchanges
    assert exchanges[0].id == "e1"
    assert exchanges[0].response is not None


def test_a_cassette_entry_is_reported_once_a_later_one_follows_or_the_input_ends() -> None:
    cassette = next(
        p for p in sorted(CORPUS.rglob("*.yaml")) if p.read_bytes().count(b"- request:") >= 2
    )
    data = cassette.read_bytes()
    second = data.index(b"- request:", data.index(b"- request:") + 1)
    live = LiveRun([str(cassette)])
    early = live.push(0, data[: second - 20])  # the first interaction, maybe not all of it
    assert [i for i in early if isinstance(i, Exchange)] == []
    later = live.push(0, data[second - 20 : second + 40])  # the second one has started
    assert [i.id for i in later if isinstance(i, Exchange)] == ["e1"]
    rest = live.push(0, data[second + 40 :]) + live.close()
    want = [_js(i) for i in run([str(cassette)], Options(calls=True))]
    assert [_js(i) for i in [*early, *later, *rest]] == want


def test_input_that_is_no_known_format_is_said_as_run_says_it() -> None:
    live = LiveRun(["notes.txt"])
    assert live.push(0, b"just some text\n") == []
    got = [_js(i) for i in live.close()]
    (kind, source), *_ = got
    assert kind == "source"
    assert [d["code"] for d in source["diagnostics"]] == ["source.unsupported"]
