#!/usr/bin/env python3
"""One SDK run through ``agentshark proxy``, recorded twice: the proxy's HAR file, and a
loopback capture of the same run (``tests/data/captures/proxy_sdk_run``).

The real ``openai`` (5 calls: chat, chat streamed, chat with a tool call, responses,
responses streamed), ``anthropic`` (3: message, message streamed, tool use) and
``google-genai`` (3: generate_content twice, generate_content_stream once, all declaring a
tool, ``http_options=HttpOptions(base_url=...)``) SDKs call through one proxy in reverse
mode (``--route /openai=...``, ``/anthropic=...``, ``/gemini=...``). Each route goes to its
own local HTTPS upstream (tests/proxy/upstream.py: uvicorn on 127.0.0.1, a self-signed
certificate) serving the responses recorded in ``../shared/captures/llm_sdk_openai``,
``../shared/captures/llm_sdk_anthropic`` and ``tests/data/captures/gemini_*_tls13_h1``, SSE
bodies one event per write 5 ms apart.

While it runs, two ``tcpdump -i lo`` capture it: ``capture.pcap`` the proxy's TLS
connections to the three upstreams (decrypted with ``keylog.txt``, the proxy's ``--keylog``),
and ``client.pcap`` the SDKs' plain HTTP connections to the proxy. Written:

- ``recording.har``: the proxy's ``-w`` (``--no-redact``: the keys are fake ones);
- ``capture.pcap`` (the upstream side), ``client.pcap``, ``keylog.txt``;
- ``run.json``: what each SDK returned to its caller (the oracle), the tcpdump counters,
  the package versions.

tests/proxy/test_proxy_vs_pcap.py compares them. Run with the test venv, after
``bash scripts/proxy_venv.sh`` (the proxy runs in ``.venv-proxy``), as root (tcpdump)::

    .venv/bin/python scripts/make_proxy_captures.py
"""

from __future__ import annotations

import json
import socket
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from tests.proxy.harness import ProxyRun  # noqa: E402
from tests.proxy.upstream import (  # noqa: E402
    Replies,
    Upstream,
    replies_from_capture,
    replies_from_pcap,
)

import genlib  # noqa: E402

OUT = ROOT / "tests" / "data" / "captures" / "proxy_sdk_run"
CAPTURES = ROOT / "tests" / "data" / "captures"
OPENAI_KEY = "sk-proj-FakeProxyRun0123456789abcdefGHIJ"
ANTHROPIC_KEY = "sk-ant-api03-FakeProxyRun0123456789abcdefGHIJKL"
GEMINI_KEY = "AIzaFakeProxyRun0123456789abcdefGHIJKLM"
WEATHER: Any = {
    "name": "get_weather",
    "description": "Weather for a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
}


def _gemini_replies() -> Replies:
    out = Replies()
    for name in ("gemini_generate_tls13_h1", "gemini_stream_tls13_h1"):
        part = replies_from_pcap(CAPTURES / name / "capture.pcap", CAPTURES / name / "keys.log")
        for key, queue in part.by_key.items():
            out.by_key[key].extend(queue)
        out.count += part.count
    return out


def _openai(base_url: str) -> dict[str, Any]:
    import openai

    client = openai.OpenAI(base_url=base_url, api_key=OPENAI_KEY, max_retries=0)
    msgs: Any = [{"role": "user", "content": "Say hello"}]
    chat = client.chat.completions.create(model="gpt-stub", messages=msgs)
    stream = client.chat.completions.create(model="gpt-stub", messages=msgs, stream=True)
    streamed = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    tools = client.chat.completions.create(
        model="gpt-stub", messages=msgs, tools=[{"type": "function", "function": WEATHER}]
    )
    call: Any = tools.choices[0].message.tool_calls[0]  # type: ignore[index]
    response = client.responses.create(model="gpt-stub", input="Say hello")
    events = list(client.responses.create(model="gpt-stub", input="Say hello", stream=True))
    done = [e for e in events if e.type == "response.completed"]
    return {
        "chat": {
            "id": chat.id,
            "text": chat.choices[0].message.content,
            "finish_reason": chat.choices[0].finish_reason,
            "usage": [chat.usage.prompt_tokens, chat.usage.completion_tokens]
            if chat.usage
            else None,
        },
        "chat_stream": {"text": streamed},
        "tools": {
            "finish_reason": tools.choices[0].finish_reason,
            "tool_call": [call.id, call.function.name, json.loads(call.function.arguments)],
        },
        "responses": {"id": response.id, "text": response.output_text},
        "responses_stream": {
            "events": [e.type for e in events],
            "id": done[0].response.id if done else None,
        },
    }


