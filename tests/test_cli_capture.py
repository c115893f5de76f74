"""``agentshark capture``: what it says when it cannot capture, and how it ends by itself
(``--count``, ``--until-idle``) on loopback plain HTTP. The TLS and key log case is in
tests/pipeline/test_capture.py."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from agentshark.cli import main
from agentshark.pipeline.tcpdump import capture_filter, failure

CAPTURE = [sys.executable, "-m", "agentshark", "capture"]
needs_tcpdump = pytest.mark.skipif(shutil.which("tcpdump") is None, reason="tcpdump missing")


def test_no_tcpdump_says_how_to_install_it(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["capture", "--tcpdump", "/nonexistent/tcpdump"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("agentshark: /nonexistent/tcpdump: not found; ")
    assert "apt-get install tcpdump" in err and "--tcpdump PATH" in err


@needs_tcpdump
def test_an_interface_that_does_not_exist(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["capture", "-i", "nosuch0"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("agentshark: -i nosuch0: no such interface (tcpdump: nosuch0: No such")
    assert "the interfaces here: lo" in line


@needs_tcpdump
def test_a_filter_tcpdump_refuses(capsys: pytest.CaptureFixture[str]) -> None:
    if not _root():
        pytest.skip("tcpdump checks a filter once it may capture: needs root")
    assert main(["capture", "-i", "lo", "--filter", "tcp and ("]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("agentshark: tcpdump does not accept the filter '(tcp and ()': ")


def _root() -> bool:
    return os.geteuid() == 0


@needs_tcpdump
def test_no_permission_says_what_to_run(tmp_path: Path) -> None:
    """As an unprivileged user (``setpriv``, from root): tcpdump's refusal, and the cure."""
    if not _root() or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to run the capture as nobody")
    done = subprocess.run(
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *CAPTURE, "-i", "lo"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    if "No module named" in done.stderr:
        pytest.skip("the package is not readable by nobody here")
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    assert line.startswith("agentshark: no permission to capture on lo (lo: You don't have ")
    assert line.endswith(
        f"run as root (sudo agentshark capture ...), or let tcpdump capture for your user: "
        f"sudo setcap cap_net_raw,cap_net_admin=eip {shutil.which('tcpdump')}"
    )
    assert "Traceback" not in done.stderr


def test_failure_reads_tcpdump_messages() -> None:
    """tcpdump 4.99.3 / libpcap 1.10.3's own words."""
    said = "tcpdump: eth9: No such device exists\n(SIOCGIFHWADDR: No such device)\n"
    text = failure(said, interface="eth9", tcpdump="tcpdump", expression="tcp")
    assert text.startswith("-i eth9: no such interface (tcpdump: eth9: No such device exists ")
    said = "tcpdump: can't parse filter expression: syntax error\n"
    assert failure(said, interface="lo", tcpdump="t", expression="tcp and (").startswith(
        "tcpdump does not accept the filter 'tcp and (': can't parse filter expression"
    )
    assert failure("", interface="lo", tcpdump="t", expression="").endswith(
        "it exited without saying why"
    )


def test_capture_filter() -> None:
    assert capture_filter([], None) == "tcp"
    assert capture_filter([8000, 443], None) == "tcp and (port 8000 or port 443)"
    assert capture_filter([], "host 10.0.0.5") == "(host 10.0.0.5)"
    assert capture_filter([80], "not host 1.2.3.4") == "(not host 1.2.3.4) and tcp and (port 80)"


def test_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["capture", "-w", str(tmp_path / "missing" / "out.pcapng")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main(["capture", "--keylog", str(tmp_path)]) == 2
    assert "a directory" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["capture", "--port", "70000"])
    assert "not a TCP port" in capsys.readouterr().err


class _Chat(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        answer = {
            "id": "chatcmpl-count",
            "object": "chat.completion",
            "created": 3,
            "model": "gpt-4o-mini-2024-07-18",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": "ok"},
                    "finish_reason": "stop",
                }
            ],
        }
        data = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def chat_server() -> Iterator[int]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Chat)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def _can_capture() -> bool:
    if shutil.which("tcpdump") is None:
        return False
    return main(["capture", "-i", "lo", "--port", "9", "--until-idle", "0.1"]) == 0


