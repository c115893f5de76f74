"""What following a growing capture costs: latency, idle CPU, trace rebuilds.

    sudo .venv/bin/python bench/follow.py latency --calls 40 [--no-immediate]
    .venv/bin/python bench/follow.py idle --seconds 10
    .venv/bin/python bench/follow.py rebuild [--files 800]

``latency``: a real ``tcpdump -i lo -U --immediate-mode -w`` (root), a stdlib HTTP/1.1
server answering OpenAI-style SSE chat streams on one keep-alive connection, and the
:class:`~agentshark.pipeline.follow.Follower` iterating ``updates()`` in a thread with its
default poll interval. For each call: the time from the client's last response byte (the
last packet is written by then, with --immediate-mode) to the ``CallFinished`` update.
``--no-immediate`` leaves libpcap's buffer timeout on, as plain ``tcpdump -w`` has it.

``idle``: the follower on a capture that does not grow; CPU seconds per wall second.

``rebuild``: the time of one trace rebuild (``Analysis.finish``) over the calls of the
first N corpus cassettes, at several sizes: what a live view pays per rebuild.

Nothing asserts a timing; figures go to stdout.
"""

from __future__ import annotations

import argparse
import http.client
import json
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from agentshark.pipeline import Options, run
from agentshark.pipeline.follow import CallFinished, Follower
from agentshark.trace.collect import Analysis

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "corpus"
MODEL = "gpt-4o-mini-2024-07-18"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        base = {"id": "chatcmpl-b", "object": "chat.completion.chunk", "created": 1, "model": MODEL}
        deltas = [{"role": "assistant", "content": ""}, {"content": "Hi"}, {"content": " there"}]
        events = [{**base, "choices": [{"index": 0, "delta": d}]} for d in deltas]
        events.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
        for chunk in [
            *(f"data: {json.dumps(e)}\n\n".encode() for e in events),
            b"data: [DONE]\n\n",
        ]:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


def latency(calls: int, immediate: bool) -> None:
    tcpdump = shutil.which("tcpdump")
    if tcpdump is None:
        sys.exit("tcpdump is not installed")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    path = Path(tempfile.mkdtemp()) / "live.pcap"
    mode = ["--immediate-mode"] if immediate else []
    cmd = [tcpdump, "-i", "lo", "-U", *mode, "-s", "0", "-w", str(path), f"tcp port {port}"]
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE)
    assert proc.stderr is not None
    proc.stderr.readline()
    server = ThreadingHTTPServer(("127.0.0.1", port), _Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    follower = Follower([str(path)])
    stop = threading.Event()
    arrived: list[float] = []

    def follow() -> None:
        arrived.extend(
            time.monotonic() for u in follower.updates(stop) if isinstance(u, CallFinished)
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
    proc.send_signal(signal.SIGINT)
    proc.wait()
    server.shutdown()
    lat = [a - d for a, d in zip(arrived, done, strict=False)]
    print("per call (ms):", " ".join(f"{x * 1000:.0f}" for x in lat))
    ms = sorted(x * 1000 for x in lat)
    p90 = ms[int(len(ms) * 0.9) - 1]
    print(
        f"latency ({'immediate' if immediate else 'default libpcap buffering'}), {len(ms)} of "
        f"{calls} calls: median {statistics.median(ms):.1f} ms, p90 {p90:.1f} ms, "
        f"max {ms[-1]:.1f} ms, min {ms[0]:.1f} ms"
    )


def idle(seconds: float) -> None:
    path = Path(tempfile.mkdtemp()) / "idle.pcap"
    path.write_bytes((ROOT / "examples" / "agent_chat.pcap").read_bytes())
    follower = Follower([str(path)])
    follower.poll()
    before = resource.getrusage(resource.RUSAGE_SELF)
    start = time.monotonic()
    stop = threading.Event()
    threading.Timer(seconds, stop.set).start()
    for _ in follower.updates(stop):
        pass
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    print(f"idle: {cpu:.3f} CPU s over {wall:.1f} s wall = {100 * cpu / wall:.2f}% of one core")


def rebuild(files: int) -> None:
    cassettes = sorted(CORPUS.rglob("*.yaml"))[:files]
    analysis = Analysis()
    for _ in analysis.watch(run([str(p) for p in cassettes], Options(calls=True))):
        pass
    calls = list(analysis.calls)
    print(f"{len(calls)} calls from {len(cassettes)} cassettes")
    for n in (100, 250, 500, 1000, 2000, len(calls)):
        if n > len(calls):
            continue
        part = Analysis(calls=calls[:n], model_hosts=analysis.model_hosts)
        started = time.perf_counter()
        part.finish()
        took = time.perf_counter() - started
        print(f"rebuild over {n:5d} calls: {took * 1000:8.1f} ms, {len(part.traces)} traces")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    lat = sub.add_parser("latency")
    lat.add_argument("--calls", type=int, default=40)
    lat.add_argument("--no-immediate", action="store_true")
    sub.add_parser("idle").add_argument("--seconds", type=float, default=10.0)
    sub.add_parser("rebuild").add_argument("--files", type=int, default=800)
    args = parser.parse_args()
    if args.what == "latency":
        latency(args.calls, not args.no_immediate)
    elif args.what == "idle":
        idle(args.seconds)
    else:
        rebuild(args.files)


if __name__ == "__main__":
    main()
