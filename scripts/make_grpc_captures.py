# mypy: disable-error-code="import-not-found,import-untyped"
"""Make loopback captures of a grpcio server and client in ``tests/data/captures/<name>/``.

    python3 scripts/make_grpc_captures.py              # every capture
    python3 scripts/make_grpc_captures.py --only grpc_sdk_reflection
    python3 scripts/make_grpc_captures.py --list

The service is ``scripts/grpc_captures/toolbox.proto`` (copied next to each capture),
compiled at run time with ``grpcio-tools``; the server is a ``grpc.server`` on 127.0.0.1 and
the client a ``grpc.insecure_channel`` (h2c, HTTP/2 with prior knowledge), both grpcio, in
this process. tcpdump on ``lo`` writes the case's ports only.

Cases:
- ``grpc_sdk_h2c``: unary, server-streaming, client-streaming and bidi RPCs; a unary and a
  server stream compressed with gzip (the client's per-call compression, the server's
  ``context.set_compression``); an error status with ``grpc-status-details-bin`` (a
  ``google.rpc.Status`` with ``ErrorInfo`` and ``BadRequest`` details, grpcio-status); a
  call past its deadline (``grpc-timeout``), no reflection service.
- ``grpc_sdk_reflection``: the server also serves reflection, ``v1alpha`` (grpcio-reflection)
  and ``v1`` (the same servicer under the v1 name; same messages on the wire). On one
  channel: a unary call, then grpcio-reflection's ``ProtoReflectionDescriptorDatabase``
  (``list_services``, ``file_containing_symbol``), a raw v1 ``file_by_filename``, then a
  server stream and a bidi call; a second channel (another connection) makes a
  client-streaming call.
- ``grpc_tool_chat``: the ``openai`` SDK streams a chat completion from a local server that
  asks for the ``get_weather`` tool; the client executes it as the ``GetWeather`` RPC with
  the model's arguments, then sends the result back in a second chat request.

- ``grpc_sdk_tls``: the ``grpc_sdk_h2c`` calls over TLS. grpcio's Python API has no way to
  write a TLS key log (the C core's key logging is not exposed), so the client is grpcio's
  ``secure_channel`` (its own TLS, BoringSSL) and the server's side of the TLS is a relay of
  this script (``genlib.TlsRelay``: Python's ``ssl``, ALPN ``h2``, writing ``keys.log``) in
  front of the grpcio server, which listens in h2c on the next port; only the client's side
  of the relay is captured.

``truth.json`` is written by the client from its own records only: each RPC's method, kind,
compression, the messages it sent and received (``json_format.MessageToDict``, the proto3 JSON
mapping), status code and details, metadata, the decoded status details; never anything read
back from the pcap.
"""

from __future__ import annotations

import argparse
import base64
import json
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent import futures
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH_DIR))

import genlib  # noqa: E402 - lives in bench/, shared with the other capture generators

SCRIPT = Path(__file__).resolve()
CAPTURES_DIR = genlib.REPO_ROOT / "tests" / "data" / "captures"
PROTO = SCRIPT.parent / "grpc_captures" / "toolbox.proto"
MADE_BY = "scripts/make_grpc_captures.py"
GRPC_VENV = SCRIPT.parent / ".venv-grpc"
GRPC_REQUIREMENTS = (
    "grpcio==1.85.1",
    "grpcio-tools==1.85.1",
    "grpcio-reflection==1.85.1",
    "grpcio-status==1.85.1",
    "openai==3.57.0",
)
SERVICE = "toolbox.v1.Toolbox"
FAKE_KEY = "sk-proj-example-not-a-real-key-grpc-tools00"


@dataclass(frozen=True)
class Case:
    name: str
    port: int
    reflection: bool = False
    chat_port: int | None = None  # the chat server of the tool case
    tls: bool = False  # through a TLS relay on ``port``; the server on ``port + 1``


CASES = (
    Case("grpc_sdk_h2c", 18061),
    Case("grpc_sdk_reflection", 18062, reflection=True),
    Case("grpc_tool_chat", 18063, chat_port=18064),
    Case("grpc_sdk_tls", 18065, tls=True),
)


