"""Write tests/data/mitm/openai.mitm with a real ``mitmdump -w`` run, and its truth.json.

The openai SDK calls (chat, chat streamed, chat with a tool call) go through mitmdump in
reverse mode to the local HTTPS upstream of the proxy tests (``tests/proxy/upstream.py``,
answering with the responses recorded in ``../shared/captures/llm_sdk_openai``); mitmdump
writes the flows. ``truth.json`` is what the SDK returned. The API key is a made-up word
(fixtures hold no secrets). Needs ``.venv-proxy`` (``bash scripts/proxy_venv.sh``)::

    .venv/bin/python scripts/make_mitm_flows.py
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import openai  # noqa: E402
from tests.proxy.upstream import Upstream, replies_from_capture  # noqa: E402

OUT = ROOT / "tests" / "data" / "mitm"
MITMDUMP = ROOT / ".venv-proxy" / "bin" / "mitmdump"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _calls(base_url: str) -> list[dict[str, Any]]:
    client = openai.OpenAI(base_url=base_url, api_key="fixture-key", max_retries=0)
    msgs: Any = [{"role": "user", "content": "Say hello"}]
    chat = client.chat.completions.create(model="gpt-stub", messages=msgs)
    stream = client.chat.completions.create(model="gpt-stub", messages=msgs, stream=True)
    streamed = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    weather: Any = {"name": "get_weather", "parameters": {"type": "object", "properties": {}}}
    tools = client.chat.completions.create(
        model="gpt-stub", messages=msgs, tools=[{"type": "function", "function": weather}]
    )
    call: Any = (tools.choices[0].message.tool_calls or [])[0]
    return [
        {"id": chat.id, "text": chat.choices[0].message.content, "stream": False},
        {"text": streamed, "stream": True},
        {
            "id": tools.id,
            "finish_reason": tools.choices[0].finish_reason,
            "tool_call": [call.id, call.function.name, json.loads(call.function.arguments)],
            "stream": False,
        },
    ]


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    flows = OUT / "openai.mitm"
    with (
        tempfile.TemporaryDirectory() as tmp,
        Upstream(replies_from_capture("llm_sdk_openai"), Path(tmp)) as up,
    ):
        port = _free_port()
        dump = subprocess.Popen(
            [
                str(MITMDUMP),
                "--mode",
                f"reverse:{up.url}",
                "--listen-host",
                "127.0.0.1",
                "-p",
                str(port),
                "--set",
                f"ssl_verify_upstream_trusted_ca={up.cert}",
                "--set",
                f"confdir={tmp}/mitm",
                "-w",
                str(flows),
                "-q",
            ]
        )
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                with socket.socket() as s:
                    if s.connect_ex(("127.0.0.1", port)) == 0:
                        break
                time.sleep(0.2)
            truth = _calls(f"http://127.0.0.1:{port}/v1")
        finally:
            dump.send_signal(signal.SIGINT)
            dump.wait(60)
    (OUT / "truth.json").write_text(json.dumps({"calls": truth}, indent=2) + "\n")
    print(f"wrote {flows} ({flows.stat().st_size} bytes) and truth.json")


if __name__ == "__main__":
    main()
