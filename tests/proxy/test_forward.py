"""Forward mode: httpx honours the proxy (as HTTPS_PROXY clients do) and trusts the CA that
``agentshark proxy --forward`` generated in its confdir (``agentshark ca`` prints its path);
the TLS it intercepts is recorded like reverse mode's plain HTTP, and ``--keylog`` writes the
secrets of its TLS sessions."""

from __future__ import annotations

import json
import ssl
from pathlib import Path

import httpx

from tests.proxy.harness import ProxyRun, agentshark, needs_mitmproxy
from tests.proxy.upstream import Upstream, replies_from_capture

pytestmark = needs_mitmproxy


def test_https_through_the_forward_proxy_with_the_generated_ca(tmp_path: Path) -> None:
    confdir, har = tmp_path / "ca", tmp_path / "rec.har"
    shown = agentshark("ca", "--confdir", str(confdir), "--install-hint")
    assert shown.returncode == 0, shown.stderr
    cert = Path(shown.stdout.splitlines()[0])
    assert cert == confdir / "mitmproxy-ca-cert.pem" and cert.is_file()
    assert f"SSL_CERT_FILE={cert}" in shown.stdout and "NODE_EXTRA_CA_CERTS" in shown.stdout
    with Upstream(replies_from_capture("llm_sdk_openai"), tmp_path) as up:
        args = ["--forward", "--confdir", str(confdir), "--upstream-ca", str(up.cert)]
        args += ["--keylog", str(tmp_path / "keys.log")]
        with ProxyRun([*args, "-w", str(har), "--no-redact"]) as proxy:
            trust = ssl.create_default_context(cafile=str(cert))
            with httpx.Client(proxy=proxy.url, verify=trust, timeout=60) as client:
                answer = client.post(
                    f"{up.url}/v1/chat/completions",
                    json={"model": "gpt-stub", "messages": [{"role": "user", "content": "hi"}]},
                    headers={"authorization": "Bearer fixture-key"},
                )
            assert answer.status_code == 200
            proxy.wait_exchanges(1)
        assert proxy.stop() == 0
    assert [r.path for r in up.received] == ["/v1/chat/completions"]
    # both TLS sessions (client side, upstream side) in SSLKEYLOGFILE format
    lines = (tmp_path / "keys.log").read_text().splitlines()
    labels = [line.split()[0] for line in lines if line.strip() and not line.startswith("#")]
    assert labels.count("CLIENT_TRAFFIC_SECRET_0") == 2
    (entry,) = json.loads(har.read_text())["log"]["entries"]
    assert entry["request"]["url"] == f"{up.url}/v1/chat/completions"
    assert json.loads(entry["response"]["content"]["text"]) == answer.json()
    (call,) = [u["call"] for u in proxy.updates if u["update"] == "call"]
    assert call["api"] == "openai.chat" and call["response_id"] == answer.json()["id"]
