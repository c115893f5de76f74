"""Make loopback captures of the official ``google-genai`` SDK's Gemini Live client in
``tests/data/captures/<name>/``.

    python3 scripts/make_live_captures.py              # every capture
    python3 scripts/make_live_captures.py --only ws_sdk_gemini_live_tls13

The client is ``genai.Client().aio.live.connect()`` (the SDK's own ``websockets`` layer) in
this process; the server is a ``websockets`` server on 127.0.0.1 in the same event loop that
plays the Live API's ``BidiGenerateContent`` messages (https://ai.google.dev/api/live):
``setupComplete`` after the ``setup``; for the first ``clientContent`` turn a ``toolCall``
and its ``usageMetadata``; for the ``toolResponse`` a text turn in three ``modelTurn``
chunks, ``generationComplete``, then ``turnComplete`` with usage; for ``realtimeInput``
audio (ended by ``audioStreamEnd``) the input's transcription, an audio answer in two
``inlineData`` chunks with its output transcription, ``turnComplete`` with usage, then a
``sessionResumptionUpdate`` and a ``goAway``; for the last ``clientContent`` turn one text
chunk and ``interrupted`` (the user spoke over it), with no usage.

The cases differ in the endpoint the SDK builds:

* ``ws_sdk_gemini_live_tls13``: the Gemini API with an API key. The SDK always speaks
  ``wss`` there (``/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent``,
  the key in the query): TLS 1.3 with the key log the client's SSL context writes
  (``keys.log``). The server sends its messages in binary frames, as Google's does.
* ``ws_sdk_gemini_live_vertex``: Vertex AI through a custom base URL with a bearer header and
  no project (an API gateway, the SDK's words): the SDK connects to that URL as given (always
  with an SSL context, so ``wss`` here too, with its key log) and reads the Vertex message
  forms. The server sends text frames.

``truth.json`` holds, from the client's side only, every message it sent (kind and time) and
every message the SDK parsed (``LiveServerMessage``: tool calls, text, inline data sizes,
transcriptions, turn flags, usage counts), never anything read back from the pcap.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import ssl
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH_DIR))

import genlib  # noqa: E402 - lives in bench/, shared with the other capture generators

SCRIPT = Path(__file__).resolve()
CAPTURES_DIR = genlib.REPO_ROOT / "tests" / "data" / "captures"
MADE_BY = "scripts/make_live_captures.py"
LIVE_VENV = SCRIPT.parent / ".venv-live"
LIVE_REQUIREMENTS = ("google-genai==3.6.1", "websockets==17.4")
FAKE_KEY = "AIzaSyExample-not-a-real-key-live-0000000"
FAKE_TOKEN = "ya29.example-not-a-real-token-live-0000"
MODEL = "gemini-live-workshop"
AUDIO_IN = bytes(range(256)) * 16  # 4 KiB of "PCM16" at 16 kHz: 128 ms
AUDIO_OUT = bytes(range(255, -1, -1)) * 24  # 6 KiB at 24 kHz per chunk: 128 ms


@dataclass(frozen=True)
class Case:
    name: str
    port: int
    vertex: bool

    @property
    def path(self) -> str:
        if self.vertex:
            return "/ws/google.cloud.aiplatform.v1beta1.LlmBidiService/BidiGenerateContent"
        return "/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent"


CASES = (
    Case("ws_sdk_gemini_live_tls13", 18796, vertex=False),
    Case("ws_sdk_gemini_live_vertex", 18797, vertex=True),
)


# -- the server -------------------------------------------------------------------------------


def _usage(prompt: int, response: int, vertex: bool) -> dict[str, Any]:
    """``usageMetadata`` as each API words it: the Gemini API's Live messages count the
    answer in ``responseTokenCount``, Vertex AI's in ``candidatesTokenCount``."""
    return {
        "promptTokenCount": prompt,
        "candidatesTokenCount" if vertex else "responseTokenCount": response,
        "totalTokenCount": prompt + response,
    }


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(w.title() for w in rest)


