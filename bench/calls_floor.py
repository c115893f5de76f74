"""Where the time of `agentshark calls` goes: the whole path in-process, next to the JSON floor.

Runs the pipeline with call recognition over a capture, then times ``orjson.loads`` over the
same documents the API parsers decode (request bodies, JSON response bodies, and the ``data``
of every SSE event except ``[DONE]``), and prints both with the floor's share. Timings are
reported, never asserted.

    .venv/bin/python bench/calls_floor.py bench/out/bench_h1.pcap [--keylog K]
"""

from __future__ import annotations

import argparse
import resource
import time
from pathlib import Path

import orjson

from agentshark.apis.model import Call
from agentshark.apis.view import ExchangeView
from agentshark.framing.events import SseEvent
from agentshark.model import Exchange
from agentshark.pipeline import Options, run


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("capture")
    ap.add_argument("--keylog", action="append", default=[])
    args = ap.parse_args()
    size = Path(args.capture).stat().st_size

    t0 = time.perf_counter()
    calls = exchanges = 0
    for item in run([args.capture], Options(keylogs=args.keylog, calls=True)):
        if isinstance(item, Call):
            calls += 1
        elif isinstance(item, Exchange):
            exchanges += 1
    total = time.perf_counter() - t0

    docs: list[bytes] = []
    for item in run([args.capture], Options(keylogs=args.keylog)):
        if not isinstance(item, Exchange):
            continue
        view = ExchangeView(item)
        if view.request_body[:1] == b"{":
            docs.append(view.request_body)
        if view.framing == "sse":
            docs.extend(
                e.data.encode()
                for e in view.events
                if isinstance(e, SseEvent) and e.data and e.data != "[DONE]"
            )
        elif view.response_body[:1] == b"{":
            docs.append(view.response_body)
    t1 = time.perf_counter()
    for doc in docs:
        orjson.loads(doc)
    floor = time.perf_counter() - t1
    mb = size / 1e6
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"capture {args.capture}: {mb:.1f} MB, {exchanges} exchanges, {calls} calls")
    print(
        f"calls path in-process: {total:.2f} s = {mb / total:.1f} MB/s, {calls / total:.0f} "
        f"calls/s, peak RSS {rss:.0f} MB"
    )
    print(
        f"orjson.loads floor over the same {len(docs)} documents "
        f"({sum(map(len, docs)) / 1e6:.1f} MB): {floor:.2f} s = {floor / total * 100:.1f}% "
        "of the calls path"
    )


if __name__ == "__main__":
    main()
