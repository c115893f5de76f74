"""``serve --live`` following the gateway: ``agentshark serve --live rec.har`` while
``agentshark proxy -w rec.har`` records. The proxy keeps its HAR file a whole document after
each exchange (each entry written over the last one's closing brackets), and the follower
reads a document again when it changed, so each call is shown once it is recorded, while the
proxy runs; once the proxy stopped, what is shown is what ``serve`` shows for the finished
file. The SDK is the real openai one; the upstream replays ``../shared/captures/llm_sdk_openai``.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import openai

from agentshark.output.serve import FileSource
from agentshark.output.serve_live import LiveSource
from tests.proxy.harness import ProxyRun, needs_mitmproxy
from tests.proxy.upstream import Upstream, replies_from_capture

pytestmark = needs_mitmproxy

MSGS: Any = [{"role": "user", "content": "Say hello"}]


def _wait(source: LiveSource, done: Any, seconds: float = 60.0) -> dict[str, Any]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        index = source.index()
        if done(index):
            return index
        time.sleep(0.05)
    raise AssertionError(f"not reached in {seconds} s: {source.index().get('summary')}")


def test_serve_live_shows_the_proxys_calls_as_they_are_recorded(tmp_path: Path) -> None:
    har = tmp_path / "rec.har"
    with Upstream(replies_from_capture("llm_sdk_openai"), tmp_path) as up:
        args = ["--upstream", up.url, "--upstream-ca", str(up.cert), "-w", str(har)]
        with ProxyRun(args) as proxy:
            source = LiveSource([str(har)], [], max_body=64 << 20, redact=True)
            try:
                client = openai.OpenAI(
                    base_url=f"{proxy.url}/v1", api_key="sk-fixture", max_retries=0
                )
                chat = client.chat.completions.create(model="gpt-stub", messages=MSGS)
                first = _wait(source, lambda i: i["summary"]["calls"] == 1)
                assert first["live"] is True
                stream = client.chat.completions.create(
                    model="gpt-stub", messages=MSGS, stream=True
                )
                for _ in stream:
                    pass
                second = _wait(source, lambda i: i["summary"]["calls"] == 2)
                assert second["live"] is True and second["version"] > first["version"]
                assert proxy.process.poll() is None  # shown while the proxy still runs
            finally:
                proxy.stop()
                source.close()
    final = source.index()
    assert final["live"] is False
    whole = FileSource([str(har)], [], max_body=64 << 20, redact=True).index()
    keys = ("exchanges", "calls", "traces", "incidents", "errors")
    assert {k: final["summary"][k] for k in keys} == {k: whole["summary"][k] for k in keys}
    assert final["summary"]["calls"] == 2
    assert chat.id in str(source.trace(0))
