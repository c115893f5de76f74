"""The trace stage out of memory (agentshark.trace.spill): the JSON report of ``analyze`` with
its calls on disk from the first one (``--keep-calls 0``) or the second (``1``) is the report
of the whole input in memory, byte for byte, on inputs that use every kind of join."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import time
import tracemalloc
from contextlib import redirect_stderr
from pathlib import Path

import orjson
import pytest

from agentshark.apis.model import Call, Message, TextPart, Timing
from agentshark.cli import main
from agentshark.errors import StoreError
from agentshark.pipeline import Options, run
from agentshark.trace import spill
from agentshark.trace.collect import Analysis
from agentshark.trace.openapi import OpenApi
from agentshark.trace.spill import Store
from tests.helpers import ROOT

DATA = ROOT / "tests" / "data"
SHARED = ROOT.parent / "shared"

# input -> what it joins by
CASES: dict[str, list[str]] = {
    "agent_chat": ["examples/agent_chat.pcap"],  # connection hints
    "combined_agent_run": ["tests/data/captures/combined_agent_run/capture.pcap"],
    "graphql_agent": ["tests/data/captures/graphql_agent_openai/capture.pcap"],  # executions
    "grpc_tool_chat": ["tests/data/captures/grpc_tool_chat/capture.pcap"],
    "retrieval_agent": ["tests/data/captures/retrieval_agent_chroma/capture.pcap"],  # work
    "mcp_sessions": ["tests/data/captures/mcp_streamable_sessions/capture.pcap"],
    "mcp_stdio": ["../shared/captures/mcp_stdio_time/transcript.jsonl"],  # stdio sessions
    "traceparent": ["tests/data/runs/seed000_chat_http_traceparent/capture.pcap"],
    "chat_mcp_stream": ["tests/data/runs/seed000_chat_mcp_stream/capture.pcap"],
    "responses": ["tests/data/runs/seed000_responses_http/capture.pcap"],  # response ids
    "unanswered": ["tests/data/runs/parallel_tools_unanswered/capture.pcap"],  # incidents
    "realtime": ["tests/data/captures/ws_sdk_realtime_plain/capture.pcap"],  # sessions
    "queues": ["tests/data/captures/queue_agent_redis/capture.pcap"],  # read back whole
    "proxy_run": [
        "tests/data/captures/proxy_sdk_run/capture.pcap",
        "--keylog",
        "tests/data/captures/proxy_sdk_run/keylog.txt",
    ],
    "two_files": [  # a run's calls across inputs, several families
        "../shared/captures/llm_sdk_openai/capture.dsb.pcapng",
        "../shared/captures/llm_sdk_anthropic/capture.dsb.pcapng",
        "examples/agent_chat.pcap",
    ],
}


def _report(inputs: list[str], *extra: str) -> bytes:
    out = io.BytesIO()
    path = Path(f"/tmp/agentshark-spill-{'-'.join(extra) or 'memory'}.json")
    with redirect_stderr(io.StringIO()):
        main(["analyze", *inputs, "--format", "json", "--no-progress", "-o", str(path), *extra])
    out.write(path.read_bytes())
    path.unlink()
    return out.getvalue()


def _present(inputs: list[str]) -> list[str]:
    paths = [a if a.startswith("--") else str(ROOT / a) for a in inputs]
    missing = [p for p in paths if not p.startswith("--") and not Path(p).exists()]
    if missing:
        pytest.skip(f"{missing[0]} is not here (../shared sits beside the repository in CI)")
    return paths


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_report_is_the_same_with_the_calls_on_disk(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    inputs = _present(CASES[name])
    whole = _report(inputs)
    assert b'"traces"' in whole
    assert _report(inputs, "--keep-calls", "0") == whole
    monkeypatch.setattr(spill, "GROUP_CALLS", 1)  # each group analysed on its own
    assert _report(inputs, "--keep-calls", "1") == whole


def test_a_fleet_of_runs_gives_one_trace_per_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """bench/make_many_calls.py: runs interleaved over connections, the store analysing
    them a few groups at a time, gives each run as one trace, as in memory."""
    capture = tmp_path / "many.pcap"
    script = ROOT / "bench" / "make_many_calls.py"
    made = subprocess.run([sys.executable, str(script), "--calls", "3000", "--out", str(capture)])
    assert made.returncode == 0
    monkeypatch.setattr(spill, "GROUP_CALLS", 50)
    whole = _report([str(capture)])
    assert _report([str(capture), "--keep-calls", "100"]) == whole
    report = orjson.loads(whole)
    number = {e["id"]: n for n, e in enumerate(report["exchanges"], 1)}
    exchange_of = {c["id"]: number[c["exchange_id"]] for c in report["calls"]}
    traces = sorted(sorted(exchange_of[c] for c in t["calls"]) for t in report["traces"])
    runs = [
        orjson.loads(line) for line in capture.with_suffix(".runs.jsonl").read_bytes().splitlines()
    ]
    assert traces == sorted(r["exchanges"] for r in runs)
    assert len(report["calls"]) == 3000
    assert all(c["complete"] for c in report["calls"])


@pytest.mark.parametrize("name", ["agent_chat", "graphql_agent", "unanswered", "two_files"])
def test_the_text_view_is_the_same_with_the_calls_on_disk(name: str) -> None:
    inputs = _present(CASES[name])
    views = []
    for keep in ("10000", "0"):
        out = Path(f"/tmp/agentshark-spill-view-{keep}.txt")
        with redirect_stderr(io.StringIO()):
            main(["analyze", *inputs, "--color", "never", "-o", str(out), "--keep-calls", keep])
        views.append(out.read_text())
        out.unlink()
    assert "trace 1" in views[0]
    assert views[1] == views[0]


def _analysis(inputs: list[str], keep: int) -> Analysis:
    analysis = Analysis(keep=keep)
    for _ in analysis.watch(run(inputs, Options(calls=True))):
        pass
    analysis.finish()
    return analysis


def test_past_the_limit_the_calls_are_on_disk_not_in_memory() -> None:
    inputs = _present(CASES["agent_chat"])
    analysis = _analysis(inputs, keep=2)
    try:
        assert analysis.store is not None
        assert analysis.calls == []
        assert analysis.store.calls == 6
        assert len(list(analysis.trace_docs())) == 5
    finally:
        analysis.close()
    kept = _analysis(inputs, keep=100)
    assert kept.store is None
    assert len(kept.calls) == 6


def test_with_queue_messages_the_calls_are_read_back() -> None:
    """Queue spans join traces through messages: such an input is analysed whole."""
    inputs = _present(CASES["queues"])
    analysis = _analysis(inputs, keep=0)
    assert analysis.store is None
    assert analysis.lives


def _call(n: int, text: str) -> Call:
    return Call(
        id=f"c{n}",
        exchange_id=f"x{n}",
        api="openai.chat",
        operation="chat",
        input_messages=[Message(role="user", parts=[TextPart(content=text)])],
        output_messages=[Message(role="assistant", parts=[TextPart(content=text + "!")])],
        complete=True,
        timing=Timing(started=float(n), ended=n + 0.5),
    )


def _stored_bytes(calls: int) -> int:
    """Memory the store holds after ``calls`` unrelated calls (tracemalloc, bytes)."""
    store = Store()
    try:
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        for n in range(calls):
            store.add_call(_call(n, f"question {n}"))
        held = tracemalloc.get_traced_memory()[0] - before
        tracemalloc.stop()
    finally:
        store.close()
    return held


def test_the_store_holds_no_call_in_memory() -> None:
    """Ten times the calls, no more memory than the write buffers hold."""
    small, large = _stored_bytes(5_000), _stored_bytes(50_000)
    assert large < small + 2_000_000, (small, large)


def test_unrelated_calls_are_analysed_in_groups_related_ones_together() -> None:
    store = Store()
    try:
        first = _call(0, "hello")
        follow = _call(1, "again")
        follow.input_messages = [
            *first.input_messages,
            *first.output_messages,
            *follow.input_messages,
        ]
        for call in (first, _call(2, "other"), follow):
            store.add_call(call)
        store.finish((), OpenApi([]))
        traces = list(store.traces())
    finally:
        store.close()
    assert [t["calls"] for t in traces] == [["c0", "c1"], ["c2"]]


def test_a_store_that_cannot_be_made_is_one_clear_error(tmp_path: Path) -> None:
    not_a_directory = tmp_path / "file"
    not_a_directory.write_text("")
    with pytest.raises(StoreError, match=r"set TMPDIR to a directory with room"):
        Store(directory=str(not_a_directory))


def test_sigterm_removes_the_store(tmp_path: Path) -> None:
    """A run ended by SIGTERM leaves no database behind in TMPDIR (exit 130, as Ctrl-C)."""
    capture = tmp_path / "many.pcap"
    script = ROOT / "bench" / "make_many_calls.py"
    made = subprocess.run([sys.executable, str(script), "--calls", "20000", "--out", str(capture)])
    assert made.returncode == 0
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp)}
    command = [sys.executable, "-m", "agentshark", "analyze", str(capture), "--format", "json"]
    command += ["-o", str(tmp_path / "out.json"), "--jobs", "1", "--keep-calls", "0"]
    proc = subprocess.Popen(command, env=env, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while not list(tmp.glob("agentshark-*")) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert list(tmp.glob("agentshark-*")), "the store was never made"
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert b"interrupted" in err
    assert list(tmp.glob("agentshark-*")) == []