def compile_proto(out: Path) -> None:
    argv = [sys.executable, "-m", "grpc_tools.protoc", f"-I{PROTO.parent}"]
    argv += [f"--python_out={out}", f"--grpc_python_out={out}", str(PROTO)]
    subprocess.run(argv, check=True)
    sys.path.insert(0, str(out))


# -- the server -------------------------------------------------------------------------------


def make_servicer() -> Any:
    import grpc
    import toolbox_pb2 as pb
    import toolbox_pb2_grpc as pbg
    from google.protobuf import any_pb2
    from google.rpc import code_pb2, error_details_pb2, status_pb2
    from grpc_status import rpc_status

    class Toolbox(pbg.ToolboxServicer):  # type: ignore[misc]
        def GetWeather(self, request: Any, context: Any) -> Any:  # noqa: N802
            if request.sleep_ms:
                time.sleep(request.sleep_ms / 1000)
            if request.fail:
                info, bad = any_pb2.Any(), any_pb2.Any()
                info.Pack(
                    error_details_pb2.ErrorInfo(
                        reason="CITY_UNKNOWN",
                        domain="toolbox.example",
                        metadata={"city": request.city},
                    )
                )
                violation = error_details_pb2.BadRequest.FieldViolation(
                    field="city", description="no station in this city"
                )
                bad.Pack(error_details_pb2.BadRequest(field_violations=[violation]))
                status = status_pb2.Status(
                    code=code_pb2.INVALID_ARGUMENT,
                    message=f"unknown city: {request.city} (100% sure)",
                    details=[info, bad],
                )
                context.abort_with_status(rpc_status.to_status(status))
            context.send_initial_metadata((("x-toolbox-server", "grpcio"),))
            context.set_trailing_metadata((("x-toolbox-trailer", "weather-done"),))
            reply = pb.WeatherReply(
                city=request.city,
                temperature=21.5 + request.day_offset,
                humidity=0.625,
                unit=request.unit or pb.UNIT_CELSIUS,
                hourly=[18, 19, -2, 21],
                note=f"labels={len(request.labels)}",
            )
            reply.observed.FromSeconds(1_764_000_000 + 86_400 * request.day_offset)
            return reply

        def StreamForecast(self, request: Any, context: Any) -> Iterator[Any]:  # noqa: N802
            if request.city == "Gzip":
                context.set_compression(grpc.Compression.Gzip)
            for day in range(request.days):
                yield pb.ForecastChunk(
                    day=day,
                    summary=f"{request.city} day {day}: " + "sunny " * (day + 1),
                    seed=(1 << 63) + day,
                    last=day == request.days - 1,
                )

        def Upload(self, request_iterator: Any, context: Any) -> Any:  # noqa: N802
            chunks = total = checksum = 0
            for chunk in request_iterator:
                chunks += 1
                total += len(chunk.data)
                checksum = (checksum * 31 + sum(chunk.data)) % (1 << 31) - (1 << 30)
            return pb.UploadSummary(chunks=chunks, total_bytes=total, checksum=checksum)

        def Converse(self, request_iterator: Any, context: Any) -> Iterator[Any]:  # noqa: N802
            for turn in request_iterator:
                yield pb.Turn(role="assistant", text=f"echo: {turn.text}", index=turn.index)

    return Toolbox()


def serve(case: Case) -> Any:
    import grpc
    import toolbox_pb2 as pb
    import toolbox_pb2_grpc as pbg

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    pbg.add_ToolboxServicer_to_server(make_servicer(), server)
    if case.reflection:
        from grpc_reflection.v1alpha import reflection, reflection_pb2

        names = (pb.DESCRIPTOR.services_by_name["Toolbox"].full_name, reflection.SERVICE_NAME)
        reflection.enable_server_reflection(names, server)
        servicer = reflection.ReflectionServicer(names)
        v1 = grpc.method_handlers_generic_handler(
            "grpc.reflection.v1.ServerReflection",
            {
                "ServerReflectionInfo": grpc.stream_stream_rpc_method_handler(
                    servicer.ServerReflectionInfo,
                    request_deserializer=reflection_pb2.ServerReflectionRequest.FromString,
                    response_serializer=reflection_pb2.ServerReflectionResponse.SerializeToString,
                )
            },
        )
        server.add_generic_rpc_handlers((v1,))
    server.add_insecure_port(f"127.0.0.1:{case.port + 1 if case.tls else case.port}")
    server.start()
    return server