def answer(message: dict[str, Any], turns: list[int], vertex: bool) -> list[dict[str, Any]]:
    """The server's messages for one client message (``turns``: the client turns so far).
    The SDK sends some fields in their proto form (``client_content``): both are read."""
    sent = {_camel(k): v for k, v in message.items()}
    if "setup" in sent:
        return [{"setupComplete": {}}]
    if "clientContent" in sent:
        turns[0] += 1
        if turns[0] == 1:
            return [
                {
                    "toolCall": {
                        "functionCalls": [
                            {
                                "id": "function-call-0001",
                                "name": "get_weather",
                                "args": {"city": "Shenzhen", "unit": "c"},
                            }
                        ]
                    }
                },
                {"usageMetadata": _usage(41, 12, vertex)},
            ]
        return [
            {"serverContent": {"modelTurn": {"role": "model", "parts": [{"text": "Let me "}]}}},
            {"serverContent": {"interrupted": True}},
        ]
    if "toolResponse" in sent:
        chunks = ["It is 24 degrees ", "and sunny ", "in Shenzhen."]
        return [
            *(
                {"serverContent": {"modelTurn": {"role": "model", "parts": [{"text": c}]}}}
                for c in chunks
            ),
            {"serverContent": {"generationComplete": True}},
            {"serverContent": {"turnComplete": True}, "usageMetadata": _usage(66, 14, vertex)},
        ]
    realtime = {_camel(k): v for k, v in sent.get("realtimeInput", {}).items()}
    if realtime.get("audioStreamEnd"):
        audio = {"mimeType": "audio/pcm;rate=24000", "data": base64.b64encode(AUDIO_OUT).decode()}
        return [
            {"serverContent": {"inputTranscription": {"text": "and tomorrow?"}}},
            {
                "serverContent": {
                    "modelTurn": {"role": "model", "parts": [{"inlineData": audio}]},
                    "outputTranscription": {"text": "Tomorrow looks "},
                }
            },
            {
                "serverContent": {
                    "modelTurn": {"role": "model", "parts": [{"inlineData": audio}]},
                    "outputTranscription": {"text": "rainy."},
                }
            },
            {"serverContent": {"turnComplete": True}, "usageMetadata": _usage(120, 30, vertex)},
            {"sessionResumptionUpdate": {"newHandle": "resume-handle-0001", "resumable": True}},
            {"goAway": {"timeLeft": "10s"}},
        ]
    return []  # audio chunks wait for their end


async def serve(case: Case, certs: dict[str, Path]) -> Any:
    from websockets.asyncio.server import serve as ws_serve

    async def handler(ws: Any) -> None:
        turns = [0]
        async for message in ws:
            for reply in answer(json.loads(message), turns, case.vertex):
                data = json.dumps(reply)
                await ws.send(data if case.vertex else data.encode())

    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)  # the SDK always brings an SSL context
    ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    ctx.load_cert_chain(certs["ecdsa"], certs["ecdsa_key"])
    return await ws_serve(handler, "127.0.0.1", case.port, compression=None, ssl=ctx)


# -- the client -------------------------------------------------------------------------------


def parsed(msg: Any) -> dict[str, Any]:
    """What the SDK's ``LiveServerMessage`` carries, in plain values."""
    out: dict[str, Any] = {}
    if msg.setup_complete is not None:
        out["setup_complete"] = True
    if msg.tool_call is not None:
        out["tool_calls"] = [
            {"id": fc.id, "name": fc.name, "args": fc.args}
            for fc in msg.tool_call.function_calls or []
        ]
    sc = msg.server_content
    if sc is not None:
        content: dict[str, Any] = {}
        if sc.model_turn is not None:
            parts = sc.model_turn.parts or []
            content["text"] = [p.text for p in parts if p.text is not None]
            content["inline"] = [
                {"mime_type": p.inline_data.mime_type, "bytes": len(p.inline_data.data or b"")}
                for p in parts
                if p.inline_data is not None
            ]
        for name in ("turn_complete", "interrupted", "generation_complete"):
            if getattr(sc, name):
                content[name] = True
        if sc.input_transcription is not None:
            content["input_transcription"] = sc.input_transcription.text
        if sc.output_transcription is not None:
            content["output_transcription"] = sc.output_transcription.text
        out["server_content"] = content
    if msg.usage_metadata is not None:
        u = msg.usage_metadata
        out["usage"] = {
            "prompt_token_count": u.prompt_token_count,
            "response_token_count": u.response_token_count,
            "total_token_count": u.total_token_count,
        }
    if msg.session_resumption_update is not None:
        out["resumption_handle"] = msg.session_resumption_update.new_handle
    if msg.go_away is not None:
        out["go_away"] = True
    return out


