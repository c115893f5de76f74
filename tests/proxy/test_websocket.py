"""A WebSocket session through the proxy (reverse mode, ws:// to wss://): the messages pass
both ways and are recorded, in order with their times, as the exchange's messages; the HAR's
``_webSocketMessages`` read back into the live exchange."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from websockets.sync.client import connect

from agentshark.cli import main
from tests.proxy.harness import ProxyRun, needs_mitmproxy
from tests.proxy.upstream import Replies, Upstream

pytestmark = needs_mitmproxy


def test_a_websocket_session_is_passed_through_and_recorded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    har = tmp_path / "rec.har"
    sent = ['{"type": "session.update"}', '{"type": "response.create"}']
    with Upstream(Replies(), tmp_path) as up:
        args = ["--upstream", up.url, "--upstream-ca", str(up.cert), "-w", str(har), "--no-redact"]
        with ProxyRun(args) as proxy:
            url = f"ws://127.0.0.1:{proxy.port}/v1/realtime?model=gpt-realtime"
            with connect(url, additional_headers={"authorization": "Bearer fixture"}) as ws:
                got = []
                for text in sent:
                    ws.send(text)
                    got.append(ws.recv(timeout=30))
            proxy.wait_exchanges(1)
        assert proxy.stop() == 0
    assert got == [f"echo: {t}" for t in sent]
    (live,) = [u["exchange"] for u in proxy.updates if u["update"] == "exchange"]
    assert live["upgrade"] == "websocket" and live["response"]["status"] == 101
    messages: list[dict[str, Any]] = live["messages"]
    assert [m["direction"] for m in messages] == ["client", "server", "client", "server"]
    assert all(m["type"] == "text" and m["complete"] for m in messages)
    starts = [m["started"] for m in messages]
    assert starts == sorted(starts)
    (entry,) = json.loads(har.read_text())["log"]["entries"]
    assert [m["data"] for m in entry["_webSocketMessages"]] == [sent[0], got[0], sent[1], got[1]]
    capsys.readouterr()
    assert main(["exchanges", str(har), "--format", "json", "--no-redact"]) == 0
    assert json.loads(capsys.readouterr().out)["exchanges"] == [live]
