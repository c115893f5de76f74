"""What live capture costs: latency from the wire to the call, and CPU while idle.

    sudo .venv/bin/python bench/capture.py latency --calls 40
    sudo .venv/bin/python bench/capture.py idle --seconds 30

``latency``: :class:`~agentshark.pipeline.capture.LiveCapture` on lo (tcpdump ``-U
--immediate-mode`` to a pipe) iterating ``updates()`` in a thread, a stdlib HTTP/1.1 server
answering OpenAI-style SSE chat streams on one keep-alive connection. For each call: the
time from the client's last response byte (its last packet is on the wire, and in tcpdump's
hands, by then) to the ``CallFinished`` update.

``idle``: the capture with no traffic on its port; CPU seconds per wall second of this
process (the pipeline's loop) and of the tcpdump child (from /proc).

Nothing asserts a timing; figures go to stdout.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import resource
import socket
import statistics
import sys
import threading
import time
from http.server import ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from agentshark.pipeline.capture import LiveCapture
from agentshark.pipeline.follow import CallFinished
from follow import MODEL, _Handler  # the same server as bench/follow.py


def latency(calls: int) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = ThreadingHTTPServer(("127.0.0.1", port), _Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    capture = LiveCapture("lo", ports=[port])
    stop = threading.Event()
    arrived: list[float] = []

    def follow() -> None:
        arrived.extend(
            time.monotonic() for u in capture.updates(stop) if isinstance(u, CallFinished)
        )

    thread = threading.Thread(target=follow)
    thread.start()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    done: list[float] = []
    for n in range(calls):
        body = json.dumps(
            {"model": MODEL, "stream": True, "messages": [{"role": "user", "content": f"q{n}"}]}
        )
        conn.request(
            "POST", "/v1/chat/completions", body=body, headers={"Content-Type": "application/json"}
        )
        conn.getresponse().read()
        done.append(time.monotonic())
        deadline = time.monotonic() + 5
        while len(arrived) <= n and time.monotonic() < deadline:
            time.sleep(0.001)
    conn.close()
    stop.set()
    thread.join()
    server.shutdown()
    per = [(a - d) * 1000 for a, d in zip(arrived, done, strict=False)]
    print("per call (ms):", " ".join(f"{x:.0f}" for x in per))
    lat = sorted(per)
    p90 = lat[int(len(lat) * 0.9) - 1]
    print(
        f"capture latency, {len(lat)} of {calls} calls: median {statistics.median(lat):.1f} ms, "
        f"p90 {p90:.1f} ms, max {lat[-1]:.1f} ms, min {lat[0]:.1f} ms"
    )


def _child_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def idle(seconds: float) -> None:
    capture = LiveCapture("lo", ports=[9], keylogs=["/nonexistent/keys.log"])
    stop = threading.Event()
    marks: list[tuple[float, float, float]] = []

    def mark() -> None:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        marks.append((time.monotonic(), usage.ru_utime + usage.ru_stime, _child_cpu(pid)))

    pid = capture.child.pid
    mark()

    def end() -> None:
        mark()
        stop.set()

    threading.Timer(seconds, end).start()
    for _ in capture.updates(stop):
        pass
    (t0, cpu0, child0), (t1, cpu1, child1) = marks
    wall, cpu, child = t1 - t0, cpu1 - cpu0, child1 - child0
    print(
        f"idle capture (a key log followed): agentshark {cpu:.3f} CPU s, tcpdump {child:.3f} "
        f"CPU s over {wall:.1f} s wall = {100 * cpu / wall:.2f}% and {100 * child / wall:.2f}% "
        "of one core"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    sub.add_parser("latency").add_argument("--calls", type=int, default=40)
    sub.add_parser("idle").add_argument("--seconds", type=float, default=30.0)
    args = parser.parse_args()
    if args.what == "latency":
        latency(args.calls)
    else:
        idle(args.seconds)


if __name__ == "__main__":
    main()
