"""A Realtime session followed while it is written: each response's call comes once its
``response.done`` is read, while the WebSocket is still open (after an HTTP/1.1 upgrade, or
on an HTTP/2 or HTTP/3 stream), and what following ends with is what ``agentshark analyze``
gives for the whole file."""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path

import pytest

from agentshark.apis.model import Call
from agentshark.model import Exchange
from agentshark.output.report import RenderOptions, call_json, exchange_json
from agentshark.pipeline import Options, run
from agentshark.pipeline.follow import CallFinished, ExchangeFinished, Follower
from agentshark.pipeline.live import LiveRun
from agentshark.sources.pcap import read_pcap
from agentshark.sources.records import Packet
from agentshark.trace.collect import Analysis
from tests.helpers import CAPTURES, ROOT

_LOCAL = ROOT / "tests" / "data" / "captures"
_CASES = [
    _LOCAL / "ws_sdk_realtime_plain",
    _LOCAL / "ws_sdk_realtime_deflate",
    _LOCAL / "ws_sdk_realtime_tls13",
    CAPTURES / "ws_realtime_plain",
    _LOCAL / "ws_h2_realtime",  # RFC 8441: on an HTTP/2 stream, read as its DATA come
    _LOCAL / "h3_push_ws_datagram",  # RFC 9220: on an HTTP/3 stream
]
_R = RenderOptions(events=True)


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _keylogs(folder: Path) -> list[str]:
    return [str(folder / "keys.log")] if (folder / "keys.log").exists() else []


def _records(data: bytes) -> list[int]:
    return [p.offset for p in read_pcap(io.BytesIO(data), "f") if isinstance(p, Packet)]


@pytest.mark.parametrize("folder", _CASES, ids=lambda p: p.name)
def test_each_response_comes_at_its_done_and_the_end_equals_analyze(
    folder: Path, tmp_path: Path
) -> None:
    data = (folder / "capture.pcap").read_bytes()
    starts = [*_records(data), len(data)]
    path = tmp_path / "grow.pcap"
    path.write_bytes(data[: starts[0]])
    follower = Follower([str(path)], keylogs=_keylogs(folder), clock=_Clock())
    seen = follower.poll()
    arrived: dict[str, int] = {}  # call id -> records written when it came
    session_at = None  # records written when the session's exchange came
    with path.open("ab") as f:
        for n in range(1, len(starts)):
            f.write(data[starts[n - 1] : starts[n]])
            f.flush()
            got = follower.poll()
            seen += got
            for u in got:
                if isinstance(u, CallFinished):
                    arrived[u.call.id] = n
                elif isinstance(u, ExchangeFinished) and u.exchange.messages is not None:
                    session_at = n
    seen += follower.close()
    if session_at is None:  # the capture ends with the session open: it comes at the end
        session_at = len(starts)
    batch = Analysis()
    items = list(
        batch.watch(
            run([str(folder / "capture.pcap")], Options(calls=True, keylogs=_keylogs(folder)))
        )
    )
    batch.finish()
    want = [call_json(c, _R) for c in items if isinstance(c, Call)]
    followed = [call_json(u.call, _R) for u in seen if isinstance(u, CallFinished)]
    assert followed == want
    assert set(arrived) == {c["id"] for c in want}, "every call came while the file grew"
    assert all(n < session_at for n in arrived.values()), (arrived, session_at)
    # each came with the record that holds its response.done, not later
    for call in (c for c in items if isinstance(c, Call)):
        assert call.timing.ended is not None
        n = arrived[call.id]
        before = [
            p.ts for p in read_pcap(io.BytesIO(data[: starts[n - 1]]), "f") if isinstance(p, Packet)
        ]
        last = [
            p.ts for p in read_pcap(io.BytesIO(data[: starts[n]]), "f") if isinstance(p, Packet)
        ][-1]
        assert max(before) < call.timing.ended == last
    live = follower.live.analysis
    assert [t.to_json() for t in live.traces] == [t.to_json() for t in batch.traces]
    assert [i.to_json() for i in live.incidents] == [i.to_json() for i in batch.incidents]
    assert live.model_hosts == batch.model_hosts


@pytest.mark.parametrize("folder", _CASES, ids=lambda p: p.name)
def test_early_calls_are_the_items_of_run_with_the_calls_before_their_session(
    folder: Path,
) -> None:
    keylogs = _keylogs(folder)
    path = str(folder / "capture.pcap")
    data = Path(path).read_bytes()
    want = list(run([path], Options(calls=True, keylogs=keylogs)))
    live = LiveRun([path], Options(calls=True, keylogs=keylogs, early_calls=True))
    got = live.start()
    for pos in range(0, len(data), 700):
        got += live.push(0, data[pos : pos + 700])
    got += live.close()

    def js(item: object) -> object:
        if isinstance(item, Call):
            return call_json(item, _R)
        if isinstance(item, Exchange):
            return exchange_json(item, _R)
        return type(item).__name__

    assert sorted(map(repr, map(js, got))) == sorted(map(repr, map(js, want)))

    def session_kinds(items: Sequence[object]) -> list[str]:
        return [
            ("call" if isinstance(i, Call) else "ws")
            for i in items
            if (isinstance(i, Call) and i.api == "openai.realtime")
            or (isinstance(i, Exchange) and i.messages is not None)
        ]

    kinds = session_kinds(got)
    assert kinds[-1] == "ws" and "call" in kinds, kinds
    batch_kinds = session_kinds(want)
    assert batch_kinds[0] == "ws", "run gives a session's calls after its exchange"
