"""The real ``openai`` and ``anthropic`` SDKs call through ``agentshark proxy`` (reverse mode,
one route per SDK) to local HTTPS upstreams that answer with the responses recorded in
``../shared/captures/llm_sdk_{openai,anthropic}``, streamed and not.

Oracles: what each SDK returned to its caller is what the calls of the recording say; the
live JSON updates the proxy printed are the exchanges and calls that ``agentshark analyze``
reads back from its HAR file, field for field (ids, times, chunks, completeness); the
upstream received every request, and its credentials, as the SDK sent them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

from agentshark.cli import main
from tests.proxy.harness import ProxyRun, needs_mitmproxy
from tests.proxy.upstream import Upstream, replies_from_capture

pytestmark = needs_mitmproxy

OPENAI_KEY = "sk-proj-PlantedOpenAI0123456789abcdefGHIJ"
ANTHROPIC_KEY = "sk-ant-api03-PlantedAnthropic0123456789abcdefGHIJKL"
WEATHER: Any = {
    "name": "get_weather",
    "description": "Weather for a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
}


def _report(path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    capsys.readouterr()
    assert main(["analyze", str(path), "--format", "json", "--no-redact"]) == 0
    report: dict[str, Any] = json.loads(capsys.readouterr().out)
    return report


def _openai_run(base_url: str) -> dict[str, Any]:
    """The five calls of the recorded run, and what the SDK gave back for each."""
    client = openai.OpenAI(base_url=base_url, api_key=OPENAI_KEY, max_retries=0)
    msgs: Any = [{"role": "user", "content": "Say hello"}]
    seen: dict[str, Any] = {}
    chat = client.chat.completions.create(model="gpt-stub", messages=msgs)
    seen["chat"] = (chat.id, chat.choices[0].message.content, chat.usage)
    stream = client.chat.completions.create(model="gpt-stub", messages=msgs, stream=True)
    seen["chat_stream"] = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    tools = client.chat.completions.create(
        model="gpt-stub", messages=msgs, tools=[{"type": "function", "function": WEATHER}]
    )
    call: Any = tools.choices[0].message.tool_calls[0]  # type: ignore[index]
    function = call.function
    seen["tools"] = (tools.choices[0].finish_reason, call.id, function.name, function.arguments)
    response = client.responses.create(model="gpt-stub", input="Say hello")
    seen["responses"] = (response.id, response.output_text)
    events = list(client.responses.create(model="gpt-stub", input="Say hello", stream=True))
    seen["responses_stream"] = [e.type for e in events]
    return seen


def _anthropic_run(base_url: str) -> dict[str, Any]:
    client = anthropic.Anthropic(base_url=base_url, api_key=ANTHROPIC_KEY, max_retries=0)
    msgs: Any = [{"role": "user", "content": "Say hello"}]
    seen: dict[str, Any] = {}
    message = client.messages.create(model="claude-stub", max_tokens=64, messages=msgs)
    seen["message"] = (message.id, message.content[0].text, message.stop_reason, message.usage)  # type: ignore[union-attr]
    with client.messages.stream(model="claude-stub", max_tokens=64, messages=msgs) as stream:
        seen["stream"] = "".join(stream.text_stream)
    tool = {"name": "get_weather", "input_schema": WEATHER["parameters"]}
    used = client.messages.create(
        model="claude-stub",
        max_tokens=64,
        messages=msgs,
        tools=[tool],  # type: ignore[list-item]
    )
    block = used.content[-1]
    seen["tools"] = (used.stop_reason, block.id, block.name, block.input)  # type: ignore[union-attr]
    return seen


def _text(call: dict[str, Any]) -> str:
    return "".join(
        p.get("content", "")
        for m in call["output_messages"]
        for p in m["parts"]
        if p["type"] == "text"
    )


def _tool_call(call: dict[str, Any]) -> dict[str, Any]:
    parts = [p for m in call["output_messages"] for p in m["parts"] if p["type"] == "tool_call"]
    assert len(parts) == 1, parts
    part: dict[str, Any] = parts[0]
    return part


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One proxy run with both SDKs: what they saw, the live updates, what upstream got."""
    tmp = tmp_path_factory.mktemp("proxy")
    oa_dir, an_dir = tmp / "openai", tmp / "anthropic"
    oa_dir.mkdir()
    an_dir.mkdir()
    with (
        Upstream(replies_from_capture("llm_sdk_openai"), oa_dir) as oa,
        Upstream(replies_from_capture("llm_sdk_anthropic"), an_dir) as an,
    ):
        bundle = tmp / "upstreams.pem"
        bundle.write_bytes(oa.cert.read_bytes() + an.cert.read_bytes())
        har = tmp / "rec.har"
        args = ["--route", f"/openai={oa.url}", "--route", f"/anthropic={an.url}"]
        args += ["--upstream-ca", str(bundle), "-w", str(har), "--no-redact"]
        with ProxyRun(args) as proxy:
            seen = {
                "openai": _openai_run(f"{proxy.url}/openai/v1"),
                "anthropic": _anthropic_run(f"{proxy.url}/anthropic"),
            }
            proxy.wait_exchanges(8)
        code = proxy.stop()
    return {
        "seen": seen,
        "code": code,
        "updates": proxy.updates,
        "stderr": "".join(proxy.err),
        "har": har,
        "received": [*oa.received, *an.received],
    }


