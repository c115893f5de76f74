"""Make loopback captures of real MCP and A2A software in ``tests/data/captures/<name>/``.

    python3 scripts/make_agent_captures.py                  # every capture
    python3 scripts/make_agent_captures.py --only mcp_legacy_sse,a2a_v1_rest
    python3 scripts/make_agent_captures.py --list

Real SDKs on loopback, with the helpers of ``bench/genlib.py`` (tcpdump, certificates, JSON
files): the server is a uvicorn process (``--serve``) running an app built with the SDK's own
server classes, the client is the SDK's own client in this process, and ``tcpdump -i lo`` writes
the case's port only (nothing may be dropped). The script makes a dedicated venv,
``scripts/.venv-agents`` (python3.11, from the package registry: mcp, a2a-sdk[http-server],
mcp-server-time, httpx, uvicorn, starlette, sse-starlette) and re-runs itself in it.

The cases:

* ``mcp_legacy_sse``: MCP 2024-11-05 HTTP+SSE transport (``SseServerTransport`` through
  ``MCPServer.sse_app``); ``sse_client`` + ``ClientSession``: initialize, tools/list, three
  tools/call (text, isError, progress notifications), ping.
* ``mcp_streamable_sessions``: Streamable HTTP, stateful (``Mcp-Session-Id``), client keep-alive
  off so that the session spans many TCP connections; server-to-client sampling/createMessage,
  elicitation/create and roots/list answered by the client's callbacks, progress and log
  notifications, the GET stream, a JSON-RPC error, the DELETE at the end.
* ``mcp_stateless_2026``: protocol revision 2026-07-28 (no initialize, no session):
  server/discover, tools/list, tools/call with ``Mcp-Method``/``Mcp-Name`` headers, an
  ``input_required`` round (elicitation inside ``InputRequiredResult``), subscriptions/listen.
* ``a2a_v1_jsonrpc`` / ``a2a_v1_rest``: a2a-sdk 1.x server (an ``AgentExecutor``) and client
  over the A2A 1.0 JSON-RPC binding and over the HTTP+JSON (REST) binding: agent card,
  SendMessage, SendStreamingMessage (status and artifact updates), a failing task, GetTask,
  CancelTask, ListTasks, an unknown task.
* ``mcp_streamable_tls``: Streamable HTTP over TLS 1.3 (self-signed certificate made by openssl at
  run time), the client writing ``keys.log``: initialize, tools/list, tools/call, DELETE.

Each folder gets ``capture.pcap``, ``truth.json`` (from the client's own records only: the
JSON-RPC messages the SDK session sent and received, in order, from wrappers around its
transport streams, and each HTTP exchange as the client's HTTP library saw it through a
recording transport: method, path, status, headers, client port, the JSON-RPC messages or SSE
events of the bodies; never read back from the pcap), ``run.json`` (port, tcpdump counters,
exit codes, package versions) and, for the TLS case, ``keys.log``. A section of
``tests/data/captures/README.md`` (between markers) is rewritten from the cases below.
"""

import asyncio
import contextlib
import json
import ssl
import sys
import tempfile
import time
import traceback
import warnings
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH_DIR))

import genlib  # noqa: E402 - lives in bench/, shared with the other capture generators

SCRIPT = Path(__file__).resolve()
CAPTURES_DIR = genlib.REPO_ROOT / "tests" / "data" / "captures"
AGENTS_VENV = SCRIPT.parent / ".venv-agents"
AGENTS_PYTHON = AGENTS_VENV / "bin" / "python"
AGENTS_REQUIREMENTS = (
    "mcp==2.3.0",
    "a2a-sdk[http-server]==1.3.0",
    "mcp-server-time==2026.10.19",
    "httpx",
    "uvicorn",
    "starlette",
    "sse-starlette",
)
SIZE_LIMIT = 1_000_000
MADE_BY = "scripts/make_agent_captures.py"
README_BEGIN = "<!-- begin: agent captures (scripts/make_agent_captures.py) -->"
README_END = "<!-- end: agent captures -->"


# =========================================================================== the venv


def ensure_agents_venv() -> Path:
    """The agents venv's python (python3.11), created and filled from the registry if needed."""
    return genlib.ensure_venv(AGENTS_VENV, AGENTS_REQUIREMENTS, "python3.11")


def reexec_in_agents_venv() -> None:
    """Run this script again under the agents venv's python (returns when already there)."""
    genlib.reexec_in_venv(SCRIPT, AGENTS_VENV, ensure_agents_venv)


def software() -> dict[str, str]:
    return {
        **genlib.package_versions(
            "mcp",
            "mcp-types",
            "a2a-sdk",
            "mcp-server-time",
            "httpx",
            "httpx2",
            "httpcore",
            "httpcore2",
            "uvicorn",
            "starlette",
            "sse-starlette",
            "pydantic",
            "protobuf",
        ),
        "python": sys.version.split()[0],
        "python_ssl": ssl.OPENSSL_VERSION,
    }


# =========================================================================== client records
#
# Everything in truth.json comes from here: wrappers around the SDK session's transport
# streams (the JSON-RPC messages, in the order the session sent and received them) and a
# recording HTTP transport under the client's httpx / httpx2 client (each exchange).


def short(text: Any, n: int = 120) -> Any:
    if isinstance(text, str) and len(text) > n:
        return text[:n] + "..."
    return text


def result_summary(result: Any) -> dict[str, Any]:
    """The facts of a JSON-RPC result worth comparing: its keys and the well-known fields of
    MCP and A2A results."""
    if not isinstance(result, dict):
        return {"value": short(result)}
    out: dict[str, Any] = {"keys": sorted(result)}
    for key in ("isError", "resultType", "protocolVersion", "supportedVersions", "action"):
        if key in result:
            out[key] = result[key]
    if isinstance(result.get("serverInfo"), dict):
        out["serverInfo"] = result["serverInfo"].get("name")
    if isinstance(result.get("tools"), list):
        out["tools"] = [t.get("name") for t in result["tools"] if isinstance(t, dict)]
    if isinstance(result.get("content"), list):
        out["content_text"] = [
            short(c.get("text")) for c in result["content"] if isinstance(c, dict) and "text" in c
        ]
    if isinstance(result.get("content"), dict) and "text" in result["content"]:
        out["content_text"] = [short(result["content"]["text"])]
    if isinstance(result.get("inputRequests"), dict):
        out["inputRequests"] = {
            k: v.get("method") for k, v in result["inputRequests"].items() if isinstance(v, dict)
        }
    if isinstance(result.get("roots"), list):
        out["roots"] = [r.get("uri") for r in result["roots"] if isinstance(r, dict)]
    out.update(a2a_summary(result))
    return out


