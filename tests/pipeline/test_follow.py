"""The follower over real files written in pieces: a record split in its header and in its
body, a file truncated or replaced while followed, one that never appears, a transcript
growing; traces rebuilt at most as often as asked."""

from __future__ import annotations

import io
import itertools
import threading
from pathlib import Path

from agentshark.apis.model import Call
from agentshark.output.report import RenderOptions, call_json
from agentshark.pipeline import Options, run
from agentshark.pipeline.follow import (
    CallFinished,
    DiagnosticFound,
    ExchangeFinished,
    Follower,
    SourceFinished,
    Update,
)
from agentshark.sources.pcap import read_pcap
from agentshark.sources.records import Packet
from agentshark.trace.changes import TraceChanged
from agentshark.trace.collect import Analysis
from tests.helpers import CAPTURES, ROOT

EXAMPLE = ROOT / "examples" / "agent_chat.pcap"
TRANSCRIPT = CAPTURES / "mcp_stdio_time" / "transcript.jsonl"


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _record_starts(data: bytes) -> list[int]:
    return [p.offset for p in read_pcap(io.BytesIO(data), "f") if isinstance(p, Packet)]


def _calls(updates: list[Update]) -> list[str]:
    return [u.call.id for u in updates if isinstance(u, CallFinished)]


def _codes(updates: list[Update]) -> list[str]:
    return [u.diagnostic.code for u in updates if isinstance(u, DiagnosticFound)]


def _batch(path: Path) -> tuple[list[Call], Analysis]:
    analysis = Analysis()
    calls = [
        c for c in analysis.watch(run([str(path)], Options(calls=True))) if isinstance(c, Call)
    ]
    analysis.finish()
    return calls, analysis


def test_a_call_comes_once_its_last_record_is_whole_and_the_end_equals_analyze(
    tmp_path: Path,
) -> None:
    data = EXAMPLE.read_bytes()
    starts = _record_starts(data)
    path = tmp_path / "grow.pcap"
    path.write_bytes(data[:24])
    follower = Follower([str(path)], clock=_Clock())
    seen = follower.poll()
    written = 24
    with path.open("ab") as f:
        for n, start in enumerate(starts):
            end = starts[n + 1] if n + 1 < len(starts) else len(data)
            for cut in (start + 7, start + 16 + 5):  # inside the header, inside the body
                f.write(data[written:cut])
                f.flush()
                written = cut
                assert _calls(follower.poll()) == [], "no call from half a record"
            f.write(data[written:end])
            f.flush()
            written = end
            got = follower.poll()
            seen += got
            if _calls(got):
                break
    assert _calls(seen) == ["call1"]
    assert written < len(data), "call1 came before the capture was whole"
    with path.open("ab") as f:
        f.write(data[written:])
    seen += follower.close()
    batch_calls, batch = _batch(EXAMPLE)
    render = RenderOptions()
    got_calls = [call_json(u.call, render) for u in seen if isinstance(u, CallFinished)]
    assert got_calls == [call_json(c, render) for c in batch_calls]
    live = follower.live.analysis
    assert [t.to_json() for t in live.traces] == [t.to_json() for t in batch.traces]
    assert [i.to_json() for i in live.incidents] == [i.to_json() for i in batch.incidents]
    (source,) = [u.report for u in seen if isinstance(u, SourceFinished)]
    assert (source.bytes, source.packets, source.exchanges) == (len(data), len(starts), 6)
    assert not source.diagnostics


def test_a_record_half_written_when_following_ends_is_a_truncated_file(tmp_path: Path) -> None:
    data = EXAMPLE.read_bytes()
    starts = _record_starts(data)
    path = tmp_path / "cut.pcap"
    path.write_bytes(data[: starts[10] + 30])
    follower = Follower([str(path)], clock=_Clock())
    seen = follower.poll() + follower.close()
    assert _codes(seen) == ["pcap.truncated_file"]
    (source,) = [u.report for u in seen if isinstance(u, SourceFinished)]
    assert source.packets == 10


def test_a_file_truncated_while_followed_ends_with_a_diagnostic(tmp_path: Path) -> None:
    data = EXAMPLE.read_bytes()
    path = tmp_path / "t.pcap"
    path.write_bytes(data)
    follower = Follower([str(path)], clock=_Clock())
    seen = follower.poll()
    assert _calls(seen) == [f"call{i}" for i in range(1, 7)]
    path.write_bytes(data[:100])  # a new capture started over it
    seen = follower.poll()
    assert _codes(seen) == ["follow.truncated"]
    assert any(isinstance(u, SourceFinished) for u in seen), "the input ends there"
    assert follower.poll() == []
    closing = follower.close()
    assert [u for u in closing if isinstance(u, CallFinished | ExchangeFinished)] == []


def test_a_file_replaced_while_followed_is_read_to_its_end_then_said(tmp_path: Path) -> None:
    data = EXAMPLE.read_bytes()
    half = _record_starts(data)[40]
    path = tmp_path / "r.pcap"
    path.write_bytes(data[:half])
    follower = Follower([str(path)], clock=_Clock())
    first = follower.poll()
    with path.open("ab") as f:
        f.write(data[half:])  # the old file gets its end...
    path.rename(tmp_path / "r.pcap.1")
    path.write_bytes(data[:24])  # ...and a new file takes its name
    seen = first + follower.poll()
    assert _codes(seen) == ["follow.replaced"]
    assert _calls(seen) == [f"call{i}" for i in range(1, 7)]