@needs_tcpdump
def test_count_ends_the_capture_after_n_calls(chat_server: int, tmp_path: Path) -> None:
    if not _can_capture():
        pytest.skip("tcpdump cannot capture on lo here (root or the capture capability)")
    out = tmp_path / "count.pcapng"
    proc = subprocess.Popen(
        [*CAPTURE, "--port", str(chat_server), "--count", "1", "--format", "json", "-w", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    assert proc.stderr.readline().startswith("agentshark: capturing on lo")
    body = json.dumps({"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]})
    url = f"http://127.0.0.1:{chat_server}/v1/chat/completions"
    post = ["curl", "-s", "-o", os.devnull, "-H", "Content-Type: application/json", "-d", body, url]
    for _ in range(5):  # more traffic if tcpdump sits on the last packets of the first call
        subprocess.run(post, check=True, timeout=30)
        try:
            stdout, err = proc.communicate(timeout=10)
            break
        except subprocess.TimeoutExpired:
            continue
    else:
        proc.kill()
        pytest.fail("the capture did not end after its call")
    assert proc.returncode == 0  # ended by itself
    assert "captured on lo for " in err
    updates = [json.loads(line) for line in stdout.splitlines()]
    call, *_ = [u["call"] for u in updates if u["update"] == "call"]
    assert (call["api"], call["response_model"]) == ("openai.chat", "gpt-4o-mini-2024-07-18")
    assert updates[-1]["update"] in ("source", "trace", "diagnostic", "connection")
    assert main(["calls", str(out), "--format", "json", "-o", str(tmp_path / "r.json")]) == 0
    again = json.loads((tmp_path / "r.json").read_text())["calls"]
    assert again[0]["id"] == call["id"] and again[0]["complete"]


@needs_tcpdump
def test_until_idle_ends_a_quiet_capture(capsys: pytest.CaptureFixture[str]) -> None:
    if not _can_capture():
        pytest.skip("tcpdump cannot capture on lo here (root or the capture capability)")
    capsys.readouterr()
    assert main(["capture", "-i", "lo", "--port", "9", "--until-idle", "0.2"]) == 0
    captured = capsys.readouterr()
    assert "0 calls: no HTTP exchanges in the input" in captured.out
    assert "captured on lo for " in captured.err and ": 0 packets, " in captured.err


@needs_tcpdump
def test_a_tcpdump_that_dies_ends_the_capture_with_a_diagnostic(tmp_path: Path) -> None:
    """The library seam: LiveCapture.updates() ends when tcpdump exits, and says so."""
    import signal

    from agentshark.pipeline.capture import LiveCapture
    from agentshark.pipeline.follow import DiagnosticFound, SourceFinished

    if not _can_capture():
        pytest.skip("tcpdump cannot capture on lo here (root or the capture capability)")
    capture = LiveCapture("lo", ports=[9], write=str(tmp_path / "cut.pcapng"))
    os.kill(capture.child.pid, signal.SIGKILL)
    updates = list(capture.updates())  # no stop event: it ends by itself
    said = [u.diagnostic for u in updates if isinstance(u, DiagnosticFound)]
    assert [d.code for d in said] == ["capture.ended"]
    assert said[0].message.startswith("tcpdump exited by itself (status -9): ")
    assert capture.exit_status == -signal.SIGKILL
    assert any(isinstance(u, SourceFinished) for u in updates)


@needs_tcpdump
def test_sigterm_stops_the_capture_with_the_summary(tmp_path: Path) -> None:
    import signal

    if not _can_capture():
        pytest.skip("tcpdump cannot capture on lo here (root or the capture capability)")
    out = tmp_path / "term.pcapng"
    proc = subprocess.Popen(
        [*CAPTURE, "--port", "9", "-w", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    assert proc.stderr.readline().startswith("agentshark: capturing on lo (tcp and (port 9))")
    proc.send_signal(signal.SIGTERM)
    stdout, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert err.startswith("\nagentshark: stopped by SIGTERM: captured on lo for ")
    assert f"wrote {out}" in err
    assert "0 calls: no HTTP exchanges in the input" in stdout  # the trees, as analyze says
    assert main(["calls", str(out)]) == 0  # the file is whole
