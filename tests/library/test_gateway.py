"""The gateway as a live source: :class:`agentshark.library.gateway.ProxySource` (``agentshark
proxy`` as a child process, its HAR followed) under :func:`agentshark.live`, and the pytest
plugin's ``agentshark_proxy`` fixture running a test's own SDK calls under it.

Oracles: what the real openai and anthropic SDKs returned in the test, and ``analyze`` of the
recording once it is whole; the upstream (tests/proxy/upstream.py) replays the responses of
``../shared/captures/llm_sdk_*`` over HTTPS on 127.0.0.1.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

import agentshark
from agentshark.library.gateway import ProxyError, ProxySource
from agentshark.testing import GatewayTrace
from tests.proxy.harness import needs_mitmproxy, proxy_python
from tests.proxy.upstream import Upstream, replies_from_capture

pytestmark = needs_mitmproxy

OPENAI_KEY = "sk-proj-PlantedGateway0123456789abcdefGHIJ"
ANTHROPIC_KEY = "sk-ant-api03-PlantedGateway0123456789abcdefGHIJKL"
MSGS: Any = [{"role": "user", "content": "Say hello"}]


def test_an_sdk_call_inside_a_test_is_a_call_of_the_fixtures_trace(
    agentshark_proxy: Callable[..., GatewayTrace], tmp_path: Path
) -> None:
    with Upstream(replies_from_capture("llm_sdk_openai"), tmp_path) as up:
        gateway = agentshark_proxy(upstream=up.url, upstream_ca=up.cert, python=proxy_python())
        client = openai.OpenAI(base_url=f"{gateway.url}/v1", api_key=OPENAI_KEY, max_retries=0)
        chat = client.chat.completions.create(model="gpt-stub", messages=MSGS)
        (call,) = gateway.calls(at_least=1)  # live: the recording is followed as it is written
        assert (call.api, call.status, call.output_text) == (
            "openai.chat",
            "ok",
            chat.choices[0].message.content,
        )
        assert call.data["response_id"] == chat.id
        assert call.usage is not None and call.usage.output_tokens == chat.usage.completion_tokens  # type: ignore[union-attr]
        stream = client.chat.completions.create(model="gpt-stub", messages=MSGS, stream=True)
        text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
        report = gateway.report()  # stops the gateway: the whole recording
    assert [c.id for c in gateway.calls()] == [c.id for c in report.calls()] == ["call1", "call2"]
    assert report.calls()[1].stream and report.calls()[1].output_text == text
    assert gateway.source.returncode == 0
    assert OPENAI_KEY not in gateway.har.read_text()  # redacted, as the proxy records
    assert [u.kind for u in gateway.updates].count("trace") >= 1


def test_the_proxy_is_a_live_source(tmp_path: Path) -> None:
    with Upstream(replies_from_capture("llm_sdk_anthropic"), tmp_path) as up:
        source = ProxySource(
            routes={"/anthropic": up.url},
            upstream_ca=up.cert,
            python=proxy_python(),
            redact=False,
        )
        client = anthropic.Anthropic(
            base_url=f"{source.url}/anthropic", api_key=ANTHROPIC_KEY, max_retries=0
        )
        stop = threading.Event()
        updates: list[agentshark.LiveUpdate] = []

        def agent() -> None:
            client.messages.create(model="claude-stub", max_tokens=64, messages=MSGS)
            with client.messages.stream(model="claude-stub", max_tokens=64, messages=MSGS) as s:
                s.get_final_message()

        worker = threading.Thread(target=agent)
        worker.start()
        for update in agentshark.live(source, stop=stop, redact=False):
            updates.append(update)
            if sum(u.kind == "call" for u in updates) == 2:
                stop.set()
        worker.join()
    calls = [u.call for u in updates if u.call is not None]
    assert [(c.api, c.stream, c.complete) for c in calls] == [
        ("anthropic.messages", False, True),
        ("anthropic.messages", True, True),
    ]
    assert updates[-1].kind in ("trace", "source", "incident")
    assert not source.har.exists()  # a recording of its own, removed at close


def test_a_proxy_that_cannot_start_says_why(tmp_path: Path) -> None:
    with pytest.raises(ProxyError, match="give an http:// or https:// URL"):
        ProxySource(upstream="ftp://example.com", python=proxy_python())