def test_a_file_that_never_appears_is_unreadable_at_the_end(tmp_path: Path) -> None:
    follower = Follower([str(tmp_path / "later.pcap")], clock=_Clock())
    assert follower.poll() == []
    seen = follower.close()
    assert _codes(seen) == ["source.unreadable"]


def test_a_file_that_appears_late_is_followed(tmp_path: Path) -> None:
    path = tmp_path / "later.pcap"
    follower = Follower([str(path)], clock=_Clock())
    assert follower.poll() == []
    path.write_bytes(EXAMPLE.read_bytes())
    assert len(_calls(follower.poll())) == 6


def test_a_transcript_growing_gives_its_exchanges_and_mcp_calls_as_they_are_answered(
    tmp_path: Path,
) -> None:
    lines = TRANSCRIPT.read_bytes().splitlines(keepends=True)
    path = tmp_path / "transcript.jsonl"
    path.write_bytes(b"")
    follower = Follower([str(path)], clock=_Clock())
    exchanges: list[int] = []
    seen: list[Update] = []
    with path.open("ab") as f:
        for n, line in enumerate(lines):
            f.write(line[:5])
            f.flush()
            seen += follower.poll()
            f.write(line[5:])
            f.flush()
            got = follower.poll()
            seen += got
            exchanges += [n] * sum(isinstance(u, ExchangeFinished) for u in got)
    seen += follower.close()
    assert len(exchanges) >= 5
    assert exchanges[0] < len(lines) - 1, "the first exchange came before the end"
    batch_calls, batch = _batch(path)  # the finished copy: locations name it
    render = RenderOptions()
    want = [call_json(c, render) for c in batch_calls]
    assert [call_json(u.call, render) for u in seen if isinstance(u, CallFinished)] == want
    assert [t.to_json() for t in follower.live.analysis.traces] == [
        t.to_json() for t in batch.traces
    ]


def test_traces_are_rebuilt_at_most_as_often_as_asked(tmp_path: Path) -> None:
    data = EXAMPLE.read_bytes()
    starts = _record_starts(data)
    path = tmp_path / "d.pcap"
    path.write_bytes(b"")
    clock = _Clock()
    follower = Follower([str(path)], clock=clock, rebuilds_per_second=2.0)
    traced: list[float] = []
    with path.open("ab") as f:
        for n, start in enumerate([0, *starts[1:]]):
            end = starts[n + 1] if n + 1 < len(starts) else len(data)
            f.write(data[start:end])
            f.flush()
            clock.now += 0.05  # 20 polls a second
            if any(isinstance(u, TraceChanged) for u in follower.poll()):
                traced.append(clock.now)
    assert traced
    gaps = [b - a for a, b in itertools.pairwise(traced)]
    assert all(g >= 0.5 - 1e-9 for g in gaps), gaps
    assert follower.live.rebuilds == len(traced)


def test_updates_end_when_no_file_grew_for_idle_seconds_or_when_stopped(tmp_path: Path) -> None:
    path = tmp_path / "i.pcap"
    path.write_bytes(EXAMPLE.read_bytes())
    follower = Follower([str(path)])
    got = list(follower.updates(idle=0.2, interval=0.01))
    assert len(_calls(got)) == 6
    assert sum(isinstance(u, SourceFinished) for u in got) == 1, "the input ended once"
    assert follower.close() == [], "closed by the iteration"
    stop = threading.Event()
    stop.set()
    other = Follower([str(path)])
    assert len(_calls(list(other.updates(stop)))) == 6, "close reads what is there"


def test_a_key_log_written_while_following_decrypts_the_sessions_after_it(tmp_path: Path) -> None:
    """Each secret is logged before its session's packets are read (as a client logs it at
    its handshake), the key log one line at a time."""
    source = CAPTURES / "llm_sdk_openai"
    data = (source / "capture.pcap").read_bytes()
    keys = (source / "keylog.txt").read_bytes().splitlines(keepends=True)
    path, keylog = tmp_path / "tls.pcap", tmp_path / "keys.log"
    path.write_bytes(b"")
    keylog.write_bytes(b"")
    follower = Follower([str(path)], keylogs=[str(keylog)], clock=_Clock())
    seen = follower.poll()
    with keylog.open("ab") as k:
        for line in keys:
            k.write(line)
            k.flush()
            seen += follower.poll()
    starts = _record_starts(data)
    with path.open("ab") as f:
        for n, start in enumerate(starts):
            f.write(data[start if n else 0 : starts[n + 1] if n + 1 < len(starts) else len(data)])
            f.flush()
            seen += follower.poll()
    seen += follower.close()
    analysis = Analysis()
    batch = [
        c
        for c in analysis.watch(run([str(path)], Options(calls=True, keylogs=[str(keylog)])))
        if isinstance(c, Call)
    ]
    analysis.finish()
    render = RenderOptions()
    assert batch, "the capture holds calls once decrypted"
    got = [call_json(u.call, render) for u in seen if isinstance(u, CallFinished)]
    assert got == [call_json(c, render) for c in batch]
    reports = [u.report for u in seen if isinstance(u, SourceFinished)]
    keyed = [(r.format, r.key_secrets, r.diagnostics) for r in reports if r.format == "keylog"]
    assert keyed == [("keylog", 1, [])], "one TLS 1.3 session: six secrets of one client random"