# -- the client's records -----------------------------------------------------------------------


def as_json(message: Any) -> dict[str, Any]:
    from google.protobuf import json_format

    out: dict[str, Any] = json_format.MessageToDict(message)
    return out


class Recorder:
    """What the client did: every RPC as it saw it."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def call(
        self,
        method: str,
        kind: str,
        requests: list[Any],
        run: Any,
        *,
        compression: str | None = None,
        timeout: float | None = None,
        channel: int = 1,
    ) -> list[Any]:
        import grpc
        from grpc_status import rpc_status

        record: dict[str, Any] = {
            "method": f"/{SERVICE}/{method}",
            "kind": kind,
            "channel": channel,
            "compression": compression,
            "timeout_s": timeout,
            "requests": [as_json(r) for r in requests],
        }
        responses: list[Any] = []
        try:
            responses, call = run()
            record["code"] = call.code().name
            record["details"] = call.details() or None
            record["initial_metadata"] = [list(m) for m in call.initial_metadata()]
            record["trailing_metadata"] = [list(m) for m in call.trailing_metadata()]
        except grpc.RpcError as err:
            record["code"] = err.code().name
            record["details"] = err.details()
            record["trailing_metadata"] = [  # binary (-bin) values as base64, unpadded
                [k, v if isinstance(v, str) else base64.b64encode(v).decode().rstrip("=")]
                for k, v in err.trailing_metadata() or ()
            ]
            status = rpc_status.from_call(err)
            if status is not None:
                record["status_details"] = as_json(status)
        record["responses"] = [as_json(r) for r in responses]
        self.calls.append(record)
        return responses


def toolbox_calls(rec: Recorder, stub: Any, *, gzip: bool = True, deadline: bool = True) -> None:
    import grpc
    import toolbox_pb2 as pb

    def unary(request: Any, **kw: Any) -> Any:
        def run() -> tuple[list[Any], Any]:
            reply, call = stub.GetWeather.with_call(request, **kw)
            return [reply], call

        return run

    def streamed(method: Any, requests: Any, **kw: Any) -> Any:
        def run() -> tuple[list[Any], Any]:
            call = method(requests, **kw)
            return list(call), call

        return run

    req = pb.WeatherRequest(
        city="Lisbon",
        unit=pb.UNIT_CELSIUS,
        day_offset=2,
        delta=-7,
        fields=["temperature", "humidity"],
        labels={"team": "ops", "tier": "gold"},
    )
    rec.call("GetWeather", "unary", [req], unary(req))
    forecast = pb.ForecastRequest(city="Porto", days=4)
    rec.call(
        "StreamForecast", "server_streaming", [forecast], streamed(stub.StreamForecast, forecast)
    )
    chunks = [
        pb.UploadChunk(name=f"part-{i}", data=bytes(range(i * 16, i * 16 + 40))) for i in range(3)
    ]

    def upload() -> tuple[list[Any], Any]:
        reply, call = stub.Upload.with_call(iter(chunks))
        return [reply], call

    rec.call("Upload", "client_streaming", chunks, upload)
    turns = [
        pb.Turn(role="user", text=t, index=i) for i, t in enumerate(["hello", "how are you", "bye"])
    ]
    rec.call("Converse", "bidi_streaming", turns, streamed(stub.Converse, iter(turns)))
    if gzip:
        big = pb.WeatherRequest(city="Compressville " * 20, unit=pb.UNIT_FAHRENHEIT, day_offset=1)
        rec.call(
            "GetWeather",
            "unary",
            [big],
            unary(big, compression=grpc.Compression.Gzip),
            compression="gzip",
        )
        gz = pb.ForecastRequest(city="Gzip", days=3)
        rec.call(
            "StreamForecast",
            "server_streaming",
            [gz],
            streamed(stub.StreamForecast, gz),
            compression="gzip (server)",
        )
    bad = pb.WeatherRequest(city="Atlantis", fail=True)
    rec.call("GetWeather", "unary", [bad], unary(bad))
    if deadline:
        slow = pb.WeatherRequest(city="Slowtown", sleep_ms=1500)
        rec.call("GetWeather", "unary", [slow], unary(slow, timeout=0.3), timeout=0.3)


def reflection_calls(channel: Any) -> list[dict[str, Any]]:
    """grpcio-reflection's client (v1alpha), then one raw v1 request; what each returned."""
    from grpc_reflection.v1alpha import reflection_pb2
    from grpc_reflection.v1alpha.proto_reflection_descriptor_database import (
        ProtoReflectionDescriptorDatabase,
    )

    db = ProtoReflectionDescriptorDatabase(channel)
    out: list[dict[str, Any]] = []
    services = list(db.get_services())
    out.append({"service": "v1alpha", "asked": "list_services", "services": services})
    file = db.FindFileContainingSymbol(SERVICE)
    out.append(
        {"service": "v1alpha", "asked": f"file_containing_symbol {SERVICE}", "file": file.name}
    )
    v1 = channel.stream_stream(
        "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
        request_serializer=reflection_pb2.ServerReflectionRequest.SerializeToString,
        response_deserializer=reflection_pb2.ServerReflectionResponse.FromString,
    )
    asked = reflection_pb2.ServerReflectionRequest(file_by_filename="toolbox.proto")
    (answer,) = list(v1(iter([asked])))
    from google.protobuf import descriptor_pb2

    protos = answer.file_descriptor_response.file_descriptor_proto
    names = [descriptor_pb2.FileDescriptorProto.FromString(data).name for data in protos]
    out.append({"service": "v1", "asked": "file_by_filename toolbox.proto", "files": names})
    return out