def a2a_summary(doc: dict[str, Any]) -> dict[str, Any]:
    """Kind, ids and state of an A2A 1.0 result or stream event (proto JSON)."""
    out: dict[str, Any] = {}
    for kind in ("task", "message", "statusUpdate", "artifactUpdate"):
        body = doc.get(kind)
        if isinstance(body, dict):
            out["a2a_kind"] = kind
            doc = body
            break
    else:
        if "status" in doc and "id" in doc:
            out["a2a_kind"] = "task"
        elif "tasks" in doc:
            out["a2a_kind"] = "task_list"
            out["task_ids"] = [t.get("id") for t in doc["tasks"] if isinstance(t, dict)]
            return out
        else:
            return out
    for key in ("id", "taskId", "contextId", "messageId", "role"):
        if key in doc:
            out[key] = doc[key]
    status = doc.get("status")
    if isinstance(status, dict) and "state" in status:
        out["state"] = status["state"]
    artifact = doc.get("artifact")
    if isinstance(artifact, dict):
        out["artifactId"] = artifact.get("artifactId")
        out["artifact_text"] = [
            short(p.get("text")) for p in artifact.get("parts", []) if "text" in p
        ]
    if isinstance(doc.get("parts"), list):
        out["text"] = [short(p.get("text")) for p in doc["parts"] if "text" in p]
    return out


def rpc_summary(msg: Any) -> dict[str, Any]:
    """Kind, method, id and result/error summary of one JSON-RPC message."""
    if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0":
        return {"kind": "not_jsonrpc", **(a2a_summary(msg) if isinstance(msg, dict) else {})}
    out: dict[str, Any] = {}
    if "method" in msg:
        out["kind"] = "request" if "id" in msg else "notification"
        out["method"] = msg["method"]
        if "id" in msg:
            out["id"] = msg["id"]
        params = msg.get("params")
        if isinstance(params, dict):
            for key in ("name", "progressToken", "progress", "total", "level", "uri"):
                if key in params:
                    out[key] = params[key]
            meta = params.get("_meta")
            if isinstance(meta, dict) and meta:
                out["meta_keys"] = sorted(meta)
    elif "error" in msg:
        out["kind"] = "error"
        out["id"] = msg.get("id")
        err = msg["error"] if isinstance(msg["error"], dict) else {}
        out["error"] = {"code": err.get("code"), "message": short(err.get("message"))}
    else:
        out["kind"] = "response"
        out["id"] = msg.get("id")
        out["result"] = result_summary(msg.get("result"))
    return out


def parse_sse(body: bytes) -> list[dict[str, Any]]:
    """The events of an event-stream body, with their fields, the data parsed as JSON (and
    summarized as JSON-RPC) where it is JSON."""
    events: list[dict[str, Any]] = []
    for piece in genlib.split_sse_events(body):
        fields: dict[str, Any] = {}
        data: list[str] = []
        comment = False
        for line in piece.decode("utf-8", "replace").splitlines():
            if not line:
                continue
            if line.startswith(":"):
                comment = True
                continue
            name, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if name == "data":
                data.append(value)
            elif name in ("event", "id", "retry"):
                fields[name] = value
        if not data and not fields:
            if comment:
                events.append({"comment": True})
            continue
        # "event" is None when the field is absent (the type is then "message")
        ev: dict[str, Any] = {"event": fields.get("event")}
        ev.update({k: fields[k] for k in ("id", "retry") if k in fields})
        text = "\n".join(data)
        ev["data_bytes"] = len(text.encode())
        try:
            doc = json.loads(text)
        except ValueError:
            ev["data"] = short(text)
        else:
            if isinstance(doc, dict) and doc.get("jsonrpc") == "2.0":
                ev["jsonrpc"] = rpc_summary(doc)
            elif isinstance(doc, dict):
                ev["a2a"] = a2a_summary(doc)
        events.append(ev)
    return events


def body_summary(body: bytes, ctype: str | None) -> dict[str, Any]:
    if not body:
        return {"bytes": 0}
    out: dict[str, Any] = {"bytes": len(body)}
    if ctype and ctype.startswith("text/event-stream"):
        out["sse_events"] = parse_sse(body)
        return out
    try:
        doc = json.loads(body)
    except ValueError:
        out["text"] = short(body.decode("utf-8", "replace"))
        return out
    if isinstance(doc, list):
        out["jsonrpc"] = [rpc_summary(m) for m in doc]
    elif isinstance(doc, dict) and doc.get("jsonrpc") == "2.0":
        out["jsonrpc"] = [rpc_summary(doc)]
    elif isinstance(doc, dict):
        out["json_keys"] = sorted(doc)
        summary = a2a_summary(doc)
        if summary:
            out["a2a"] = summary
        if "name" in doc and "supportedInterfaces" in doc:
            out["agent_card"] = {
                "name": doc["name"],
                "interfaces": doc["supportedInterfaces"],
            }
        if isinstance(doc.get("error"), dict):
            out["error"] = {k: short(v) for k, v in doc["error"].items() if k != "details"}
    return out


class HttpLog:
    """The HTTP exchanges as the client's HTTP library saw them, in the order sent."""

    def __init__(self) -> None:
        self.exchanges: list[dict[str, Any]] = []
        self.ports: list[int] = []
        self.tls: dict[int, dict[str, Any]] = {}

    def begin(self, request: Any) -> dict[str, Any]:
        try:
            content = bytes(request.content)
        except Exception:  # noqa: BLE001 - a streamed request body that was not read
            content = b""
        url = request.url
        path = url.raw_path.decode() if isinstance(url.raw_path, bytes) else str(url.raw_path)
        rec: dict[str, Any] = {
            "n": len(self.exchanges) + 1,
            "method": request.method,
            "path": path,
            "request_headers": [[k, v] for k, v in request.headers.multi_items()],
            "request_body": body_summary(content, request.headers.get("content-type")),
            "started": round(time.time(), 6),
        }
        self.exchanges.append(rec)
        return rec

    def response(self, rec: dict[str, Any], response: Any) -> None:
        rec["status"] = response.status_code
        rec["http_version"] = response.extensions.get("http_version", b"").decode() or None
        rec["response_headers"] = [[k, v] for k, v in response.headers.multi_items()]
        rec["headers_at"] = round(time.time(), 6)
        stream = response.extensions.get("network_stream")
        if stream is not None:
            addr = stream.get_extra_info("client_addr")
            port = addr[1] if addr else None
            if port is not None:
                rec["client_port"] = port
                rec["new_connection"] = port not in self.ports
                if port not in self.ports:
                    self.ports.append(port)
                rec["connection"] = self.ports.index(port) + 1
            tls = stream.get_extra_info("ssl_object")
            if tls is not None and port is not None and port not in self.tls:
                self.tls[port] = {
                    "client_port": port,
                    "tls_version": tls.version(),
                    "cipher": tls.cipher()[0],
                    "alpn": tls.selected_alpn_protocol(),
                }

    def finish(self, rec: dict[str, Any], body: bytes, complete: bool) -> None:
        if "ended" in rec:
            return
        ctype = {k.lower(): v for k, v in rec.get("response_headers", [])}.get("content-type")
        rec["response_body"] = body_summary(body, ctype)
        rec["response_complete"] = complete
        rec["ended"] = round(time.time(), 6)


