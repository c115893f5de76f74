"""Make loopback captures of real gRPC agent software in ``tests/data/captures/<name>/``.

    python3 scripts/make_grpc_agent_captures.py              # every capture
    python3 scripts/make_grpc_agent_captures.py --only a2a_v1_grpc
    python3 scripts/make_grpc_agent_captures.py --list

The cases:

* ``a2a_v1_grpc``: an ``a2a-sdk`` 1.x agent (``DefaultRequestHandler`` under the SDK's
  ``GrpcHandler`` on a ``grpc.aio`` server, cleartext HTTP/2) and the SDK's own client
  (``ClientFactory``, binding ``GRPC``, an insecure ``grpc.aio`` channel): SendMessage (a
  message reply), SendStreamingMessage (task, status and artifact updates), a failing task,
  GetTask, SendMessage with ``return_immediately``, CancelTask (working; completed: an error),
  ListTasks, GetTask of an unknown task (an error).
* ``xai_chat_grpc``: the ``xai_sdk`` client (``Client(api_host=..., use_insecure_channel=True)``,
  its own channel and interceptors) against a ``grpcio`` server of ``xai_api.Chat`` built
  from the SDK's generated servicer, gzip-compressing its responses, that plays responses
  recorded in the shared corpus (pydantic-ai's xAI cassettes ``test_xai_request_tool_call``
  and ``test_xai_stream_events_with_reasoning``): a GetCompletion that calls two client-side
  tools, the tool results sent back and the answer, a GetCompletionChunk stream with
  reasoning, and a GetCompletion the server refuses with RESOURCE_EXHAUSTED.
* ``a2a_v1_grpc_jsonrpc``: the same agent and the same conversation over the JSON-RPC binding
  (``create_jsonrpc_routes`` on Starlette/uvicorn; the client over httpx), so that a test can
  hold the two bindings to the same A2A calls. Ids are made deterministic for that: the
  client's message ids are fixed, the server's task and context ids come from counters
  (``SimpleRequestContextBuilder`` id generators), the agent's message ids from a counter and
  its status timestamps are fixed.

The client gets the agent card object directly (no card fetch) in both. Server and client
run in this process, in one event loop, on 127.0.0.1; ``tcpdump -i lo`` writes the case's
port only. ``truth.json`` holds the client's own records only: every step with what the SDK
returned (kind, ids, states; errors as raised), and for gRPC every RPC as a client
interceptor saw it (method, request and response messages as proto JSON, status code and
details); for JSON-RPC each HTTP exchange as httpx's event hooks saw it. It runs in a
private venv, ``scripts/.venv-grpc-agents`` (python3.11, from the package registry).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import sys
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH_DIR))

import genlib  # noqa: E402 - lives in bench/, shared with the other capture generators

SCRIPT = Path(__file__).resolve()
CAPTURES_DIR = genlib.REPO_ROOT / "tests" / "data" / "captures"
MADE_BY = "scripts/make_grpc_agent_captures.py"
VENV = SCRIPT.parent / ".venv-grpc-agents"
REQUIREMENTS = (
    "a2a-sdk[grpc,http-server]==1.3.0",
    "xai-sdk==1.21.0",
    "grpcio-tools",
    "httpx",
    "uvicorn",
    "starlette",
    "sse-starlette",
    "pyyaml",  # reads the corpus cassettes the xAI server plays
)
SOFTWARE = ("a2a-sdk", "xai-sdk", "grpcio", "grpcio-tools", "protobuf", "httpx", "uvicorn")
STATUS_TIME = "2026-11-30T12:00:00+00:00"


@dataclass(frozen=True)
class Case:
    name: str
    port: int
    kind: str  # "a2a_grpc", "a2a_jsonrpc", "xai_grpc"
    description: str


CASES = (
    Case("a2a_v1_grpc", 18811, "a2a_grpc", "A2A 1.0 gRPC binding (a2a-sdk GrpcHandler)"),
    Case(
        "a2a_v1_grpc_jsonrpc",
        18812,
        "a2a_jsonrpc",
        "the a2a_v1_grpc conversation over the A2A 1.0 JSON-RPC binding",
    ),
    Case(
        "xai_chat_grpc",
        18813,
        "xai_grpc",
        "the xai_sdk client against a grpcio xai_api.Chat server playing corpus responses",
    ),
)


def reexec_in_venv() -> None:
    genlib.reexec_in_venv(
        SCRIPT, VENV, lambda: genlib.ensure_venv(VENV, REQUIREMENTS, "python3.11")
    )


def pb_json(msg: Any) -> dict[str, Any]:
    from google.protobuf import json_format

    out: dict[str, Any] = json_format.MessageToDict(msg)
    return out


# -- the A2A agent ----------------------------------------------------------------------------


def a2a_handler(url: str, binding: str) -> Any:
    """DefaultRequestHandler over a small AgentExecutor with deterministic ids."""
    from a2a.server.agent_execution import AgentExecutor, SimpleRequestContextBuilder
    from a2a.server.id_generator import IDGenerator
    from a2a.server.request_handlers import DefaultRequestHandler
    from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
    from a2a.types.a2a_pb2 import (
        AgentCapabilities,
        AgentCard,
        AgentInterface,
        AgentSkill,
        Message,
        Part,
        Role,
        Task,
        TaskState,
        TaskStatus,
    )

    class Counter(IDGenerator):  # type: ignore[misc]
        def __init__(self, prefix: str) -> None:
            self.prefix = prefix
            self.n = itertools.count(1)

        def generate(self, context: Any) -> str:
            return f"{self.prefix}-{next(self.n)}"

    agent_ids = Counter("agent-msg")

    def say(text: str, context: Any) -> Any:
        return Message(
            message_id=agent_ids.generate(None),
            role=Role.ROLE_AGENT,
            parts=[Part(text=text)],
            context_id=context.context_id,
            task_id=context.task_id or "",
        )

    class WorkshopAgent(AgentExecutor):  # type: ignore[misc]
        async def execute(self, context: Any, event_queue: Any) -> None:
            text = context.get_user_input()
            if text.startswith("hello"):
                reply = say(f"Hello back! You said: {text}", context)
                reply.ClearField("task_id")
                await event_queue.enqueue_event(reply)
                return
            task = context.current_task
            if task is None:
                task = Task(
                    id=context.task_id,
                    context_id=context.context_id,
                    status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED),
                    history=[context.message],
                )
                await event_queue.enqueue_event(task)
            updater = TaskUpdater(
                event_queue, task.id, task.context_id, message_id_generator=agent_ids
            )
            await updater.update_status(
                TaskState.TASK_STATE_WORKING, say("working on it", context), STATUS_TIME
            )
            if text.startswith("fail"):
                await asyncio.sleep(0.05)
                await updater.update_status(
                    TaskState.TASK_STATE_FAILED,
                    say("the workshop tool broke", context),
                    STATUS_TIME,
                )
                return
            if text.startswith("slow"):
                for _ in range(100):
                    await asyncio.sleep(0.1)
                await updater.update_status(TaskState.TASK_STATE_COMPLETED, None, STATUS_TIME)
                return
            words = ["packets", "on", "loopback", "are", "still", "packets"]
            for i, word in enumerate(words):
                await asyncio.sleep(0.03)
                await updater.add_artifact(
                    [Part(text=word if i == 0 else " " + word)],
                    artifact_id="answer",
                    name="answer",
                    append=i > 0,
                    last_chunk=i == len(words) - 1,
                )
            await updater.update_status(
                TaskState.TASK_STATE_COMPLETED, say("done", context), STATUS_TIME
            )

        async def cancel(self, context: Any, event_queue: Any) -> None:
            task = context.current_task
            tid = task.id if task is not None else context.task_id
            cid = task.context_id if task is not None else context.context_id
            updater = TaskUpdater(event_queue, tid, cid, message_id_generator=agent_ids)
            await updater.update_status(
                TaskState.TASK_STATE_CANCELED, say("cancelled", context), STATUS_TIME
            )

    card = AgentCard(
        name="agentshark workshop agent",
        description="Answers, streams, fails and waits, for packet captures.",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(url=url, protocol_binding=binding, protocol_version="1.0")
        ],
        capabilities=AgentCapabilities(streaming=True, push_notifications=False),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[
            AgentSkill(
                id="workshop",
                name="workshop",
                description="hello / stream / fail / slow",
                tags=["test"],
            )
        ],
    )
    builder = SimpleRequestContextBuilder(
        task_id_generator=Counter("task"), context_id_generator=Counter("ctx")
    )
    handler = DefaultRequestHandler(
        agent_executor=WorkshopAgent(),
        task_store=InMemoryTaskStore(),
        agent_card=card,
        request_context_builder=builder,
    )
    return handler, card


# -- gRPC client records ----------------------------------------------------------------------


def grpc_recorders(log: list[dict[str, Any]]) -> list[Any]:
    """Client interceptors that record each RPC: method, messages, status, details."""
    import grpc

    def begin(details: Any, request: Any) -> dict[str, Any]:
        method = details.method
        rec: dict[str, Any] = {
            "method": method if isinstance(method, str) else method.decode(),
            "metadata": [list(m) for m in (details.metadata or [])],
            "request": pb_json(request),
            "started": round(time.time(), 6),
        }
        log.append(rec)
        return rec

    async def finish(rec: dict[str, Any], call: Any) -> None:
        code = await call.code()
        rec["status"] = code.name
        rec["status_code"] = code.value[0]
        rec["details"] = await call.details()
        trailing = await call.trailing_metadata()
        rec["trailing_metadata_keys"] = sorted({k for k, _ in (trailing or [])})
        rec["ended"] = round(time.time(), 6)

    class Unary(grpc.aio.UnaryUnaryClientInterceptor):  # type: ignore[misc]
        async def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
            rec = begin(details, request)
            call = await continuation(details, request)
            try:
                rec["responses"] = [pb_json(await call)]
            except grpc.aio.AioRpcError:
                rec["responses"] = []
            await finish(rec, call)
            return call

    class Stream(grpc.aio.UnaryStreamClientInterceptor):  # type: ignore[misc]
        async def intercept_unary_stream(
            self, continuation: Any, details: Any, request: Any
        ) -> Any:
            rec = begin(details, request)
            call = await continuation(details, request)
            rec["responses"] = []

            async def items() -> Any:
                try:
                    async for item in call:
                        rec["responses"].append(pb_json(item))
                        yield item
                finally:
                    await finish(rec, call)

            return items()

    return [Unary(), Stream()]


# -- the conversation -------------------------------------------------------------------------


def summary(doc: dict[str, Any]) -> dict[str, Any]:
    """Kind, ids and state of an A2A 1.0 result or stream event (proto JSON)."""
    for key in ("task", "message", "statusUpdate", "artifactUpdate"):
        if key in doc:
            return {"kind": key, **summary(doc[key])}
    out: dict[str, Any] = {}
    for key in ("id", "taskId", "contextId", "messageId"):
        if key in doc:
            out[key] = doc[key]
    status = doc.get("status")
    if isinstance(status, dict) and "state" in status:
        out["state"] = status["state"]
    if "tasks" in doc:
        out["tasks"] = [summary(t) for t in doc["tasks"]]
    if "artifact" in doc:
        out["artifact_id"] = doc["artifact"].get("artifactId")
    return out


async def conversation(plain: Any, streaming: Any) -> list[dict[str, Any]]:
    """The steps, the same over every binding; what the SDK returned (or raised)."""
    from a2a.types.a2a_pb2 import (
        CancelTaskRequest,
        GetTaskRequest,
        ListTasksRequest,
        Message,
        Part,
        Role,
        SendMessageConfiguration,
        SendMessageRequest,
    )

    steps: list[dict[str, Any]] = []
    ids: dict[str, str] = {}
    numbers = itertools.count(1)

    def message(text: str) -> Any:
        return Message(
            message_id=f"user-msg-{next(numbers)}", role=Role.ROLE_USER, parts=[Part(text=text)]
        )

    async def step(label: str, call: Callable[[], Awaitable[Any]]) -> Any:
        rec: dict[str, Any] = {"label": label, "started": round(time.time(), 6)}
        try:
            result = await call()
        except Exception as exc:  # noqa: BLE001 - the error is the outcome we record
            rec["error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
            result = None
        else:
            if isinstance(result, list):
                rec["events"] = [summary(pb_json(r)) for r in result]
            elif result is not None:
                rec["result"] = summary(pb_json(result))
        rec["ended"] = round(time.time(), 6)
        steps.append(rec)
        return result

    async def collect(client: Any, request: Any) -> list[Any]:
        return [event async for event in client.send_message(request)]

    def task_id(events: list[Any] | None) -> str | None:
        for ev in events or []:
            found = summary(pb_json(ev))
            if found.get("id") or found.get("taskId"):
                return str(found.get("id") or found.get("taskId"))
        return None

    await step(
        "SendMessage hello (message reply)",
        lambda: collect(plain, SendMessageRequest(message=message("hello agent"))),
    )
    streamed = await step(
        "SendStreamingMessage stream (task, status and artifact updates)",
        lambda: collect(streaming, SendMessageRequest(message=message("stream a sentence"))),
    )
    ids["streamed"] = task_id(streamed) or ""
    failed = await step(
        "SendMessage fail (task fails)",
        lambda: collect(plain, SendMessageRequest(message=message("fail please"))),
    )
    ids["failed"] = task_id(failed) or ""
    await step(
        "GetTask (the streamed task)",
        lambda: plain.get_task(GetTaskRequest(id=ids["streamed"], history_length=10)),
    )
    slow = await step(
        "SendMessage slow (return_immediately)",
        lambda: collect(
            plain,
            SendMessageRequest(
                message=message("slow job"),
                configuration=SendMessageConfiguration(return_immediately=True),
            ),
        ),
    )
    ids["slow"] = task_id(slow) or ""
    await asyncio.sleep(0.3)
    await step(
        "CancelTask (the working slow task)",
        lambda: plain.cancel_task(CancelTaskRequest(id=ids["slow"])),
    )
    await step(
        "CancelTask (the completed task: error)",
        lambda: plain.cancel_task(CancelTaskRequest(id=ids["streamed"])),
    )
    await step("ListTasks", lambda: plain.list_tasks(ListTasksRequest(page_size=10)))
    await step(
        "GetTask unknown id (error)",
        lambda: plain.get_task(GetTaskRequest(id="00000000-0000-0000-0000-000000000000")),
    )
    return steps


async def run_a2a_grpc(case: Case, capture: Any) -> dict[str, Any]:
    import grpc
    from a2a.client import ClientConfig, ClientFactory
    from a2a.server.request_handlers import GrpcHandler
    from a2a.types import a2a_pb2_grpc

    address = f"127.0.0.1:{case.port}"
    handler, card = a2a_handler(address, "GRPC")
    server = grpc.aio.server()
    a2a_pb2_grpc.add_A2AServiceServicer_to_server(GrpcHandler(handler), server)
    server.add_insecure_port(address)
    await server.start()
    rpcs: list[dict[str, Any]] = []
    capture.start()
    started = time.time()

    def channel(url: str) -> Any:
        return grpc.aio.insecure_channel(url, interceptors=grpc_recorders(rpcs))

    def client(streaming: bool) -> Any:
        config = ClientConfig(
            streaming=streaming, grpc_channel_factory=channel, supported_protocol_bindings=["GRPC"]
        )
        return ClientFactory(config).create(card)

    plain, streaming = client(False), client(True)
    try:
        steps = await conversation(plain, streaming)
    finally:
        await plain.close()
        await streaming.close()
        await asyncio.sleep(0.2)
        await server.stop(0.5)
    return {
        "transport": "A2A 1.0 gRPC binding (lf.a2a.v1.A2AService, h2c)",
        "server": "a2a-sdk DefaultRequestHandler + GrpcHandler on grpc.aio.server",
        "client": "a2a-sdk ClientFactory (GRPC) over grpc.aio.insecure_channel",
        "client_started": round(started, 6),
        "steps": steps,
        "rpcs": rpcs,
        "rpc_count": len(rpcs),
    }


async def run_a2a_jsonrpc(case: Case, capture: Any) -> dict[str, Any]:
    import httpx
    import uvicorn
    from a2a.client import ClientConfig, ClientFactory
    from a2a.server.routes import create_jsonrpc_routes
    from starlette.applications import Starlette

    path = "/a2a/jsonrpc"
    handler, card = a2a_handler(f"http://127.0.0.1:{case.port}{path}", "JSONRPC")
    app = Starlette(routes=list(create_jsonrpc_routes(handler, path)))
    config = uvicorn.Config(app, host="127.0.0.1", port=case.port, log_level="warning")
    server = uvicorn.Server(config)
    serving = asyncio.create_task(server.serve())
    while not server.started:
        await asyncio.sleep(0.05)
    exchanges: list[dict[str, Any]] = []

    async def on_request(request: Any) -> None:
        import json

        exchanges.append(
            {
                "method": request.method,
                "path": request.url.path,
                "jsonrpc": json.loads(request.content or b"null"),
                "started": round(time.time(), 6),
            }
        )

    async def on_response(response: Any) -> None:
        exchanges[-1]["status"] = response.status_code
        exchanges[-1]["content_type"] = response.headers.get("content-type")

    capture.start()
    started = time.time()
    async with httpx.AsyncClient(
        timeout=30, event_hooks={"request": [on_request], "response": [on_response]}
    ) as http:

        def client(streaming: bool) -> Any:
            config = ClientConfig(
                streaming=streaming, httpx_client=http, supported_protocol_bindings=["JSONRPC"]
            )
            return ClientFactory(config).create(card)

        plain, streaming = client(False), client(True)
        try:
            steps = await conversation(plain, streaming)
        finally:
            await plain.close()
            await streaming.close()
            await asyncio.sleep(0.2)
    server.should_exit = True
    await serving
    return {
        "transport": "A2A 1.0 JSON-RPC binding (POST /a2a/jsonrpc)",
        "server": "a2a-sdk DefaultRequestHandler + create_jsonrpc_routes on Starlette/uvicorn",
        "client": "a2a-sdk ClientFactory (JSONRPC) over httpx",
        "client_started": round(started, 6),
        "steps": steps,
        "http_exchanges": exchanges,
        "http_exchange_count": len(exchanges),
    }


# -- xAI ---------------------------------------------------------------------------------------

XAI_CORPUS = genlib.REPO_ROOT.parent / "shared" / "corpus" / "pydantic__pydantic-ai"
XAI_TOOL_CALL = XAI_CORPUS / "tests/models/cassettes/test_xai/test_xai_request_tool_call.xai.yaml"
XAI_STREAM = (
    XAI_CORPUS / "tests/models/cassettes/test_xai/test_xai_stream_events_with_reasoning.xai.yaml"
)


def xai_recorded() -> tuple[list[bytes], list[bytes]]:
    """The corpus responses the server plays: two unary ones, then one stream's chunks."""
    import yaml

    calls = yaml.safe_load(XAI_TOOL_CALL.read_bytes())["interactions"]
    stream = yaml.safe_load(XAI_STREAM.read_bytes())["interactions"][0]
    return [c["response_sample"]["raw"] for c in calls], stream["response_stream"]["chunks_raw"]