def test_the_recording_holds_what_the_sdks_saw(
    recording: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    assert recording["code"] == 0, recording["stderr"]
    report = _report(recording["har"], capsys)
    calls: dict[str, list[dict[str, Any]]] = {}
    for call in report["calls"]:
        calls.setdefault(call["api"], []).append(call)
    oa, an = recording["seen"]["openai"], recording["seen"]["anthropic"]
    chat, chat_stream, tools = calls["openai.chat"]
    assert (chat["response_id"], _text(chat)) == oa["chat"][:2]
    assert chat["usage"]["input_tokens"] == oa["chat"][2].prompt_tokens
    assert chat["usage"]["output_tokens"] == oa["chat"][2].completion_tokens
    assert chat_stream["stream"] and chat_stream["complete"]
    assert _text(chat_stream) == oa["chat_stream"]
    part = _tool_call(tools)
    assert (tools["finish_reasons"], part["id"], part["name"]) == (
        [oa["tools"][0]],
        *oa["tools"][1:3],
    )
    assert part["arguments"] == json.loads(oa["tools"][3])
    plain, streamed = calls["openai.responses"]
    assert (plain["response_id"], _text(plain)) == oa["responses"]
    assert streamed["stream"] and streamed["complete"]
    message, stream, used = calls["anthropic.messages"]
    assert (message["response_id"], _text(message)) == an["message"][:2]
    assert message["finish_reasons"] == [an["message"][2]]
    assert message["usage"]["output_tokens"] == an["message"][3].output_tokens
    assert _text(stream) == an["stream"] and stream["complete"]
    part = _tool_call(used)
    assert used["finish_reasons"] == [an["tools"][0]]
    assert (part["id"], part["name"], part["arguments"]) == an["tools"][1:]


def test_the_har_reads_back_into_the_live_report(
    recording: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    report = _report(recording["har"], capsys)
    updates = recording["updates"]
    live_exchanges = [u["exchange"] for u in updates if u["update"] == "exchange"]
    live_calls = [u["call"] for u in updates if u["update"] == "call"]
    assert len(live_exchanges) == 8
    assert report["exchanges"] == live_exchanges
    assert report["calls"] == live_calls
    assert all(c["timing"]["first_token"] is not None for c in live_calls if c["stream"])


def test_streams_are_recorded_chunk_by_chunk(recording: dict[str, Any]) -> None:
    entries = json.loads(recording["har"].read_text())["log"]["entries"]
    streamed = [e for e in entries if "event-stream" in e["response"]["content"]["mimeType"]]
    assert len(streamed) == 3
    for entry in streamed:
        chunks = entry["_agentshark"]["response"]["chunks"]
        text = entry["response"]["content"]["text"].encode()
        assert sum(size for _, size in chunks) == len(text)
        assert len(chunks) > 1  # one write per event upstream, 5 ms apart
        times = [t for t, _ in chunks]
        assert times == sorted(times)
        assert entry["_agentshark"]["response"]["started"] <= times[0]


def test_the_upstream_got_the_requests_and_credentials_untouched(
    recording: dict[str, Any],
) -> None:
    received = recording["received"]
    assert len(received) == 8
    paths = [r.path for r in received]
    assert paths.count("/v1/chat/completions") == 3 and paths.count("/v1/messages") == 3
    for r in received:
        key = ANTHROPIC_KEY if r.path.startswith("/v1/messages") else OPENAI_KEY
        credentials = [v for k, v in r.headers if k in ("authorization", "x-api-key")]
        assert credentials in ([key], [f"Bearer {key}"])