def recording_transport(mod: Any, inner: Any, log: HttpLog) -> Any:
    """An ``AsyncBaseTransport`` of ``mod`` (httpx or httpx2) around ``inner`` that records
    each exchange in ``log``, the response body teed as the client reads it."""

    class Tee(mod.AsyncByteStream):  # type: ignore[misc, name-defined, unused-ignore]
        def __init__(self, stream: Any, rec: dict[str, Any]) -> None:
            self.stream = stream
            self.rec = rec
            self.buf = bytearray()
            self.done = False

        async def __aiter__(self) -> Any:
            async for chunk in self.stream:
                self.buf += chunk
                yield chunk
            self.done = True

        async def aclose(self) -> None:
            log.finish(self.rec, bytes(self.buf), self.done)
            await self.stream.aclose()

    class Recording(mod.AsyncBaseTransport):  # type: ignore[misc, name-defined, unused-ignore]
        async def handle_async_request(self, request: Any) -> Any:
            rec = log.begin(request)
            try:
                response = await inner.handle_async_request(request)
            except Exception as exc:
                rec["exception"] = repr(exc)
                raise
            log.response(rec, response)
            tee = Tee(response.stream, rec)
            rec["_tee"] = tee
            response.stream = tee
            return response

        async def aclose(self) -> None:
            await inner.aclose()

    return Recording()


def finish_http_log(log: HttpLog) -> list[dict[str, Any]]:
    """The exchanges, with the bodies of any response never closed (the client dropped it)."""
    for rec in log.exchanges:
        tee = rec.pop("_tee", None)
        if tee is not None and "ended" not in rec:
            log.finish(rec, bytes(tee.buf), tee.done)
            rec["note"] = "response not closed by the client when the run ended"
    return log.exchanges


class MessageLog:
    """The JSON-RPC messages an SDK session wrote to and read from its transport, in order."""

    def __init__(self) -> None:
        self.items: list[dict[str, Any]] = []

    def add(self, direction: str, item: Any) -> None:
        entry: dict[str, Any] = {"n": len(self.items) + 1, "t": round(time.time(), 6)}
        entry["direction"] = direction
        message = getattr(item, "message", None)
        if message is None:
            entry["exception"] = repr(item)
        else:
            doc = message.model_dump(by_alias=True, mode="json", exclude_none=True)
            entry.update(rpc_summary(doc))
            entry["message"] = doc
        self.items.append(entry)


class RecordingRead:
    """A transport read stream that notes each item the session reads."""

    def __init__(self, inner: Any, log: MessageLog) -> None:
        self.inner = inner
        self.log = log

    @property
    def last_context(self) -> Any:
        return getattr(self.inner, "last_context", None)

    async def receive(self) -> Any:
        item = await self.inner.receive()
        self.log.add("recv", item)
        return item

    def __aiter__(self) -> "RecordingRead":
        return self

    async def __anext__(self) -> Any:
        item = await self.inner.__anext__()
        self.log.add("recv", item)
        return item

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def __aenter__(self) -> "RecordingRead":
        await self.inner.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> Any:
        return await self.inner.__aexit__(*exc)


class RecordingWrite:
    """A transport write stream that notes each message the session sends."""

    def __init__(self, inner: Any, log: MessageLog) -> None:
        self.inner = inner
        self.log = log

    async def send(self, item: Any, /) -> None:
        self.log.add("send", item)
        await self.inner.send(item)

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def __aenter__(self) -> "RecordingWrite":
        await self.inner.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> Any:
        return await self.inner.__aexit__(*exc)


@contextlib.asynccontextmanager
async def recorded_streams(transport_cm: Any, log: MessageLog) -> Any:
    """A client Transport: ``transport_cm``'s streams behind the recording wrappers."""
    async with transport_cm as (read, write):
        yield RecordingRead(read, log), RecordingWrite(write, log)


# =========================================================================== the MCP server


def build_mcp_server() -> Any:
    """One MCPServer (mcp 2.x's FastMCP) with the tools every MCP case uses."""
    from typing import Annotated

    import anyio
    import mcp_types as t
    from mcp.server.mcpserver import Context, MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.server.mcpserver.resolve import Elicit, Resolve
    from pydantic import BaseModel, Field

    server = MCPServer(
        "agentshark-workshop",
        version="1.0.0",
        instructions="A small workshop server for packet captures.",
        log_level="WARNING",
    )

    class Confirm(BaseModel):
        confirm: bool = Field(description="Go ahead?")
        seats: int = Field(description="How many seats")

    @server.tool()
    def echo(text: str) -> str:
        """Say the text back."""
        return f"echo: {text}"

    @server.tool()
    def fail(reason: str) -> str:
        """Always fails (the result has isError true)."""
        raise ToolError(f"refused: {reason}")

    @server.tool()
    async def count(steps: int, ctx: Context) -> str:
        """Count to ``steps``, with a progress notification per step and a log message."""
        for i in range(1, steps + 1):
            await ctx.report_progress(i, steps, f"step {i} of {steps}")
            await anyio.sleep(0.05)
        await ctx.info(f"counted to {steps}")
        return f"counted to {steps}"

    @server.tool()
    async def summarize(text: str, ctx: Context) -> str:
        """Ask the client's model for a summary (sampling/createMessage)."""
        result = await ctx.session.create_message(
            messages=[
                t.SamplingMessage(
                    role="user", content=t.TextContent(type="text", text=f"Summarize: {text}")
                )
            ],
            max_tokens=60,
            system_prompt="You summarize in one line.",
            related_request_id=ctx.request_id,
        )
        content = result.content
        return f"summary: {getattr(content, 'text', content)}"

    @server.tool()
    async def reserve(city: str, ctx: Context) -> str:
        """Ask the user to confirm a reservation (elicitation/create)."""
        answer = await ctx.elicit(f"Reserve a table in {city}?", schema=Confirm)
        if answer.action == "accept":
            return f"reserved {answer.data.seats} seats in {city}"
        return f"not reserved ({answer.action})"

    @server.tool()
    async def workspace(ctx: Context) -> str:
        """List the client's roots (roots/list)."""
        roots = await ctx.session.list_roots()
        return "roots: " + ", ".join(str(r.uri) for r in roots.roots)

    async def ask_booking(ctx: Context) -> Elicit[Confirm]:
        return Elicit("Book the table?", Confirm)

    @server.tool()
    async def book_table(city: str, booking: Annotated[Confirm, Resolve(ask_booking)]) -> str:
        """Book a table; the confirmation is elicited (input_required on 2026-07-28)."""
        return f"booked {booking.seats} seats in {city} (confirm={booking.confirm})"

    @server.tool()
    async def touch_tools(ctx: Context) -> str:
        """Publish a tools list-changed event to subscriptions/listen streams."""
        await ctx.notify_tools_changed()
        return "tools changed"

    return server