def xai_server(port: int, requests: list[dict[str, Any]]) -> Any:
    """A grpcio ``xai_api.Chat`` server (gzip responses) playing :func:`xai_recorded`."""
    from concurrent.futures import ThreadPoolExecutor

    import grpc
    from xai_sdk.proto.v6 import chat_pb2, chat_pb2_grpc

    unary, chunks = xai_recorded()
    queue = list(unary)

    class Chat(chat_pb2_grpc.ChatServicer):  # type: ignore[misc]
        def GetCompletion(self, request: Any, context: Any) -> Any:  # noqa: N802 - the proto's
            requests.append({"method": "GetCompletion", "model": request.model})
            if not queue:
                context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, "rate limited (test server)")
            return chat_pb2.GetChatCompletionResponse.FromString(queue.pop(0))

        def GetCompletionChunk(self, request: Any, context: Any) -> Any:  # noqa: N802
            requests.append({"method": "GetCompletionChunk", "model": request.model})
            for raw in chunks:
                time.sleep(0.01)
                yield chat_pb2.GetChatCompletionChunk.FromString(raw)

    server = grpc.server(ThreadPoolExecutor(max_workers=4), compression=grpc.Compression.Gzip)
    chat_pb2_grpc.add_ChatServicer_to_server(Chat(), server)
    server.add_insecure_port(f"127.0.0.1:{port}")
    return server


