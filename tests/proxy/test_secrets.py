"""No credential leaves the gateway except towards the upstream: the planted-secrets corpus
(``tests/data/secrets/h1/capture.har``, see ``tests/output/test_secrets.py``) is sent again
through ``agentshark proxy`` by httpx, request for request, to a local upstream answering
with the recorded responses (the 401 echoing the key, the streamed reply with secrets, MCP
and A2A results...). The HAR file, the live JSON updates and the proxy's standard error hold
none of the secrets, or any distinctive piece of one; the upstream received every secret of
the requests as sent."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from tests.output.test_secrets import ENCODED_ONLY, H1, SECRETS, leaks
from tests.proxy.harness import ProxyRun, needs_mitmproxy
from tests.proxy.upstream import Upstream, replies_from_har

pytestmark = needs_mitmproxy
_NOT_SENT = {"host", "content-length", "connection", "accept-encoding"}


@pytest.mark.parametrize("fmt", ["json", "text"])
def test_no_planted_secret_is_recorded_or_shown(tmp_path: Path, fmt: str) -> None:
    recorded = json.loads((H1 / "capture.har").read_text())["log"]["entries"]
    har = tmp_path / "rec.har"
    with Upstream(replies_from_har(H1 / "capture.har"), tmp_path) as up:
        args = ["--upstream", up.url, "--upstream-ca", str(up.cert), "-w", str(har)]
        with (
            ProxyRun(args, fmt=fmt) as proxy,
            httpx.Client(base_url=proxy.url, timeout=60) as client,
        ):
            for entry in recorded:
                req = entry["request"]
                headers = [
                    (h["name"], h["value"])
                    for h in req["headers"]
                    if h["name"].lower() not in _NOT_SENT
                ]
                target = "/" + req["url"].split("/", 3)[3]
                body = req.get("postData", {}).get("text", "").encode()
                response = client.request(req["method"], target, headers=headers, content=body)
                assert response.status_code == entry["response"]["status"]
            proxy.wait_recorded(har, len(recorded))
        assert proxy.stop() == 0
    if fmt == "text":  # the calls' lines and the trace trees were printed
        assert "openai.chat" in proxy.text and "anthropic.messages" in proxy.text
    assert json.loads(har.read_text())["log"]["entries"]
    assert leaks(har.read_text()) == []
    assert leaks(proxy.text) == []
    sent = json.dumps([e["request"] for e in recorded])
    received = json.dumps([[r.path, r.headers, r.body.decode()] for r in up.received])
    on_the_wire = {k: v for k, v in SECRETS.items() if k not in ENCODED_ONLY and v in sent}
    assert on_the_wire
    assert [name for name, value in on_the_wire.items() if value not in received] == []