# =========================================================================== the A2A server


def build_a2a_app(binding: str, port: int) -> Any:
    """A Starlette app with the agent card and one A2A 1.0 binding ("JSONRPC" or "HTTP+JSON")
    over DefaultRequestHandler, an in-memory task store and a small AgentExecutor."""
    from a2a.helpers import new_task_from_user_message, new_text_message, new_text_part
    from a2a.server.agent_execution import AgentExecutor
    from a2a.server.request_handlers import DefaultRequestHandler
    from a2a.server.routes import (
        create_agent_card_routes,
        create_jsonrpc_routes,
        create_rest_routes,
    )
    from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
    from a2a.types.a2a_pb2 import (
        AgentCapabilities,
        AgentCard,
        AgentInterface,
        AgentSkill,
    )
    from starlette.applications import Starlette

    class WorkshopAgent(AgentExecutor):  # type: ignore[misc, unused-ignore]  # Any without a2a
        """ "hello ..." answers with a message; "stream ..." runs a task with status and
        artifact updates; "fail ..." fails its task; "slow ..." works until cancelled."""

        async def execute(self, context: Any, event_queue: Any) -> None:
            text = context.get_user_input()
            if text.startswith("hello"):
                await event_queue.enqueue_event(
                    new_text_message(
                        f"Hello back! You said: {text}",
                        context_id=context.context_id,
                    )
                )
                return
            task = context.current_task
            if task is None:
                task = new_task_from_user_message(context.message)
                await event_queue.enqueue_event(task)
            updater = TaskUpdater(event_queue, task.id, task.context_id)
            await updater.start_work(updater.new_agent_message([new_text_part("working on it")]))
            if text.startswith("fail"):
                await asyncio.sleep(0.05)
                await updater.failed(
                    updater.new_agent_message([new_text_part("the workshop tool broke")])
                )
                return
            if text.startswith("slow"):
                for _ in range(100):
                    await asyncio.sleep(0.1)
                await updater.complete()
                return
            words = ["packets", "on", "loopback", "are", "still", "packets"]
            for i, word in enumerate(words):
                await asyncio.sleep(0.03)
                await updater.add_artifact(
                    [new_text_part(word if i == 0 else " " + word)],
                    artifact_id="answer",
                    name="answer",
                    append=i > 0,
                    last_chunk=i == len(words) - 1,
                )
            await updater.complete(updater.new_agent_message([new_text_part("done")]))

        async def cancel(self, context: Any, event_queue: Any) -> None:
            task = context.current_task
            updater = TaskUpdater(event_queue, context.task_id, context.context_id)
            if task is not None:
                updater = TaskUpdater(event_queue, task.id, task.context_id)
            await updater.cancel(updater.new_agent_message([new_text_part("cancelled")]))

    base = f"http://127.0.0.1:{port}"
    path = "/a2a/jsonrpc" if binding == "JSONRPC" else "/a2a/rest"
    card = AgentCard(
        name="agentshark workshop agent",
        description="Answers, streams, fails and waits, for packet captures.",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(url=base + path, protocol_binding=binding, protocol_version="1.0")
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
    handler = DefaultRequestHandler(
        agent_executor=WorkshopAgent(), task_store=InMemoryTaskStore(), agent_card=card
    )
    routes = list(create_agent_card_routes(card))
    if binding == "JSONRPC":
        routes += create_jsonrpc_routes(handler, path)
    else:
        routes += create_rest_routes(handler, path_prefix=path)
    return Starlette(routes=routes)


# =========================================================================== --serve


def serve(spec: dict[str, Any]) -> None:
    import uvicorn

    warnings.simplefilter("ignore")
    kind = spec["kind"]
    if kind == "mcp_sse":
        app = build_mcp_server().sse_app()
    elif kind == "mcp_http":
        app = build_mcp_server().streamable_http_app()
    elif kind == "a2a_jsonrpc":
        app = build_a2a_app("JSONRPC", spec["port"])
    elif kind == "a2a_rest":
        app = build_a2a_app("HTTP+JSON", spec["port"])
    else:
        raise SystemExit(f"unknown server kind {kind}")
    tls: dict[str, Any] = {}
    if spec.get("certfile"):
        tls = {"ssl_certfile": spec["certfile"], "ssl_keyfile": spec["keyfile"]}
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=spec["port"],
        log_level="warning",
        timeout_graceful_shutdown=2,
        **tls,
    )
    uvicorn.Server(config).run()


# =========================================================================== MCP clients


@dataclass
class Ctx:
    """What a client function gets."""

    name: str
    port: int
    folder: Path
    tls: bool = False
    cafile: Path | None = None
    keylog: Path | None = None
    notes: dict[str, Any] = field(default_factory=dict)

    @property
    def base(self) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}"