def xai_conversation(client: Any) -> list[dict[str, Any]]:
    """A tool loop, a stream and a refused call; what the SDK sent and returned."""
    import json

    from xai_sdk.chat import tool, tool_result, user

    steps: list[dict[str, Any]] = []

    def record(label: str, chat: Any, response: Any = None, **more: Any) -> None:
        rec: dict[str, Any] = {"label": label, "request": pb_json(chat.proto), **more}
        if response is not None:
            rec["response"] = pb_json(response.proto)
            rec["content"] = response.content
            rec["reasoning_content"] = response.reasoning_content
            rec["finish_reason"] = response.finish_reason
            rec["tool_calls"] = [pb_json(t) for t in response.tool_calls]
        steps.append(rec)

    location = tool(
        "get_location",
        "Where a place is",
        {
            "type": "object",
            "properties": {"loc_name": {"type": "string"}},
            "required": ["loc_name"],
        },
    )
    chat = client.chat.create(model="grok-4-fast-reasoning", tools=[location])
    chat.append(user("What is the location of Lodon and London?"))
    first = chat.sample()
    record("GetCompletion: two tool calls", chat, first)
    chat.append(first)
    answers = {
        "Lodon": 'Wrong location, I only know about "London".',
        "London": '{"lat": 51, "lng": 0}',
    }
    for call in first.tool_calls:
        where = json.loads(call.function.arguments)["loc_name"]
        chat.append(tool_result(answers[where], tool_call_id=call.id))
    second = chat.sample()
    record("GetCompletion: the tool results, the answer", chat, second)
    streamed = client.chat.create(model="grok-4-fast-reasoning")
    streamed.append(user("What is 2+2? Think first."))
    chunks = 0
    last = None
    for response, _chunk in streamed.stream():
        last = response
        chunks += 1
    record("GetCompletionChunk: a stream with reasoning", streamed, last, chunks=chunks)
    refused = client.chat.create(model="grok-4-fast-reasoning")
    refused.append(user("One more, please."))
    try:
        refused.sample()
    except Exception as exc:  # noqa: BLE001 - the error is the outcome we record
        code = exc.code().name if hasattr(exc, "code") else None
        record("GetCompletion: refused", refused, error=type(exc).__name__, status=code)
    return steps