def run_client(case: Case, cert: Path | None = None) -> dict[str, Any]:
    """``cert``: the TLS case's trust anchor (the relay's certificate)."""
    import grpc
    import toolbox_pb2 as pb
    import toolbox_pb2_grpc as pbg

    rec = Recorder()
    result: dict[str, Any] = {}
    target = f"127.0.0.1:{case.port}"
    if cert is not None:
        creds = grpc.ssl_channel_credentials(root_certificates=cert.read_bytes())
        opened = grpc.secure_channel(target, creds)
    else:
        opened = grpc.insecure_channel(target)
    with opened as channel:
        stub = pbg.ToolboxStub(channel)
        if not case.reflection:
            toolbox_calls(rec, stub)
        else:
            req = pb.WeatherRequest(city="Before Reflection", day_offset=5)

            def first() -> tuple[list[Any], Any]:
                reply, call = stub.GetWeather.with_call(req)
                return [reply], call

            rec.call("GetWeather", "unary", [req], first)
            result["reflection"] = reflection_calls(channel)
            forecast = pb.ForecastRequest(city="Reflected", days=2)

            def stream() -> tuple[list[Any], Any]:
                call = stub.StreamForecast(forecast)
                return list(call), call

            rec.call("StreamForecast", "server_streaming", [forecast], stream)
            turns = [pb.Turn(role="user", text="named?", index=7)]

            def bidi() -> tuple[list[Any], Any]:
                call = stub.Converse(iter(turns))
                return list(call), call

            rec.call("Converse", "bidi_streaming", turns, bidi)
    if case.reflection:
        local = (("grpc.use_local_subchannel_pool", 1),)  # a connection of its own
        with grpc.insecure_channel(f"127.0.0.1:{case.port}", options=local) as second:
            stub = pbg.ToolboxStub(second)
            chunks = [pb.UploadChunk(name="other-connection", data=b"\x00\x01\x02\xff")]

            def upload() -> tuple[list[Any], Any]:
                reply, call = stub.Upload.with_call(iter(chunks))
                return [reply], call

            rec.call("Upload", "client_streaming", chunks, upload, channel=2)
    result["calls"] = rec.calls
    return result