class McpRecorder:
    """Client-side records of an MCP run: callbacks, notifications, progress, results."""

    def __init__(self) -> None:
        self.messages = MessageLog()
        self.http = HttpLog()
        self.events: list[dict[str, Any]] = []
        self.steps: list[dict[str, Any]] = []

    def event(self, kind: str, **facts: Any) -> None:
        self.events.append({"t": round(time.time(), 6), "kind": kind, **facts})

    async def step(self, label: str, call: Awaitable[Any]) -> Any:
        """Run one client call, noting its outcome (a result summary or the error)."""
        t0 = time.time()
        rec: dict[str, Any] = {"label": label, "started": round(t0, 6)}
        try:
            result = await call
        except Exception as exc:  # noqa: BLE001 - the error is the outcome we record
            rec["error"] = f"{type(exc).__name__}: {exc}"
            code = getattr(getattr(exc, "error", None), "code", None)
            if code is not None:
                rec["error_code"] = code
            result = None
        else:
            if hasattr(result, "model_dump"):
                rec["result"] = result_summary(
                    result.model_dump(by_alias=True, mode="json", exclude_none=True)
                )
        rec["ended"] = round(time.time(), 6)
        self.steps.append(rec)
        return result

    # the SDK callbacks

    async def on_message(self, message: Any) -> None:
        if isinstance(message, Exception):
            self.event("transport_exception", error=repr(message))
            return
        root = getattr(message, "root", message)
        self.event("notification", method=getattr(root, "method", type(root).__name__))

    async def on_log(self, params: Any) -> None:
        self.event("log", level=params.level, data=params.data, logger=params.logger)

    def on_progress(
        self, label: str
    ) -> Callable[[float, float | None, str | None], Awaitable[None]]:
        async def progress(value: float, total: float | None, message: str | None) -> None:
            self.event("progress", call=label, progress=value, total=total, message=message)

        return progress

    async def on_sampling(self, context: Any, params: Any) -> Any:
        import mcp_types as t

        prompt = [getattr(m.content, "text", None) for m in params.messages]
        self.event("sampling/createMessage", request_id=context.request_id, prompt=prompt)
        return t.CreateMessageResult(
            role="assistant",
            content=t.TextContent(type="text", text="Loopback packets are still packets."),
            model="workshop-mini",
            stop_reason="endTurn",
        )

    async def on_elicit(self, context: Any, params: Any) -> Any:
        import mcp_types as t

        self.event("elicitation/create", request_id=context.request_id, message=params.message)
        return t.ElicitResult(action="accept", content={"confirm": True, "seats": 2})

    async def on_roots(self, context: Any) -> Any:
        import mcp_types as t

        self.event("roots/list", request_id=context.request_id)
        return t.ListRootsResult(
            roots=[t.Root(uri="file:///work/project", name="project")]  # type: ignore[arg-type, unused-ignore]
        )

    def truth(self) -> dict[str, Any]:
        exchanges = finish_http_log(self.http)
        ports = sorted({e["client_port"] for e in exchanges if "client_port" in e})
        sids = sorted(
            {
                v
                for e in exchanges
                for k, v in e.get("request_headers", []) + e.get("response_headers", [])
                if k.lower() == "mcp-session-id"
            }
        )
        return {
            "steps": self.steps,
            "jsonrpc_messages": self.messages.items,
            "jsonrpc_message_count": len(self.messages.items),
            "client_events": self.events,
            "http_exchanges": exchanges,
            "http_exchange_count": len(exchanges),
            "tcp_connections": len(ports),
            "client_ports": ports,
            "tls_connections": list(self.http.tls.values()),
            "mcp_session_ids": sids,
        }


def mcp_http_client(rec: McpRecorder, ctx: Ctx, *, keepalive: bool = True) -> Any:
    """An httpx2 AsyncClient (the MCP SDK's HTTP library) with the recording transport; TLS
    through a verifying context that writes the key log."""
    import httpx2

    verify: Any = True
    if ctx.tls:
        assert ctx.cafile is not None and ctx.keylog is not None
        sslctx = ssl.create_default_context(cafile=str(ctx.cafile))
        sslctx.keylog_filename = str(ctx.keylog)
        verify = sslctx
    limits = httpx2.Limits(max_keepalive_connections=None if keepalive else 0)
    inner = httpx2.AsyncHTTPTransport(verify=verify, limits=limits)
    return httpx2.AsyncClient(
        transport=recording_transport(httpx2, inner, rec.http),
        timeout=httpx2.Timeout(30.0, read=300.0),
    )


async def client_mcp_legacy_sse(ctx: Ctx) -> dict[str, Any]:
    from mcp.client.session import ClientSession
    from mcp.client.sse import sse_client

    rec = McpRecorder()
    sessions: list[str] = []

    def factory(headers: Any = None, timeout: Any = None, auth: Any = None) -> Any:
        return mcp_http_client(rec, ctx)

    url = f"{ctx.base}/sse"
    async with (
        sse_client(url, httpx_client_factory=factory, on_session_created=sessions.append) as (
            read,
            write,
        ),
        ClientSession(
            RecordingRead(read, rec.messages),
            RecordingWrite(write, rec.messages),
            logging_callback=rec.on_log,
            message_handler=rec.on_message,
        ) as session,
    ):
        await rec.step("initialize", session.initialize())
        await rec.step("tools/list", session.list_tools())
        await rec.step("tools/call echo", session.call_tool("echo", {"text": "hello over SSE"}))
        await rec.step("tools/call fail", session.call_tool("fail", {"reason": "on purpose"}))
        await rec.step(
            "tools/call count",
            session.call_tool("count", {"steps": 3}, progress_callback=rec.on_progress("count")),
        )
        await rec.step("ping", session.send_ping())
        await asyncio.sleep(0.2)
    return {
        **rec.truth(),
        "transport": "MCP HTTP+SSE (2024-11-05): GET /sse event stream, POST /messages/",
        "sse_session_ids": sessions,
    }


async def client_mcp_streamable(ctx: Ctx, *, keepalive: bool, full: bool) -> dict[str, Any]:
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    rec = McpRecorder()
    url = f"{ctx.base}/mcp"
    http = mcp_http_client(rec, ctx, keepalive=keepalive)
    async with (
        http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(
            RecordingRead(read, rec.messages),
            RecordingWrite(write, rec.messages),
            sampling_callback=rec.on_sampling if full else None,
            elicitation_callback=rec.on_elicit if full else None,
            list_roots_callback=rec.on_roots if full else None,
            logging_callback=rec.on_log,
            message_handler=rec.on_message,
        ) as session,
    ):
        await rec.step("initialize", session.initialize())
        await asyncio.sleep(0.3)  # the GET stream the transport opens after initialized
        await rec.step("tools/list", session.list_tools())
        await rec.step("tools/call echo", session.call_tool("echo", {"text": "hello"}))
        if full:
            await rec.step("logging/setLevel", session.set_logging_level("info"))
            await rec.step(
                "tools/call count",
                session.call_tool(
                    "count", {"steps": 3}, progress_callback=rec.on_progress("count")
                ),
            )
            await rec.step(
                "tools/call summarize (sampling)",
                session.call_tool("summarize", {"text": "a long story about packets"}),
            )
            await rec.step(
                "tools/call reserve (elicitation)",
                session.call_tool("reserve", {"city": "Lisbon"}),
            )
            await rec.step("tools/call workspace (roots)", session.call_tool("workspace", {}))
            await rec.step("tools/call unknown tool", session.call_tool("no_such_tool", {}))
            await rec.step(
                "prompts/get unknown prompt (JSON-RPC error)",
                session.get_prompt("no_such_prompt"),
            )
            await rec.step("ping", session.send_ping())
        await asyncio.sleep(0.2)
    out = rec.truth()
    out["transport"] = "MCP Streamable HTTP (stateful, Mcp-Session-Id) on POST/GET/DELETE /mcp"
    out["client_keepalive"] = keepalive
    return out


async def client_mcp_sessions(ctx: Ctx) -> dict[str, Any]:
    return await client_mcp_streamable(ctx, keepalive=False, full=True)


async def client_mcp_tls(ctx: Ctx) -> dict[str, Any]:
    return await client_mcp_streamable(ctx, keepalive=True, full=False)