async def client(case: Case, certs: dict[str, Path], keylog: Path) -> dict[str, Any]:
    from google import genai
    from google.genai import types

    ctx = ssl.create_default_context(cafile=str(certs["ecdsa"]))
    ctx.keylog_filename = str(keylog)
    if case.vertex:
        api = genai.Client(
            vertexai=True,
            http_options=types.HttpOptions(
                base_url=f"wss://127.0.0.1:{case.port}{case.path}",
                headers={"Authorization": f"Bearer {FAKE_TOKEN}"},
                async_client_args={"ssl": ctx},
            ),
        )
    else:
        api = genai.Client(
            api_key=FAKE_KEY,
            http_options=types.HttpOptions(
                base_url=f"https://127.0.0.1:{case.port}", async_client_args={"ssl": ctx}
            ),
        )
    config = types.LiveConnectConfig(
        response_modalities=[types.Modality.TEXT],
        system_instruction="You are a terse weather assistant.",
        tools=[
            types.Tool(
                function_declarations=[
                    types.FunctionDeclaration(
                        name="get_weather",
                        description="The weather in a city.",
                        parameters_json_schema={
                            "type": "object",
                            "properties": {"city": {"type": "string"}, "unit": {"type": "string"}},
                            "required": ["city"],
                        },
                    )
                ]
            )
        ],
        input_audio_transcription=types.AudioTranscriptionConfig(),
        output_audio_transcription=types.AudioTranscriptionConfig(),
    )
    sent: list[dict[str, Any]] = []
    received: list[dict[str, Any]] = []

    def note_sent(kind: str) -> None:
        sent.append({"t": round(time.time(), 6), "kind": kind})

    async def until(stop: Any) -> None:
        async for msg in session.receive():
            got = parsed(msg)
            received.append({"t": round(time.time(), 6), **got})
            if stop(got):
                return

    note_sent("setup")  # connect() sends it before it returns
    async with api.aio.live.connect(model=MODEL, config=config) as session:
        received.append({"t": round(time.time(), 6), "setup_complete": True})
        await session.send_client_content(
            turns=types.Content(role="user", parts=[types.Part(text="Weather in Shenzhen?")]),
            turn_complete=True,
        )
        note_sent("clientContent")
        await until(lambda got: "usage" in got)  # the toolCall, then its usageMetadata
        await session.send_tool_response(
            function_responses=[
                types.FunctionResponse(
                    id="function-call-0001",
                    name="get_weather",
                    response={"temperature_c": 24, "sky": "sunny"},
                )
            ]
        )
        note_sent("toolResponse")
        await until(lambda got: got.get("server_content", {}).get("turn_complete"))
        for i in range(2):
            chunk = AUDIO_IN[i * 2048 : (i + 1) * 2048]
            await session.send_realtime_input(
                audio=types.Blob(data=chunk, mime_type="audio/pcm;rate=16000")
            )
            note_sent("realtimeInput.audio")
        await session.send_realtime_input(audio_stream_end=True)
        note_sent("realtimeInput.audioStreamEnd")
        await until(lambda got: got.get("server_content", {}).get("turn_complete"))
        await until(lambda got: "go_away" in got)
        await session.send_client_content(
            turns=types.Content(role="user", parts=[types.Part(text="Thanks, and")]),
            turn_complete=True,
        )
        note_sent("clientContent")
        await until(lambda got: got.get("server_content", {}).get("interrupted"))
    return {"sent": sent, "received": received}


def run_case(case: Case, tcpdump: str, certs: dict[str, Path]) -> None:
    folder = CAPTURES_DIR / case.name
    folder.mkdir(parents=True, exist_ok=True)
    keylog = folder / "keys.log"
    keylog.unlink(missing_ok=True)
    pcap = folder / "capture.pcap"
    capture = genlib.Tcpdump(tcpdump, pcap, case.port, buffer_kib=65536)

    async def main() -> dict[str, Any]:
        server = await serve(case, certs)
        try:
            capture.start()
            return await client(case, certs, keylog)
        finally:
            server.close()
            await server.wait_closed()

    t0 = time.time()
    result = asyncio.run(main())
    counters = capture.stop(linger=0.7)
    versions = genlib.package_versions("google-genai", "websockets")
    truth = {
        "capture": case.name,
        "made_by": MADE_BY,
        "port": case.port,
        "uri": f"wss://127.0.0.1:{case.port}{case.path}",
        "tls": True,
        "vertex": case.vertex,
        "model": MODEL,
        "client": "google-genai Client().aio.live.connect() " + versions["google-genai"],
        "server": "websockets server playing Live BidiGenerateContent messages "
        f"in {'text' if case.vertex else 'binary'} frames ({MADE_BY})",
        "client_started": round(t0, 6),
        "fake_credentials": (
            {"authorization_bearer": FAKE_TOKEN} if case.vertex else {"api_key": FAKE_KEY}
        ),
        **result,
    }
    run = {
        "tcpdump": counters,
        "capture_complete": genlib.capture_complete(counters),
        "packets": genlib.pcap_packet_count(pcap),
        "pcap_bytes": pcap.stat().st_size,
        "keylog_labels": genlib.keylog_labels(keylog),
        "software": versions,
    }
    genlib.write_json(folder / "truth.json", truth)
    genlib.write_json(folder / "run.json", run)
    genlib.log(
        f"{case.name}: {run['pcap_bytes']:,} bytes, {run['packets']} packets, "
        f"{len(result['sent'])} sent, {len(result['received'])} received, tcpdump {counters}"
    )
    if not run["capture_complete"]:
        raise genlib.ToolError(f"{case.name}: tcpdump dropped packets")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", action="append", default=[], metavar="NAME")
    args = parser.parse_args()
    genlib.reexec_in_venv(
        SCRIPT, LIVE_VENV, lambda: genlib.ensure_venv(LIVE_VENV, LIVE_REQUIREMENTS, "python3.11")
    )
    tcpdump = genlib.ensure_tcpdump()
    with tempfile.TemporaryDirectory(prefix="agentshark-live-") as tmp:
        certs = genlib.make_test_certs(Path(tmp))  # thrown away with the folder
        for case in CASES:
            if not args.only or case.name in args.only:
                run_case(case, tcpdump, certs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