# -- the tool case: a chat model asks for get_weather, executed as a gRPC call -----------------

TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather of a city, some days ahead",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "day_offset": {"type": "integer"}},
            "required": ["city", "day_offset"],
        },
    },
}
CALL_ID = "call_weather_grpc_1"
ARGUMENT_PIECES = ('{"city": "Lis', 'bon", "day_', 'offset": 42}')


def _chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    body = {
        "id": "chatcmpl-grpc-tool",
        "object": "chat.completion.chunk",
        "created": 1764000000,
        "model": "gpt-workshop-mini",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return b"data: " + json.dumps(body).encode() + b"\n\n"


class ChatHandler(BaseHTTPRequestHandler):
    """``POST /v1/chat/completions`` as an SSE stream: a tool call when the conversation has
    no tool result yet, else the answer as text."""

    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        answered = any(m.get("role") == "tool" for m in body["messages"])
        events = [_chunk({"role": "assistant", "content": None if not answered else ""})]
        if not answered:
            head = {"index": 0, "id": CALL_ID, "type": "function"}
            head["function"] = {"name": "get_weather", "arguments": ""}
            events.append(_chunk({"tool_calls": [head]}))
            events += [
                _chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]})
                for piece in ARGUMENT_PIECES
            ]
            events.append(_chunk({}, "tool_calls"))
        else:
            result = json.loads(body["messages"][-1]["content"])
            pieces = ("It will be ", f"{result['temperature']} degrees", f" in {result['city']}.")
            events += [_chunk({"content": piece}) for piece in pieces]
            events.append(_chunk({}, "stop"))
        events.append(b"data: [DONE]\n\n")
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        *deltas, done = (f"{len(e):x}\r\n".encode() + e + b"\r\n" for e in events)
        for chunk in deltas:
            self.wfile.write(chunk)
            self.wfile.flush()
            time.sleep(0.005)
        # [DONE] and the body's end in one write, as API servers send them: the client acts
        # on the stream's end, and so the tool's execution starts after the response ended
        self.wfile.write(done + b"0\r\n\r\n")
        self.wfile.flush()


def run_tool_chat(case: Case) -> dict[str, Any]:
    import grpc
    import openai
    import toolbox_pb2 as pb
    import toolbox_pb2_grpc as pbg

    assert case.chat_port is not None
    httpd = ThreadingHTTPServer(("127.0.0.1", case.chat_port), ChatHandler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    client: Any = openai.OpenAI(base_url=f"http://127.0.0.1:{case.chat_port}/v1", api_key=FAKE_KEY)
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Weather in Lisbon in 42 days?"}]
    rec = Recorder()
    chats: list[dict[str, Any]] = []
    try:
        arguments, call_id, name = "", None, None
        for chunk in client.chat.completions.create(
            model="gpt-workshop-mini", messages=messages, tools=[TOOL], stream=True
        ):
            for tc in chunk.choices[0].delta.tool_calls or () if chunk.choices else ():
                call_id = tc.id or call_id
                name = (tc.function.name if tc.function else None) or name
                arguments += (tc.function.arguments if tc.function else None) or ""
        chats.append({"tool_call": {"id": call_id, "name": name, "arguments": arguments}})
        args = json.loads(arguments)
        with grpc.insecure_channel(f"127.0.0.1:{case.port}") as channel:
            stub = pbg.ToolboxStub(channel)
            req = pb.WeatherRequest(city=args["city"], day_offset=args["day_offset"])

            def execute() -> tuple[list[Any], Any]:
                reply, call = stub.GetWeather.with_call(req)
                return [reply], call

            (reply,) = rec.call("GetWeather", "unary", [req], execute)
        result = {"city": reply.city, "temperature": reply.temperature}
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": name, "arguments": arguments},
                    }
                ],
            }
        )
        messages.append({"role": "tool", "tool_call_id": call_id, "content": json.dumps(result)})
        text = ""
        for chunk in client.chat.completions.create(
            model="gpt-workshop-mini", messages=messages, tools=[TOOL], stream=True
        ):
            if chunk.choices and chunk.choices[0].delta.content:
                text += chunk.choices[0].delta.content
        chats.append({"text": text})
    finally:
        httpd.shutdown()
        httpd.server_close()
    return {"calls": rec.calls, "chat": chats}