async def client_mcp_2026(ctx: Ctx) -> dict[str, Any]:
    import anyio
    from mcp.client.client import Client
    from mcp.client.streamable_http import streamable_http_client

    rec = McpRecorder()
    url = f"{ctx.base}/mcp"
    http = mcp_http_client(rec, ctx)
    listen_events: list[str] = []
    async with http:
        transport = recorded_streams(streamable_http_client(url, http_client=http), rec.messages)
        client = Client(
            transport,
            mode="auto",
            elicitation_callback=rec.on_elicit,
            logging_callback=rec.on_log,
            message_handler=rec.on_message,
            log_level="info",
            cache=None,
        )
        t0 = time.time()
        async with client:
            rec.steps.append(
                {
                    "label": "connect (mode=auto: server/discover)",
                    "started": round(t0, 6),
                    "ended": round(time.time(), 6),
                    "protocol_version": client.protocol_version,
                    "server_info": getattr(client.server_info, "name", None),
                }
            )
            await rec.step("tools/list", client.list_tools())
            await rec.step("tools/call echo", client.call_tool("echo", {"text": "stateless"}))
            await rec.step("tools/call fail", client.call_tool("fail", {"reason": "on purpose"}))
            await rec.step(
                "tools/call count (progress, log)",
                client.call_tool("count", {"steps": 3}, progress_callback=rec.on_progress("count")),
            )
            await rec.step(
                "tools/call book_table (input_required round)",
                client.call_tool("book_table", {"city": "Porto"}),
            )

            async def listen() -> None:
                async with client.listen(tools_list_changed=True) as sub:
                    listen_events.append(f"acknowledged: {getattr(sub, 'honored', None)}")
                    await rec.step("tools/call touch_tools", client.call_tool("touch_tools", {}))
                    async for event in sub:
                        listen_events.append(type(event).__name__)
                        break

            try:
                with anyio.fail_after(10):
                    await rec.step("subscriptions/listen", listen())
            except TimeoutError:
                listen_events.append("timed out")
            await asyncio.sleep(0.2)
    out = rec.truth()
    out["transport"] = "MCP Streamable HTTP at protocol revision 2026-07-28 (stateless)"
    out["listen_events"] = listen_events
    return out


# =========================================================================== A2A clients


async def client_a2a(ctx: Ctx, binding: str) -> dict[str, Any]:
    import httpx
    from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
    from a2a.helpers import new_text_message
    from a2a.types.a2a_pb2 import (
        CancelTaskRequest,
        GetTaskRequest,
        ListTasksRequest,
        Role,
        SendMessageConfiguration,
        SendMessageRequest,
    )
    from google.protobuf import json_format

    http_log = HttpLog()
    steps: list[dict[str, Any]] = []
    ids: dict[str, str] = {}

    def pb(msg: Any) -> dict[str, Any]:
        out: dict[str, Any] = json_format.MessageToDict(msg)
        return out

    async def step(label: str, call: Callable[[], Awaitable[Any]]) -> Any:
        rec: dict[str, Any] = {"label": label, "started": round(time.time(), 6)}
        try:
            result = await call()
        except Exception as exc:  # noqa: BLE001 - the error is the outcome we record
            rec["error"] = f"{type(exc).__name__}: {short(str(exc), 300)}"
            result = None
        else:
            if isinstance(result, list):
                rec["events"] = [a2a_summary(pb(r)) for r in result]
            elif result is not None:
                rec["result"] = a2a_summary(pb(result)) or {"keys": sorted(pb(result))}
        rec["ended"] = round(time.time(), 6)
        steps.append(rec)
        return result

    def message(text: str) -> Any:
        return new_text_message(text, role=Role.ROLE_USER)

    inner = httpx.AsyncHTTPTransport()
    async with httpx.AsyncClient(
        transport=recording_transport(httpx, inner, http_log), timeout=30
    ) as http:
        card = await step("agent card", lambda: A2ACardResolver(http, ctx.base).get_agent_card())
        plain = ClientFactory(
            ClientConfig(streaming=False, httpx_client=http, supported_protocol_bindings=[binding])
        ).create(card)
        streaming = ClientFactory(
            ClientConfig(streaming=True, httpx_client=http, supported_protocol_bindings=[binding])
        ).create(card)

        async def collect(client: Any, request: Any) -> list[Any]:
            return [event async for event in client.send_message(request)]

        await step(
            "SendMessage hello (message reply)",
            lambda: collect(plain, SendMessageRequest(message=message("hello agent"))),
        )
        streamed = await step(
            "SendStreamingMessage stream (task, status and artifact updates)",
            lambda: collect(streaming, SendMessageRequest(message=message("stream a sentence"))),
        )
        for ev in streamed or []:
            doc = pb(ev)
            tid = a2a_summary(doc).get("id") or a2a_summary(doc).get("taskId")
            if tid:
                ids["streamed"] = tid
                break
        failed = await step(
            "SendMessage fail (task fails)",
            lambda: collect(plain, SendMessageRequest(message=message("fail please"))),
        )
        for ev in failed or []:
            tid = a2a_summary(pb(ev)).get("id")
            if tid:
                ids["failed"] = tid
        if "streamed" in ids:
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
        for ev in slow or []:
            tid = a2a_summary(pb(ev)).get("id")
            if tid:
                ids["slow"] = tid
        await asyncio.sleep(0.3)
        if "slow" in ids:
            await step(
                "CancelTask (the working slow task)",
                lambda: plain.cancel_task(CancelTaskRequest(id=ids["slow"])),
            )
        if "streamed" in ids:
            await step(
                "CancelTask (the completed task: error)",
                lambda: plain.cancel_task(CancelTaskRequest(id=ids["streamed"])),
            )
        await step("ListTasks", lambda: plain.list_tasks(ListTasksRequest(page_size=10)))
        await step(
            "GetTask unknown id (error)",
            lambda: plain.get_task(GetTaskRequest(id="00000000-0000-0000-0000-000000000000")),
        )
        await plain.close()
        await streaming.close()
        await asyncio.sleep(0.2)
    exchanges = finish_http_log(http_log)
    ports = sorted({e["client_port"] for e in exchanges if "client_port" in e})
    messages: list[dict[str, Any]] = []
    for e in exchanges:
        body = e.get("response_body", {})
        tag = {"http_exchange": e["n"]}
        messages.extend(
            {"direction": "send", **tag, **m} for m in e["request_body"].get("jsonrpc", [])
        )
        messages.extend({"direction": "recv", **tag, **m} for m in body.get("jsonrpc", []))
        messages.extend(
            {"direction": "recv", **tag, "sse": True, **ev["jsonrpc"]}
            for ev in body.get("sse_events", [])
            if ev.get("jsonrpc")
        )
    for n, m in enumerate(messages, 1):
        m["n"] = n
    out: dict[str, Any] = {
        "transport": "A2A 1.0 "
        + ("JSON-RPC binding (POST /a2a/jsonrpc)" if binding == "JSONRPC" else "HTTP+JSON binding"),
        "steps": steps,
        "task_ids": ids,
        "http_exchanges": exchanges,
        "http_exchange_count": len(exchanges),
        "tcp_connections": len(ports),
        "client_ports": ports,
    }
    if binding == "JSONRPC":
        out["jsonrpc_messages"] = messages
        out["jsonrpc_message_count"] = len(messages)
        out["jsonrpc_messages_source"] = "the client's recorded HTTP bodies (httpx transport)"
    return out


