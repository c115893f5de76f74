"""What goes wrong is recorded and said: an upstream that refuses the connection, a path no
route takes, a port already in use."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import httpx

from tests.proxy.harness import ProxyRun, agentshark, needs_mitmproxy

pytestmark = needs_mitmproxy


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def test_a_refused_upstream_and_an_unrouted_path_are_recorded(tmp_path: Path) -> None:
    har = tmp_path / "rec.har"
    dead = f"https://127.0.0.1:{_closed_port()}"
    with ProxyRun(["--route", f"/dead={dead}", "-w", str(har)]) as proxy:
        with httpx.Client(base_url=proxy.url, timeout=60) as client:
            refused = client.post("/dead/v1/chat/completions", json={"model": "x"})
            unrouted = client.post("/v1/messages", json={"model": "x"})
        proxy.wait_exchanges(2)
        # a port in use: said in one line, exit status 2
        second = agentshark("proxy", "--upstream", dead, "--listen", f"127.0.0.1:{proxy.port}")
    assert proxy.stop() == 0
    assert second.returncode == 2
    assert f"cannot listen on 127.0.0.1:{proxy.port}" in second.stderr
    assert refused.status_code == 502
    assert unrouted.status_code == 502
    assert "no route for /v1/messages (routes: /dead)" in unrouted.json()["error"]["message"]
    first, other = [u["exchange"] for u in proxy.updates if u["update"] == "exchange"]
    assert first["request"]["url"] == f"{dead}/v1/chat/completions"
    assert first["response"] is None and not first["complete"]
    assert [d["code"] for d in first["diagnostics"]] == ["mitm.flow_error"]
    assert other["response"]["status"] == 502 and other["complete"]
    assert len(json.loads(har.read_text())["log"]["entries"]) == 2