async def run_xai_grpc(case: Case, capture: Any) -> dict[str, Any]:
    from xai_sdk import Client

    served: list[dict[str, Any]] = []
    server = xai_server(case.port, served)
    server.start()
    capture.start()
    started = time.time()
    client = Client(
        api_key="xai-fake-key-for-a-loopback-capture",
        api_host=f"127.0.0.1:{case.port}",
        use_insecure_channel=True,
    )
    try:
        steps = await asyncio.to_thread(xai_conversation, client)
    finally:
        client.close()
        await asyncio.sleep(0.2)
        server.stop(0.5).wait()
    return {
        "transport": "xai_api.Chat over h2c, responses gzip-compressed",
        "server": "grpcio server of xai_sdk's ChatServicer playing corpus responses",
        "client": "xai_sdk.Client (sync), use_insecure_channel=True",
        "played": [
            str(XAI_TOOL_CALL.relative_to(XAI_CORPUS.parent)),
            str(XAI_STREAM.relative_to(XAI_CORPUS.parent)),
        ],
        "fake_credentials": {"authorization_bearer": "xai-fake-key-for-a-loopback-capture"},
        "client_started": round(started, 6),
        "steps": steps,
        "server_saw": served,
    }


RUNNERS: dict[str, Callable[[Case, Any], Coroutine[Any, Any, dict[str, Any]]]] = {
    "a2a_grpc": run_a2a_grpc,
    "a2a_jsonrpc": run_a2a_jsonrpc,
    "xai_grpc": run_xai_grpc,
}