async def client_a2a_jsonrpc(ctx: Ctx) -> dict[str, Any]:
    return await client_a2a(ctx, "JSONRPC")


async def client_a2a_rest(ctx: Ctx) -> dict[str, Any]:
    return await client_a2a(ctx, "HTTP+JSON")


# =========================================================================== the cases


@dataclass(frozen=True)
class Case:
    name: str
    port: int
    summary: str
    server_kind: str
    server: str
    client_software: str
    client: Callable[[Ctx], Coroutine[Any, Any, dict[str, Any]]]
    tls: bool = False


CASES: tuple[Case, ...] = (
    Case(
        "mcp_legacy_sse",
        18721,
        "MCP HTTP+SSE transport (2024-11-05): GET /sse (event: endpoint, then event: message "
        "frames), POSTs to /messages/?session_id=...: initialize, tools/list, tools/call "
        "(text, isError, progress notifications + log), ping",
        "mcp_sse",
        "mcp MCPServer.sse_app() (SseServerTransport) on uvicorn",
        "mcp sse_client + ClientSession",
        client_mcp_legacy_sse,
    ),
    Case(
        "mcp_streamable_sessions",
        18722,
        "MCP Streamable HTTP, stateful (Mcp-Session-Id), client keep-alive off so one session "
        "spans many TCP connections: initialize, GET stream, tools/list, tools/call with "
        "progress and log notifications, server-to-client sampling/createMessage, "
        "elicitation/create and roots/list answered by POST, a JSON-RPC error, DELETE",
        "mcp_http",
        "mcp MCPServer.streamable_http_app() (stateful) on uvicorn",
        "mcp streamable_http_client + ClientSession (httpx2, max_keepalive_connections=0)",
        client_mcp_sessions,
    ),
    Case(
        "mcp_stateless_2026",
        18723,
        "MCP protocol revision 2026-07-28, stateless Streamable HTTP (no initialize, no "
        "session): server/discover, tools/list, tools/call with Mcp-Method/Mcp-Name headers "
        "and io.modelcontextprotocol/ _meta keys, an input_required round, subscriptions/listen",
        "mcp_http",
        "mcp MCPServer.streamable_http_app() on uvicorn (its 2026-07-28 single-exchange path)",
        "mcp Client(mode='auto') over streamable_http_client",
        client_mcp_2026,
    ),
    Case(
        "a2a_v1_jsonrpc",
        18724,
        "A2A 1.0 JSON-RPC binding (a2a-sdk): agent card, SendMessage (message reply), "
        "SendStreamingMessage (SSE: task, status and artifact updates), a failing task, "
        "GetTask, CancelTask (working task; completed task: error), ListTasks, unknown task",
        "a2a_jsonrpc",
        "a2a-sdk DefaultRequestHandler + create_jsonrpc_routes on Starlette/uvicorn",
        "a2a-sdk ClientFactory (JSONRPC) over httpx",
        client_a2a_jsonrpc,
    ),
    Case(
        "a2a_v1_rest",
        18725,
        "A2A 1.0 HTTP+JSON (REST) binding (a2a-sdk): agent card, POST message:send, "
        "message:stream (SSE), a failing task, GET tasks/{id}, tasks/{id}:cancel, GET tasks, "
        "unknown task",
        "a2a_rest",
        "a2a-sdk DefaultRequestHandler + create_rest_routes on Starlette/uvicorn",
        "a2a-sdk ClientFactory (HTTP+JSON) over httpx",
        client_a2a_rest,
    ),
    Case(
        "mcp_streamable_tls",
        18726,
        "MCP Streamable HTTP (stateful) over TLS 1.3, self-signed certificate, client key log: "
        "initialize, GET stream, tools/list, tools/call, DELETE",
        "mcp_http",
        "mcp MCPServer.streamable_http_app() on uvicorn with TLS",
        "mcp streamable_http_client + ClientSession (httpx2, SSLContext with keylog_filename)",
        client_mcp_tls,
        tls=True,
    ),
)


def run_case(case: Case, tcpdump: str, certs: dict[str, Path], tmp: Path) -> dict[str, Any]:
    folder = CAPTURES_DIR / case.name
    folder.mkdir(parents=True, exist_ok=True)
    keylog = folder / "keys.log"
    keylog.unlink(missing_ok=True)
    spec: dict[str, Any] = {"kind": case.server_kind, "port": case.port}
    if case.tls:
        spec["certfile"] = str(certs["ecdsa"])
        spec["keyfile"] = str(certs["ecdsa_key"])
    spec_path = tmp / f"{case.name}.spec.json"
    log_path = tmp / f"{case.name}.server.log"
    server = genlib.start_serve_process(sys.executable, SCRIPT, spec, spec_path, log_path)
    ctx = Ctx(
        name=case.name,
        port=case.port,
        folder=folder,
        tls=case.tls,
        cafile=certs["ecdsa"] if case.tls else None,
        keylog=keylog if case.tls else None,
    )
    pcap = folder / "capture.pcap"
    dump = genlib.Tcpdump(tcpdump, pcap, case.port, buffer_kib=65536)
    client_rc = 0
    client_error = None
    result: dict[str, Any] = {}
    try:
        genlib.wait_listening(case.port, server)
        dump.start()
        t0 = time.time()
        try:
            result = asyncio.run(case.client(ctx))
        except Exception as exc:  # noqa: BLE001 - recorded in run.json, the case fails
            client_rc = 1
            client_error = "".join(traceback.format_exception(exc))[-3000:]
        t1 = time.time()
        counters = dump.stop(linger=0.7)
    finally:
        server_rc = genlib.stop_process(server)
    server_log = log_path.read_text(errors="replace")
    size = pcap.stat().st_size
    truth: dict[str, Any] = {
        "capture": case.name,
        "made_by": MADE_BY,
        "description": case.summary,
        "port": case.port,
        "base_url": ctx.base,
        "server": case.server,
        "client": case.client_software,
        "client_started": round(t0, 6),
        "client_ended": round(t1, 6),
        **result,
    }
    if case.tls:
        truth["server_certificate"] = "self-signed ECDSA P-256, SAN IP:127.0.0.1 (thrown away)"
    run = {
        "name": case.name,
        "port": case.port,
        "tls": case.tls,
        "client_rc": client_rc,
        "client_error": client_error,
        "server_rc": server_rc,
        "server_log_tail": server_log[-1500:] or None,
        "tcpdump": counters,
        "capture_complete": genlib.capture_complete(counters),
        "packets": genlib.pcap_packet_count(pcap),
        "pcap_bytes": size,
        "keylog_labels": genlib.keylog_labels(keylog) if case.tls else None,
        "software": software(),
    }
    genlib.write_json(folder / "truth.json", truth)
    genlib.write_json(folder / "run.json", run)
    genlib.log(
        f"{case.name}: {size:,} bytes, {run['packets']} packets, "
        f"{truth.get('http_exchange_count')} HTTP exchanges, "
        f"{truth.get('tcp_connections')} connections, tcpdump {counters}"
    )
    if client_error:
        genlib.log(f"{case.name}: client failed:\n{client_error}")
        raise genlib.ToolError(f"{case.name}: the client failed")
    if case.tls and not run["keylog_labels"]:
        raise genlib.ToolError(f"{case.name}: the client wrote no key log")
    if size > SIZE_LIMIT:
        genlib.log(f"warning: {case.name} is {size:,} bytes, over {SIZE_LIMIT:,}")
    return run