# -- one case ---------------------------------------------------------------------------------


def run_case(case: Case, tcpdump: str) -> None:
    folder = CAPTURES_DIR / case.name
    folder.mkdir(parents=True, exist_ok=True)
    pcap = folder / "capture.pcap"
    capture = genlib.Tcpdump(tcpdump, pcap, case.port, buffer_kib=65536)
    if case.chat_port is not None:
        capture.argv[-1] = f"tcp port {case.port} or tcp port {case.chat_port}"
    server = serve(case)
    relay, cert = None, None
    keylog = folder / "keys.log"
    with tempfile.TemporaryDirectory(prefix="agentshark-grpc-tls-") as tmp:
        if case.tls:
            certs = genlib.make_test_certs(Path(tmp))
            cert = certs["rsa"]
            keylog.unlink(missing_ok=True)
            relay = genlib.TlsRelay(cert, certs["rsa_key"], case.port, case.port + 1, "h2", keylog)
        t0 = time.time()
        try:
            capture.start()
            result = run_tool_chat(case) if case.chat_port is not None else run_client(case, cert)
        finally:
            if relay is not None:
                relay.close()
            server.stop(1).wait()
    counters = capture.stop(linger=0.7)
    shutil.copyfile(PROTO, folder / PROTO.name)
    truth = {
        "capture": case.name,
        "made_by": MADE_BY,
        "port": case.port,
        "chat_port": case.chat_port,
        "transport": (
            "TLS (grpcio's client; the server's side by genlib.TlsRelay, keys.log), HTTP/2"
            if case.tls
            else "h2c (HTTP/2 cleartext, prior knowledge)"
        ),
        "proto": f"{PROTO.name} (copied next to the pcap)",
        "software": genlib.package_versions(
            "grpcio", "grpcio-reflection", "grpcio-status", "protobuf", "openai"
        ),
        "reflection_service": case.reflection,
        "client_started": round(t0, 6),
        **result,
    }
    run = {
        "tcpdump": counters,
        "capture_complete": genlib.capture_complete(counters),
        "packets": genlib.pcap_packet_count(pcap),
        "pcap_bytes": pcap.stat().st_size,
    }
    genlib.write_json(folder / "truth.json", truth)
    genlib.write_json(folder / "run.json", run)
    genlib.log(
        f"{case.name}: {run['pcap_bytes']:,} bytes, {run['packets']} packets, "
        f"{len(result['calls'])} RPCs, tcpdump {counters}"
    )
    if not run["capture_complete"]:
        raise genlib.ToolError(f"{case.name}: tcpdump dropped packets")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", action="append", default=[], metavar="NAME")
    parser.add_argument("--list", action="store_true")
    args = parser.parse_args()
    if args.list:
        for c in CASES:
            print(c.name, "reflection" if c.reflection else "")
        return 0
    genlib.reexec_in_venv(
        SCRIPT, GRPC_VENV, lambda: genlib.ensure_venv(GRPC_VENV, GRPC_REQUIREMENTS, "python3.11")
    )
    tcpdump = genlib.ensure_tcpdump()
    with tempfile.TemporaryDirectory(prefix="agentshark-grpc-") as tmp:
        compile_proto(Path(tmp))
        for case in CASES:
            if not args.only or case.name in args.only:
                run_case(case, tcpdump)
    return 0


if __name__ == "__main__":
    sys.exit(main())
