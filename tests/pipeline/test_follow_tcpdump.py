"""A real ``tcpdump -w`` writing while real traffic flows on loopback: the follower reports
each call while the capture is still being written, and once tcpdump stopped, the final
calls, traces and incidents are those of ``analyze`` on the finished file.

The traffic: a stdlib HTTP/1.1 server answering like OpenAI's Chat Completions API (a
streamed SSE answer in chunked transfer coding, then a JSON answer), a stdlib client on one
keep-alive connection; the second request replays the first answer, so both calls are one
trace (history). Needs root (or the capture capability) and tcpdump; skipped otherwise.
"""

from __future__ import annotations

import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from agentshark.output.report import RenderOptions, call_json
from agentshark.pipeline import Options, run
from agentshark.pipeline.follow import CallFinished, Follower, Update
from agentshark.trace.changes import TraceChanged
from agentshark.trace.collect import Analysis

MODEL = "gpt-4o-mini-2024-07-18"


def _sse_chunks(text: str) -> list[bytes]:
    base = {"id": "chatcmpl-live1", "object": "chat.completion.chunk", "created": 1, "model": MODEL}
    events = [{**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}]
    events += [
        {**base, "choices": [{"index": 0, "delta": {"content": word}, "finish_reason": None}]}
        for word in [text.split(" ")[0], *(" " + w for w in text.split(" ")[1:])]
    ]
    events.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    out = [f"data: {json.dumps(e)}\n\n".encode() for e in events]
    return [*out, b"data: [DONE]\n\n"]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if body.get("stream"):
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for chunk in _sse_chunks("Hello from the live wire"):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                self.wfile.flush()
                time.sleep(0.01)
            self.wfile.write(b"0\r\n\r\n")
            return
        answer = {
            "id": "chatcmpl-live2",
            "object": "chat.completion",
            "created": 2,
            "model": MODEL,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": "Still here."},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 30, "completion_tokens": 3, "total_tokens": 33},
        }
        data = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib name
        pass


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def capture(tmp_path: Path) -> Iterator[tuple[Path, int, subprocess.Popen[bytes]]]:
    tcpdump = shutil.which("tcpdump")
    if tcpdump is None:
        pytest.skip("tcpdump is not installed")
    if os.geteuid() != 0:
        pytest.skip("capturing on lo needs root (tests run as root in CI)")
    port = _free_port()
    path = tmp_path / "live.pcap"
    proc = subprocess.Popen(
        [
            tcpdump,
            "-i",
            "lo",
            "-U",
            "--immediate-mode",
            "-s",
            "0",
            "-w",
            str(path),
            f"tcp port {port}",
        ],
        stderr=subprocess.PIPE,
    )
    assert proc.stderr is not None
    line = proc.stderr.readline()  # "tcpdump: listening on lo, ..." once it captures
    if b"listening" not in line:
        proc.kill()
        proc.wait()
        pytest.skip(f"tcpdump cannot capture on lo: {line.decode(errors='replace').strip()}")
    yield path, port, proc
    if proc.poll() is None:
        proc.kill()
        proc.wait()


def _wait_for_call(follower: Follower, seen: list[Update], timeout: float = 15.0) -> float:
    """Poll until one more CallFinished comes; the time it came."""
    calls = sum(isinstance(u, CallFinished) for u in seen)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        seen.extend(follower.poll())
        if sum(isinstance(u, CallFinished) for u in seen) > calls:
            return time.monotonic()
        time.sleep(0.01)
    raise AssertionError(f"no call reported within {timeout}s: {seen}")


def _request(conn: http.client.HTTPConnection, body: dict[str, object]) -> float:
    data = json.dumps(body).encode()
    conn.request(
        "POST",
        "/v1/chat/completions",
        body=data,
        headers={"Content-Type": "application/json", "Authorization": "Bearer sk-live-test"},
    )
    response = conn.getresponse()
    response.read()
    return time.monotonic()


def test_calls_are_reported_while_tcpdump_writes_and_the_end_equals_analyze(
    capture: tuple[Path, int, subprocess.Popen[bytes]],
) -> None:
    path, port, tcpdump = capture
    server = ThreadingHTTPServer(("127.0.0.1", port), _Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    follower = Follower([str(path)])
    seen: list[Update] = []
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        first = [{"role": "user", "content": "Say hello"}]
        done1 = _request(conn, {"model": MODEL, "messages": first, "stream": True})
        got1 = _wait_for_call(follower, seen)
        assert tcpdump.poll() is None, "tcpdump still writes when the call is reported"
        history = [*first, {"role": "assistant", "content": "Hello from the live wire"}]
        second = [*history, {"role": "user", "content": "Again?"}]
        done2 = _request(conn, {"model": MODEL, "messages": second})
        got2 = _wait_for_call(follower, seen)
        assert tcpdump.poll() is None
        conn.close()
        print(f"latency: call1 {got1 - done1:.3f}s, call2 {got2 - done2:.3f}s")
    finally:
        server.shutdown()
        server.server_close()
    calls = [u.call for u in seen if isinstance(u, CallFinished)]
    assert [(c.id, c.stream, c.complete, c.finish_reasons) for c in calls] == [
        ("call1", True, True, ["stop"]),
        ("call2", False, True, ["stop"]),
    ]
    time.sleep(0.3)  # the FIN exchange reaches the file
    tcpdump.send_signal(signal.SIGINT)
    tcpdump.wait(timeout=10)
    seen.extend(follower.close())
    traced = [u for u in seen if isinstance(u, TraceChanged)]
    assert traced, "trace updates came"
    assert set(traced[-1].trace.calls) == {"call1", "call2"}

    analysis = Analysis()
    batch = list(analysis.watch(run([str(path)], Options(calls=True))))
    analysis.finish()
    render = RenderOptions()
    live = follower.live.analysis
    want_calls = [call_json(c, render) for c in batch if isinstance(c, type(calls[0]))]
    got_calls = [call_json(u.call, render) for u in seen if isinstance(u, CallFinished)]
    assert got_calls == want_calls
    assert [t.to_json() for t in live.traces] == [t.to_json() for t in analysis.traces]
    assert [i.to_json() for i in live.incidents] == [i.to_json() for i in analysis.incidents]
    assert live.traces[0].origin == "history"