# =========================================================================== README


README_INTRO = """\
## MCP and A2A captures

Made by `scripts/make_agent_captures.py` (run it again to remake them, or `--only NAME`): real
SDKs on loopback, in the venv `scripts/.venv-agents` (python3.11; mcp 2.3.0, a2a-sdk 1.3.0 with
`http-server`, uvicorn). The server is the SDK's own app on uvicorn, the client the SDK's own
client; tcpdump on `lo` captured each case's port only, with nothing dropped. Each folder holds
`capture.pcap`, `truth.json`, `run.json` (port, tcpdump counters, exit codes, package
versions), and `keys.log` for the TLS case. `truth.json` is from the client's records only:
`jsonrpc_messages` are the JSON-RPC messages the SDK session wrote to and read from its
transport, in order (for A2A, the JSON-RPC bodies the client's httpx sent and read);
`http_exchanges` are the client's HTTP requests as its HTTP library (httpx2 for MCP, httpx for
A2A) saw them through a recording transport: method, path, headers, status, client port (and
whether the connection was new), and the JSON-RPC messages or SSE events of each body;
`steps` are the SDK calls and their outcomes; `client_events` the SDK callbacks (progress, log,
sampling, elicitation, roots).

| capture | size | what happened |
|---|---|---|
"""


README_NOTES = """
Things worth knowing (what the client recorded in these runs):
- `mcp_legacy_sse`: the transport is the 2024-11-05 one, but `initialize` negotiated
  `2025-11-25` (the SDK's newest handshake version). The GET `/sse` stream carries
  `event: endpoint` (data `/messages/?session_id=...`) and then every server message as
  `event: message`; each POST is answered `202` with an empty body. Two TCP connections: the GET
  stream, and one keep-alive connection for all the POSTs.
- `mcp_streamable_sessions`: every HTTP exchange on its own TCP connection (keep-alive off), one
  `Mcp-Session-Id` throughout (from the `initialize` response on). sampling/createMessage and
  elicitation/create arrive on the SSE response of the tools/call POST that caused them, the
  client's answers are separate POSTs (`202`); roots/list, which the server sent without a
  related request, arrives on the GET stream. JSON-RPC errors: logging/setLevel is answered
  -32601 (mcp 2.x's MCPServer has no handler for it) and prompts/get of an unknown prompt with
  code 0; an unknown tool is an `isError` result, not an error. The session ends with DELETE
  (`200`).
- `mcp_stateless_2026`: every POST carries `Mcp-Method` (and `Mcp-Name` for tools/call) and
  `MCP-Protocol-Version: 2026-07-28`, and every request's `_meta` the
  `io.modelcontextprotocol/` client keys; no `Mcp-Session-Id`, no GET. Responses are JSON unless
  the handler sends notifications first (the progress tool's response is SSE). `book_table`:
  the first tools/call returns `resultType: input_required` with `inputRequests`
  (elicitation/create) and `requestState`; the client's callback answers and the SDK retries
  with a new JSON-RPC id carrying `inputResponses` and `requestState`. subscriptions/listen (id
  `listen-1`) is an SSE response with notifications/subscriptions/acknowledged, then
  notifications/tools/list_changed while touch_tools runs on another connection; the session's
  closing notifications/cancelled for it is not sent over HTTP (the transport closes the stream).
- `a2a_v1_jsonrpc`, `a2a_v1_rest`: one keep-alive connection. JSON-RPC ids are UUID strings; the
  streaming response is SSE whose events (no `event:` field) are JSON-RPC responses with the
  request's id. Errors: JSON-RPC -32002 (task not cancelable) and -32001 (task not found); over
  REST `400` `FAILED_PRECONDITION` and `404` `NOT_FOUND` as `application/json`, successes as
  `application/a2a+json`.
- `mcp_streamable_tls`: TLS 1.3 (TLS_AES_256_GCM_SHA384, ALPN offered http/1.1, none
  negotiated), six connections although keep-alive is on: the SDK closes each SSE response
  once it has the JSON-RPC response, so the connection is not reused. `keys.log` holds the
  five TLS 1.3 labels per connection.
"""


def write_readme() -> None:
    rows = genlib.case_table_rows(CASES, CAPTURES_DIR)
    section = (
        f"{README_BEGIN}\n{README_INTRO}"
        + "\n".join(rows)
        + "\n"
        + README_NOTES
        + README_END
        + "\n"
    )
    path = CAPTURES_DIR / "README.md"
    text = path.read_text() if path.exists() else ""
    if README_BEGIN in text and README_END in text:
        head, _, rest = text.partition(README_BEGIN)
        _, _, tail = rest.partition(README_END)
        text = head + section.rstrip("\n") + tail
    else:
        text = text.rstrip("\n") + "\n\n" + section
    path.write_text(text)


# =========================================================================== main


def main() -> int:
    ap = genlib.case_arguments(__doc__, "capture", attempts_help="tries when a case fails")
    args = ap.parse_args()
    if args.serve:
        serve(json.loads(args.serve.read_text()))
        return 0
    if args.list:
        for case in CASES:
            print(f"{case.name:<24} port {case.port}  {case.summary}")
        return 0
    wanted = genlib.wanted_cases(ap, args.only, CASES, "capture")
    genlib.ensure_debian_commands("openssl")
    reexec_in_agents_venv()
    tcpdump = genlib.ensure_tcpdump()
    warnings.simplefilter("ignore")
    with tempfile.TemporaryDirectory(prefix="agentshark-agents-") as tmpdir:
        tmp = Path(tmpdir)
        certs = genlib.make_test_certs(tmp)
        failures = genlib.run_cases(
            CASES, wanted, args.attempts, lambda case: run_case(case, tcpdump, certs, tmp)
        )
    write_readme()
    return genlib.exit_status(failures)


if __name__ == "__main__":
    sys.exit(main())
