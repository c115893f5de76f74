"""HTTP/2 on the proxy's client side: httpx with ``http2=True`` through ``agentshark proxy`` to
an upstream that speaks HTTP/2 (hypercorn, ALPN ``h2``), in forward mode (``HTTPS_PROXY``,
TLS intercepted with the generated CA) and in reverse mode with an ``https://`` base URL.

httpx offers ``http/1.1`` before ``h2``; the proxy makes the upstream's TLS first and gives
the client the protocol the upstream chose, so the client speaks HTTP/2 to the proxy as it
would to the upstream. Oracles: the client's and the upstream's own HTTP versions, what the
client read, and the HAR read back, which equals the live updates the proxy printed.
HTTP/2 without TLS (h2c prior knowledge), which mitmproxy does not speak, is refused and
said, and nothing reaches the upstream.
"""

from __future__ import annotations

import json
import ssl
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentshark.cli import main
from tests.proxy.harness import ProxyRun, agentshark, needs_mitmproxy
from tests.proxy.upstream import Upstream, replies_from_capture

pytestmark = needs_mitmproxy

CHAT = {"model": "gpt-stub", "messages": [{"role": "user", "content": "Say hello"}]}


def _ca(tmp_path: Path) -> tuple[Path, ssl.SSLContext]:
    confdir = tmp_path / "ca"
    shown = agentshark("ca", "--confdir", str(confdir))
    assert shown.returncode == 0, shown.stderr
    cert = Path(shown.stdout.splitlines()[0])
    return confdir, ssl.create_default_context(cafile=str(cert))


def _two_calls(client: httpx.Client, url: str) -> list[tuple[str, Any]]:
    """A chat completion and a streamed one: (HTTP version, what the client read)."""
    plain = client.post(url, json=CHAT)
    with client.stream("POST", url, json={**CHAT, "stream": True}) as streamed:
        text = b"".join(streamed.iter_raw()).decode()
    return [(plain.http_version, plain.json()), (streamed.http_version, text)]


def _report(har: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    capsys.readouterr()
    assert main(["analyze", str(har), "--format", "json", "--no-redact"]) == 0
    report: dict[str, Any] = json.loads(capsys.readouterr().out)
    return report


def _check(
    proxy: ProxyRun, har: Path, seen: list[tuple[str, Any]], up: Upstream, capsys: Any
) -> None:
    assert [version for version, _ in seen] == ["HTTP/2", "HTTP/2"]
    assert up.http_versions == ["2", "2"]
    entries = json.loads(har.read_text())["log"]["entries"]
    assert [(e["request"]["httpVersion"], e["response"]["httpVersion"]) for e in entries] == [
        ("HTTP/2", "HTTP/2")
    ] * 2
    assert json.loads(entries[0]["response"]["content"]["text"]) == seen[0][1]
    assert entries[1]["response"]["content"]["text"] == seen[1][1]
    report = _report(har, capsys)
    updates = proxy.updates
    assert report["exchanges"] == [u["exchange"] for u in updates if u["update"] == "exchange"]
    assert report["calls"] == [u["call"] for u in updates if u["update"] == "call"]
    plain, streamed = report["calls"]
    assert [e["transport"] for e in report["exchanges"]] == ["h2", "h2"]
    assert (plain["api"], plain["complete"], plain["response_id"]) == (
        "openai.chat",
        True,
        seen[0][1]["id"],
    )
    assert streamed["stream"] and streamed["complete"] and streamed["finish_reasons"] == ["stop"]
    assert streamed["timing"]["chunks"] == 11  # one DATA frame per event, as sent


def test_forward_mode_speaks_http2_to_an_http2_client(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    confdir, trust = _ca(tmp_path)
    har = tmp_path / "rec.har"
    with Upstream(replies_from_capture("llm_sdk_openai"), tmp_path, http2=True) as up:
        args = ["--forward", "--confdir", str(confdir), "--upstream-ca", str(up.cert)]
        with ProxyRun([*args, "-w", str(har), "--no-redact"]) as proxy:
            with httpx.Client(proxy=proxy.url, http2=True, verify=trust, timeout=60) as client:
                seen = _two_calls(client, f"{up.url}/v1/chat/completions")
            proxy.wait_exchanges(2)
        assert proxy.stop() == 0
    _check(proxy, har, seen, up, capsys)


def test_reverse_mode_speaks_http2_over_tls(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    confdir, trust = _ca(tmp_path)
    har = tmp_path / "rec.har"
    with Upstream(replies_from_capture("llm_sdk_openai"), tmp_path, http2=True) as up:
        args = ["--upstream", up.url, "--upstream-ca", str(up.cert), "--confdir", str(confdir)]
        with ProxyRun([*args, "-w", str(har), "--no-redact"]) as proxy:
            with httpx.Client(http2=True, verify=trust, timeout=60) as client:
                url = f"https://127.0.0.1:{proxy.port}/v1/chat/completions"
                seen = _two_calls(client, url)
            proxy.wait_exchanges(2)
        assert proxy.stop() == 0
    _check(proxy, har, seen, up, capsys)


def test_http2_without_tls_is_refused_and_said(tmp_path: Path) -> None:
    har = tmp_path / "rec.har"
    with Upstream(replies_from_capture("llm_sdk_openai"), tmp_path, http2=True) as up:
        args = ["--upstream", up.url, "--upstream-ca", str(up.cert), "-w", str(har)]
        with ProxyRun(args) as proxy:
            with (
                httpx.Client(http1=False, http2=True, timeout=60) as client,
                pytest.raises(httpx.RemoteProtocolError),
            ):
                client.post(f"{proxy.url}/v1/chat/completions", json=CHAT)
            proxy.wait_for(
                lambda: any("h2c prior knowledge" in line for line in proxy.err), what="refusal"
            )
        assert proxy.stop() == 0
    assert up.received == []
    assert json.loads(har.read_text())["log"]["entries"] == []
    assert "use HTTP/1.1 with an http:// base URL, or HTTP/2 over TLS" in proxy.text
