"""agentshark.live over files being written and over an ExchangeFeed; the pytest fixture."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import pytest

import agentshark
from agentshark.library.live import ExchangeFeed, LiveUpdate
from agentshark.model import Exchange
from agentshark.output.report import RenderOptions
from agentshark.pipeline import Options, run
from agentshark.pipeline.follow import Update
from agentshark.testing import assert_no_incidents
from tests.helpers import CAPTURES, ROOT
from tests.output.test_secrets import DATA as SECRETS_DATA
from tests.output.test_secrets import leaks

EXAMPLE = ROOT / "examples" / "agent_chat.pcap"


def final_traces(updates: list[LiveUpdate]) -> dict[str, agentshark.Trace]:
    """The traces after the last update (absorbed ones removed)."""
    traces: dict[str, agentshark.Trace] = {}
    for u in updates:
        if u.kind == "trace" and u.trace is not None:
            traces[u.trace.trace_id] = u.trace
        elif u.kind == "trace_absorbed":
            traces.pop(u.data["trace_id"], None)
    return traces


def test_live_on_a_file_written_in_pieces_gives_the_report_of_the_whole(tmp_path: Path) -> None:
    data = EXAMPLE.read_bytes()
    target = tmp_path / "growing.pcap"
    target.write_bytes(data[: len(data) // 3])
    stop = threading.Event()
    written = threading.Event()

    def write_the_rest() -> None:
        stop.wait(0.2)  # the follower has read the first third by then, most likely
        with target.open("ab") as f:
            f.write(data[len(data) // 3 :])
        written.set()
        stop.wait(0.3)
        stop.set()

    threading.Thread(target=write_the_rest).start()
    updates = list(agentshark.live(target, stop=stop, interval=0.01))
    assert written.is_set()
    whole = agentshark.analyze(target)
    calls = [u.call for u in updates if u.kind == "call"]
    assert [c.id for c in calls if c] == [c.id for c in whole.calls()]
    assert [c.data for c in calls if c] == [c.data for c in whole.calls()]
    traces = final_traces(updates)
    assert sorted(traces) == sorted(t.trace_id for t in whole.traces())
    assert [u.kind for u in updates].count("source") == 1  # the input ended, once


def test_live_stops_when_idle_and_reads_a_finished_transcript() -> None:
    path = CAPTURES / "mcp_stdio_time" / "transcript.jsonl"
    updates = list(agentshark.live(path, idle=0.1, interval=0.01))
    whole = agentshark.analyze(path)
    assert [u.call.id for u in updates if u.call] == [c.id for c in whole.calls()]
    assert {u.data["update"] for u in updates} >= {"exchange", "call", "trace", "source"}


def test_live_redacts_by_default() -> None:
    path = SECRETS_DATA / "stdio" / "transcript.jsonl"
    shown = repr([u.data for u in agentshark.live(path, idle=0.1, interval=0.01)])
    assert leaks(shown) == []
    plain = repr([u.data for u in agentshark.live(path, idle=0.1, interval=0.01, redact=False)])
    assert leaks(plain)


def test_an_exchange_feed_gives_what_the_file_gives() -> None:
    feed = ExchangeFeed()
    for item in run([str(EXAMPLE)], Options()):
        if type(item) is Exchange:
            feed.push(item)
    updates = list(agentshark.live(feed, idle=0.1, interval=0.01))
    whole = agentshark.analyze(EXAMPLE)
    assert [u.call.data for u in updates if u.call] == [c.data for c in whole.calls()]
    assert sorted(final_traces(updates)) == sorted(t.trace_id for t in whole.traces())
    with pytest.raises(ValueError, match="finished"):
        feed.push(next(i for i in run([str(EXAMPLE)], Options()) if type(i) is Exchange))


def test_an_exchange_feed_holds_mcp_calls_until_their_session_says(tmp_path: Path) -> None:
    """MCP calls recognized live, from exchanges pushed one at a time, polled between."""
    path = CAPTURES / "mcp_http_plain" / "capture.pcap"
    feed = ExchangeFeed()
    got: list[str] = []
    for item in run([str(path)], Options()):
        if type(item) is Exchange:
            feed.push(item)
            got += [u.call.id for u in map(_view, feed.poll()) if u.call]
    got += [u.call.id for u in map(_view, feed.close()) if u.call]
    assert sorted(got) == sorted(c.id for c in agentshark.analyze(path).calls())
    assert feed.poll() == [] and feed.close() == []


def _view(update: Update) -> LiveUpdate:
    return LiveUpdate.of(update, RenderOptions())


def test_keylogs_go_with_files_only() -> None:
    with pytest.raises(ValueError, match="keylogs go with files"):
        next(agentshark.live(ExchangeFeed(), keylogs=["keys.log"]))


def test_the_fixture_analyzes_files(agentshark_trace: object, tmp_path: Path) -> None:
    copy = tmp_path / "run.pcap"
    shutil.copy(EXAMPLE, copy)
    report = agentshark_trace(copy)  # type: ignore[operator]
    assert isinstance(report, agentshark.Report)
    (call,) = report.calls(api="openai.chat", status="error")
    assert call.error is not None and call.error.code == "model_not_found"
    assert_no_incidents(report)
    mcp = agentshark_trace(CAPTURES / "mcp_http_plain" / "capture.pcap")  # type: ignore[operator]
    with pytest.raises(AssertionError, match=r"(?s)1 incident\(s\).*warning mcp.tool_not_listed"):
        assert_no_incidents(mcp)