def _anthropic(base_url: str) -> dict[str, Any]:
    import anthropic

    client = anthropic.Anthropic(base_url=base_url, api_key=ANTHROPIC_KEY, max_retries=0)
    msgs: Any = [{"role": "user", "content": "Say hello"}]
    message = client.messages.create(model="claude-stub", max_tokens=64, messages=msgs)
    with client.messages.stream(model="claude-stub", max_tokens=64, messages=msgs) as stream:
        streamed = "".join(stream.text_stream)
        final = stream.get_final_message()
    tool = {"name": "get_weather", "input_schema": WEATHER["parameters"]}
    used = client.messages.create(
        model="claude-stub",
        max_tokens=64,
        messages=msgs,
        tools=[tool],  # type: ignore[list-item]
    )
    block: Any = used.content[-1]
    return {
        "message": {
            "id": message.id,
            "text": message.content[0].text,  # type: ignore[union-attr]
            "stop_reason": message.stop_reason,
            "usage": [message.usage.input_tokens, message.usage.output_tokens],
        },
        "stream": {"id": final.id, "text": streamed, "stop_reason": final.stop_reason},
        "tools": {"stop_reason": used.stop_reason, "tool_use": [block.id, block.name, block.input]},
    }


def _gemini(base_url: str) -> dict[str, Any]:
    from google import genai
    from google.genai import types

    client = genai.Client(
        api_key=GEMINI_KEY, http_options=types.HttpOptions(base_url=base_url, api_version="v1beta")
    )
    declaration = types.FunctionDeclaration(
        name="get_capital",
        description="The capital of a country",
        parameters_json_schema={"type": "object", "properties": {"country": {"type": "string"}}},
    )
    config = types.GenerateContentConfig(
        tools=[types.Tool(function_declarations=[declaration])],
        automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
    )
    seen: dict[str, Any] = {"generate": []}
    for _ in range(2):
        answer = client.models.generate_content(
            model="gemini-2.0-flash", contents="What is the capital?", config=config
        )
        calls = [[f.name, f.args] for f in answer.function_calls or []]
        finish = answer.candidates[0].finish_reason if answer.candidates else None
        seen["generate"].append({"function_calls": calls, "finish_reason": str(finish)})
    chunks = list(
        client.models.generate_content_stream(
            model="gemini-2.0-flash", contents="What is the capital?", config=config
        )
    )
    seen["stream"] = {
        "function_calls": [[f.name, f.args] for c in chunks for f in c.function_calls or []],
        "chunks": len(chunks),
    }
    return seen


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def main() -> int:
    tcpdump = genlib.ensure_tcpdump()
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        dirs = [tmp / n for n in ("openai", "anthropic", "gemini")]
        for d in dirs:
            d.mkdir()
        with (
            Upstream(replies_from_capture("llm_sdk_openai"), dirs[0]) as oa,
            Upstream(replies_from_capture("llm_sdk_anthropic"), dirs[1]) as an,
            Upstream(_gemini_replies(), dirs[2]) as ge,
        ):
            ups = {"openai": oa, "anthropic": an, "gemini": ge}
            bundle = tmp / "upstreams.pem"
            bundle.write_bytes(b"".join(u.cert.read_bytes() for u in ups.values()))
            listen = _free_port()
            captures = {
                "upstream": genlib.Tcpdump(tcpdump, OUT / "capture.pcap", 0),
                "client": genlib.Tcpdump(tcpdump, OUT / "client.pcap", listen),
            }
            captures["upstream"].argv[-1] = " or ".join(f"tcp port {u.port}" for u in ups.values())
            for capture in captures.values():
                capture.start()
            keys = OUT / "keylog.txt"
            keys.unlink(missing_ok=True)
            args = [a for name, u in ups.items() for a in ("--route", f"/{name}={u.url}")]
            args += ["--upstream-ca", str(bundle), "--keylog", str(keys), "--no-redact"]
            args += ["-w", str(OUT / "recording.har"), "--listen", f"127.0.0.1:{listen}"]
            with ProxyRun(args) as proxy:
                seen = {
                    "openai": _openai(f"{proxy.url}/openai/v1"),
                    "anthropic": _anthropic(f"{proxy.url}/anthropic"),
                    "gemini": _gemini(f"{proxy.url}/gemini"),
                }
                proxy.wait_exchanges(11)
            code = proxy.stop()
            counters = {name: c.stop() for name, c in captures.items()}
    if code != 0:
        print(f"the proxy exited with {code}: {proxy.text}", file=sys.stderr)
        return 1
    complete = {n: genlib.capture_complete(c) for n, c in counters.items()}
    run = {
        "made_by": "scripts/make_proxy_captures.py",
        "sdks": seen,
        "proxy_exit": code,
        "tcpdump": counters,
        "capture_complete": complete,
        "versions": genlib.package_versions("openai", "anthropic", "google-genai", "httpx"),
        "tcpdump_version": genlib.tcpdump_version(tcpdump),
    }
    genlib.write_json(OUT / "run.json", run)
    for name in ("recording.har", "capture.pcap", "client.pcap", "keylog.txt", "run.json"):
        genlib.log(f"{OUT / name}: {(OUT / name).stat().st_size} bytes")
    return 0 if all(complete.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
