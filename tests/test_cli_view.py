"""``agentshark report`` and ``agentshark serve`` from the command line.

The served viewer is driven in a real Chromium against a server started as a user would
(``python -m agentshark serve ... --port 0``) on a free loopback port.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentshark.cli import main
from agentshark.cli_view import _loopback
from tests.output.viewer.browser import Seen, browser, need_chromium, open_page
from tests.output.viewer.test_xss import SCRIPT, _capture

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "agent_chat.pcap"
SHENZHEN = ROOT / "tests" / "data" / "runs" / "seed004_shenzhen"


def test_report_needs_an_output_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(EXAMPLE)]) == 2
    assert "-o report.html" in capsys.readouterr().err


def test_report_of_an_unreadable_input_still_writes_the_page(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "notes.bin"
    bad.write_bytes(b"\x00\x01\x02 not a capture")
    out = tmp_path / "r.html"
    assert main(["report", str(bad), str(EXAMPLE), "-o", str(out)]) == 1
    assert "notes.bin" in capsys.readouterr().err
    html = out.read_text()
    assert html.startswith("<!DOCTYPE html>") and "agentshark-trace-0" in html


def test_report_no_redact_keeps_the_credential(tmp_path: Path) -> None:
    secret = json.loads(EXAMPLE.with_name("agent_chat.truth.json").read_text())[
        "fake_credentials_sent"
    ]["authorization"].split()[-1]
    out = tmp_path / "r.html"
    assert main(["report", str(EXAMPLE), "-o", str(out)]) == 0
    assert secret not in out.read_text()
    assert main(["report", str(EXAMPLE), "--no-redact", "-o", str(out)]) == 0
    assert secret in out.read_text()


def test_loopback_hosts() -> None:
    assert _loopback("127.0.0.1") and _loopback("::1") and _loopback("localhost")
    assert not _loopback("0.0.0.0") and not _loopback("192.0.2.1") and not _loopback("example")


def test_serve_says_so_when_not_loopback(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("uvicorn")
    # 192.0.2.1 (TEST-NET-1) is no address of this machine: the bind fails, after the warning
    assert main(["serve", str(EXAMPLE), "--host", "192.0.2.1", "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert "WARNING: listening on 192.0.2.1, not loopback" in err
    assert "cannot listen on 192.0.2.1" in err


def test_serve_names_the_extra_when_missing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "uvicorn", None)
    assert main(["serve", str(EXAMPLE)]) == 2
    assert "pip install 'agentshark[serve]'" in capsys.readouterr().err


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    """``agentshark serve`` over a folder (two runs and the XSS capture) on a free port."""
    pytest.importorskip("uvicorn")
    folder = tmp_path / "captures"
    (folder / "runs").mkdir(parents=True)
    shutil.copy(EXAMPLE, folder / "agent_chat.pcap")
    shutil.copy(SHENZHEN / "capture.pcap", folder / "runs" / "shenzhen.pcap")
    shutil.copy(_capture(tmp_path), folder / "xss.pcap")
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentshark", "serve", str(folder), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None and proc.stderr is not None
        line = proc.stdout.readline()
        assert "serving 3 inputs at http://127.0.0.1:" in line, line + proc.stderr.read()
        yield line.split(" at ")[1].split()[0]
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_serve_in_a_browser(server: str) -> None:
    need_chromium()
    truth = json.loads((SHENZHEN / "truth.json").read_text())
    seen = Seen()
    with browser() as ctx:
        page = open_page(ctx, server, seen)
        names = page.inner_text("#captures")
        assert "agent_chat.pcap" in names and "runs/shenzhen.pcap" in names
        page.click("text=runs/shenzhen.pcap")
        page.wait_for_selector("body[data-ready]", state="attached")
        page.wait_for_selector(".item[data-kind=trace]")
        page.locator(".item[data-kind=trace]").first.click()
        page.locator(".srow.k-tool").click()
        page.click("#link-result")
        page.wait_for_selector(".part.flash")
        assert "tool_call_response" in page.inner_text(".part.flash")
        page.locator(".srow.k-model").nth(1).click()
        assert truth["final_answer"] in page.inner_text("#detail")
        # the tool's own HTTP exchange, on demand
        page.locator(".srow.k-tool").click()
        page.click("#link-execution")
        assert "GET http://127.0.0.1:" in page.inner_text("#detail")
        assert json.dumps(truth["tool_executions"][0]["result"], indent=2, ensure_ascii=False) in (
            page.inner_text("#detail")
        )
        page.fill("#search", "get_weather")
        page.click("#tab-calls")
        page.wait_for_selector(".count:has-text('1 of 2 calls')")
        # back to the list: the opened capture now has its summary
        page.goto(server)
        page.wait_for_selector("body[data-ready]", state="attached")
        row = page.locator("#captures tr", has_text="runs/shenzhen.pcap").inner_text()
        assert "analyzed" in row
        # the XSS corpus through the HTTP source
        page.click("text=xss.pcap")
        page.wait_for_selector(".item[data-kind=trace]")
        page.locator(".item[data-kind=trace]").first.click()
        page.locator(".srow.k-model").first.click()
        assert SCRIPT in page.inner_text("#detail")
        page.click("#view-raw")
        assert page.evaluate("typeof window.__xss") == "undefined"
    assert seen.dialogs == [] and seen.errors == [] and seen.console == []
    assert all(u.startswith(server) for u in seen.requests), seen.requests


def test_serve_api(tmp_path: Path) -> None:
    pytest.importorskip("starlette")
    from starlette.testclient import TestClient

    from agentshark.output.html_report import viewer_script
    from agentshark.output.serve import Library, make_app

    folder = tmp_path / "c"
    folder.mkdir()
    shutil.copy(EXAMPLE, folder / "a.pcap")
    (folder / "keys.log").write_text("CLIENT_RANDOM " + "00" * 32 + " " + "11" * 48 + "\n")
    (folder / ".git").mkdir()
    shutil.copy(EXAMPLE, folder / ".git" / "hidden.pcap")
    library = Library([folder], max_body=1 << 20)
    assert library.keylogs == [str(folder / "keys.log")]
    client = TestClient(make_app(library), base_url="http://127.0.0.1:8765")
    listing = client.get("/api/captures").json()
    assert [(c["name"], c["format"], c["summary"]) for c in listing["captures"]] == [
        ("a.pcap", "pcap", None)
    ]
    index = client.get("/api/c/0/index").json()
    assert index["summary"]["calls"] == 6 and index["live"] is False and index["version"] == 1
    trace = client.get("/api/c/0/trace/0").json()
    assert trace["index"] == 0 and trace["calls"]
    assert client.get("/api/c/0/trace/99").status_code == 404
    assert client.get("/api/c/7/index").status_code == 404
    assert client.get("/api/captures").json()["captures"][0]["summary"]["calls"] == 6
    page = client.get("/view/0")
    assert "default-src 'none'" in page.headers["content-security-policy"]
    assert 'data-api="/api/c/0"' in page.text
    assert client.get("/viewer.js").text == viewer_script()
    assert "agentshark viewer" in viewer_script()[:200]
    # a page of another site that rebinds its name to 127.0.0.1 is refused
    foreign = TestClient(make_app(library), base_url="http://attacker.example:8765")
    assert foreign.get("/api/captures").status_code == 400


class _Growing:
    """A source whose report grows once, as a follower of a file being written would."""

    def __init__(self, first: list[Path], then: list[Path]) -> None:
        from agentshark.output.viewer_run import build

        self.steps = [build([str(p) for p in first]).data, build([str(p) for p in then]).data]
        self.step = 0

    def index(self) -> dict[str, object]:
        data = self.steps[self.step]
        return {**data.index, "version": self.step + 1, "live": True}

    def trace(self, i: int) -> dict[str, object] | None:
        traces = self.steps[self.step].traces
        return traces[i] if 0 <= i < len(traces) else None

    def summary(self) -> dict[str, object] | None:
        return None


def test_a_live_source_is_polled_and_redrawn(tmp_path: Path) -> None:
    need_chromium()
    uvicorn = pytest.importorskip("uvicorn")
    import socket
    import threading

    from agentshark.output.serve import Library, make_app

    library = Library([EXAMPLE], max_body=1 << 20)
    growing = _Growing([SHENZHEN / "capture.pcap"], [SHENZHEN / "capture.pcap", EXAMPLE])
    library.sources["0"] = growing
    sock = socket.create_server(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(make_app(library), log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        seen = Seen()
        with browser() as ctx:
            page = open_page(ctx, f"http://127.0.0.1:{port}/view/0", seen)
            assert page.locator(".item[data-kind=trace]").count() == 1
            page.locator(".item[data-kind=trace]").first.click()
            growing.step = 1  # new calls finished: the viewer picks them up by itself
            page.wait_for_selector(".count:has-text('6 traces')", timeout=15_000)
            assert "6\nTRACES" in page.inner_text("#summary").upper()
            # the trace that was open is open again, from the new data
            page.wait_for_selector(".thead h1")
            assert page.locator(".srow").count() == 4
        assert seen.errors == [] and seen.console == []
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()