# -- one case ---------------------------------------------------------------------------------


def run_case(case: Case, tcpdump: str) -> None:
    folder = CAPTURES_DIR / case.name
    folder.mkdir(parents=True, exist_ok=True)
    pcap = folder / "capture.pcap"
    capture = genlib.Tcpdump(tcpdump, pcap, case.port, buffer_kib=65536)
    result = asyncio.run(RUNNERS[case.kind](case, capture))
    counters = capture.stop(linger=0.7)
    truth = {
        "capture": case.name,
        "made_by": MADE_BY,
        "description": case.description,
        "port": case.port,
        **result,
    }
    run = {
        "tcpdump": counters,
        "capture_complete": genlib.capture_complete(counters),
        "packets": genlib.pcap_packet_count(pcap),
        "pcap_bytes": pcap.stat().st_size,
        "software": {**genlib.package_versions(*SOFTWARE), "python": sys.version.split()[0]},
    }
    genlib.write_json(folder / "truth.json", truth)
    genlib.write_json(folder / "run.json", run)
    genlib.log(f"{case.name}: {run['pcap_bytes']:,} bytes, {run['packets']} packets, {counters}")
    if not run["capture_complete"]:
        raise genlib.ToolError(f"{case.name}: tcpdump dropped packets")


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--only", action="append", default=[], metavar="NAME")
    parser.add_argument("--list", action="store_true")
    args = parser.parse_args()
    if args.list:
        for c in CASES:
            print(c.name, c.description)
        return 0
    reexec_in_venv()
    tcpdump = genlib.ensure_tcpdump()
    for case in CASES:
        if not args.only or case.name in args.only:
            run_case(case, tcpdump)
    return 0


if __name__ == "__main__":
    sys.exit(main())
