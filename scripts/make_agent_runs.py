# ruff: noqa: RUF001 - the seeds are Chinese: fullwidth punctuation is their text
"""Make loopback captures of whole agent runs in ``tests/data/runs/<name>/``.

    python3 scripts/make_agent_runs.py                      # every run
    python3 scripts/make_agent_runs.py --only seed004_shenzhen,parallel_tools_unanswered
    python3 scripts/make_agent_runs.py --list

One run is the weather loop of seed 000 §4 and seed 004 0x02, done by real software on
127.0.0.1 and captured by ``tcpdump -i lo`` on the run's ports only (nothing may be dropped):

* the agent: a small loop in this process (:func:`run_agent`). It sends the conversation and
  its tools with the official ``openai`` Python SDK (``AsyncOpenAI``, ``base_url`` on the model
  stub, plain HTTP), executes the tool calls the model asks for, appends the results and asks
  the model again until it answers with text;
* the model: a stub (a Starlette app on uvicorn, :func:`build_model_app`) that scripts its
  answers from the request: no tool result in the conversation, it asks for the case's tool
  call(s); a tool result present, it answers with the case's final text. It speaks Chat
  Completions (``/v1/chat/completions``, JSON and SSE with ``stream_options.include_usage``)
  and Responses (``/v1/responses``, JSON; response ids kept so that ``previous_response_id``
  is honoured, an unknown one answered 404 the way OpenAI does);
* the tool: a weather REST API (``GET /weather?city=...&date=...`` -> JSON, Starlette on
  uvicorn) called with httpx, or an MCP server (mcp 2.3.0 ``MCPServer``, Streamable HTTP)
  with a ``get_weather`` tool, called with the mcp SDK's ``ClientSession``.

Each server is a uvicorn process started by this script (``--serve``). The script runs in the
venv ``scripts/.venv-agents`` of ``scripts/make_agent_captures.py`` (made by it when absent),
with ``openai`` added when it cannot be imported, and re-runs itself there.

Each folder gets ``capture.pcap``, ``truth.json`` and ``run.json`` (ports, tcpdump counters,
exit codes, package versions). ``truth.json`` holds only what the agent itself recorded,
never read back from the pcap: the model requests in order (endpoint, model, messages or
input items sent, tool call ids asked for, response id, finish reason, usage, the agent's
clock), the tool executions (tool call id, transport, method and URL or MCP tool name,
arguments, result, start and end), the ``traceparent`` headers sent, every HTTP exchange as
the clients' HTTP libraries saw them, and the expected span tree in seed 004's terms.
``tests/data/runs/README.md`` is rewritten from the cases below.
"""

import asyncio
import hashlib
import json
import secrets
import subprocess
import sys
import tempfile
import time
import traceback
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH_DIR))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import genlib  # noqa: E402 - lives in bench/, shared with the other capture generators
import make_agent_captures as agents  # noqa: E402 - the venv and the recording transports

SCRIPT = Path(__file__).resolve()
RUNS_DIR = genlib.REPO_ROOT / "tests" / "data" / "runs"
OPENAI_REQUIREMENT = "openai==3.57.0"
MADE_BY = "scripts/make_agent_runs.py"
FAKE_KEY = "sk-example-not-a-real-key"
SIZE_LIMIT = 300_000


# =========================================================================== the cases


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class Case:
    name: str
    port: int  # the model stub; the tool server listens on port + 1
    summary: str
    api: str  # "chat" or "responses"
    tool_transport: str  # "http" or "mcp"
    system: str
    user: str
    asks: tuple[ToolCall, ...]  # the tool calls of the model's first answer
    final: str  # the model's answer once it has a tool result
    first_text: str | None = None  # text beside the tool calls in the first answer
    stream: bool = False
    traceparent: bool = False
    answer_only_first: bool = False  # the wrong agent: sends back one result of several
    model: str = "gpt-4.1"
    notes: tuple[str, ...] = field(default=())


SEED000_SYSTEM = "你是天气助手。"
SEED000_USER = "查上海天气"
SEED000_FINAL = "上海今天晴，气温 22℃。"
SHANGHAI = {"city": "Shanghai"}

CASES: tuple[Case, ...] = (
    Case(
        "seed000_chat_http_traceparent",
        18751,
        "seed 000 §4.1: Chat Completions (JSON), get_weather executed over HTTP, W3C "
        "traceparent on every request: one trace-id, a client span per request (§6.1.2)",
        "chat",
        "http",
        SEED000_SYSTEM,
        SEED000_USER,
        (ToolCall("call-weather-001", "get_weather", SHANGHAI),),
        SEED000_FINAL,
        traceparent=True,
    ),
    Case(
        "seed000_chat_mcp_stream",
        18761,
        "seed 000 §4.1 and §4.3: Chat Completions streamed (SSE, include_usage), get_weather "
        "executed through MCP tools/call (Streamable HTTP), no traceparent",
        "chat",
        "mcp",
        SEED000_SYSTEM,
        SEED000_USER,
        (ToolCall("call-stream-001", "get_weather", SHANGHAI),),
        SEED000_FINAL,
        stream=True,
    ),
    Case(
        "seed000_responses_http",
        18771,
        "seed 000 §4.2: Responses (JSON), the second request continues the first with "
        "previous_response_id and a function_call_output item, get_weather over HTTP",
        "responses",
        "http",
        SEED000_SYSTEM,
        SEED000_USER,
        (ToolCall("call-weather-002", "get_weather", SHANGHAI),),
        SEED000_FINAL,
    ),
    Case(
        "seed004_shenzhen",
        18781,
        "seed 004 0x02: Chat Completions (JSON); answer A is one message with text and a "
        "get_weather tool call, the tool (HTTP) says rain, answer C advises an umbrella",
        "chat",
        "http",
        "你是天气助手。",
        "深圳明天天气怎么样，需要带伞吗？",
        (ToolCall("call-shenzhen-001", "get_weather", {"city": "深圳", "date": "明天"}),),
        "预计有雨，建议带伞。",
        first_text="我先查询一下天气。",
    ),
    Case(
        "parallel_tools_unanswered",
        18791,
        "a wrong agent: the model asks for two tool calls in one answer, the agent executes "
        "both over HTTP but sends back only the first result; the stub answers anyway",
        "chat",
        "http",
        SEED000_SYSTEM,
        "上海和北京今天天气怎么样？",
        (
            ToolCall("call-weather-sh", "get_weather", {"city": "Shanghai"}),
            ToolCall("call-weather-bj", "get_weather", {"city": "Beijing"}),
        ),
        "上海今天晴，气温 22℃。",
        answer_only_first=True,
    ),
)

# The weather the tool servers know (seed 000 §4.1.4, seed 004 0x02 b).
WEATHER: dict[tuple[str, str | None], dict[str, Any]] = {
    ("Shanghai", None): {
        "city": "Shanghai",
        "temperature_c": 22,
        "weather": "晴",
        "observed_at": "2026-09-02T09:30:00+08:00",
    },
    ("Beijing", None): {
        "city": "Beijing",
        "temperature_c": 18,
        "weather": "多云",
        "observed_at": "2026-09-02T09:30:00+08:00",
    },
    ("深圳", "明天"): {"weather": "雨", "rain_probability": 0.9},
}

WEATHER_TOOL_SCHEMA = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "description": "城市名称"},
        "date": {"type": "string", "description": "日期，例如“明天”"},
    },
    "required": ["city"],
    "additionalProperties": False,
}


# =========================================================================== the venv


def ensure_venv() -> Path:
    """The agents venv's python, made by make_agent_captures.py, with openai added."""
    python = agents.ensure_agents_venv()
    probe = subprocess.run([str(python), "-c", "import openai"], capture_output=True, check=False)
    if probe.returncode != 0:
        genlib.log(f"adding {OPENAI_REQUIREMENT} to {agents.AGENTS_VENV}")
        genlib.pip_install(python, [OPENAI_REQUIREMENT])
        subprocess.run([str(python), "-c", "import openai"], check=True)
    return python


def reexec_in_venv() -> None:
    genlib.reexec_in_venv(SCRIPT, agents.AGENTS_VENV, ensure_venv)


def software() -> dict[str, str]:
    return {
        **genlib.package_versions(
            "openai", "mcp", "mcp-types", "httpx", "httpx2", "uvicorn", "starlette", "pydantic"
        ),
        "python": sys.version.split()[0],
    }


# =========================================================================== the model stub


def usage_numbers(body: bytes, output: str) -> tuple[int, int]:
    """Deterministic token counts: a quarter of the request body's bytes, and of the answer's."""
    return max(1, len(body) // 4), max(1, len(output.encode()) // 4)


def build_model_app(case: dict[str, Any]) -> Any:
    """The scripted model: Chat Completions (JSON and SSE) and Responses (JSON)."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response, StreamingResponse
    from starlette.routing import Route

    asks = [ToolCall(**t) for t in case["asks"]]
    short = hashlib.sha256(case["name"].encode()).hexdigest()[:8]
    counter = {"chat": 0, "responses": 0, "items": 0}
    stored: dict[str, dict[str, Any]] = {}
    created = 1_790_000_000

    def answer_for(has_result: bool) -> tuple[str | None, list[ToolCall]]:
        if has_result:
            return case["final"], []
        return case.get("first_text"), asks

    async def chat(request: Request) -> Response:
        raw = await request.body()
        body = json.loads(raw)
        has_result = any(m.get("role") == "tool" for m in body.get("messages", []))
        text, calls = answer_for(has_result)
        counter["chat"] += 1
        cid = f"chatcmpl-{short}{counter['chat']:03d}"
        finish = "tool_calls" if calls else "stop"
        out_text = (text or "") + "".join(json.dumps(c.arguments) for c in calls)
        prompt, completion = usage_numbers(raw, out_text)
        usage = {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }
        tool_calls: list[dict[str, Any]] = [
            {
                "id": c.id,
                "type": "function",
                "function": {
                    "name": c.name,
                    "arguments": json.dumps(c.arguments, ensure_ascii=False),
                },
            }
            for c in calls
        ]
        head = {"id": cid, "created": created + counter["chat"], "model": body["model"]}
        headers = {"x-request-id": f"req-{short}-chat-{counter['chat']}"}
        if not body.get("stream"):
            message: dict[str, Any] = {"role": "assistant", "content": text, "refusal": None}
            if tool_calls:
                message["tool_calls"] = tool_calls
            doc = {
                **head,
                "object": "chat.completion",
                "choices": [
                    {"index": 0, "message": message, "logprobs": None, "finish_reason": finish}
                ],
                "usage": usage,
                "system_fingerprint": "fp_agentshark",
            }
            return JSONResponse(doc, headers=headers)
        with_usage = bool((body.get("stream_options") or {}).get("include_usage"))

        def chunk(delta: dict[str, Any], reason: str | None = None) -> bytes:
            doc: dict[str, Any] = {
                **head,
                "object": "chat.completion.chunk",
                "system_fingerprint": "fp_agentshark",
                "choices": [
                    {"index": 0, "delta": delta, "logprobs": None, "finish_reason": reason}
                ],
            }
            if with_usage:
                doc["usage"] = None
            return b"data: " + json.dumps(doc, ensure_ascii=False).encode() + b"\n\n"

        async def events() -> Any:
            yield chunk({"role": "assistant", "content": "" if text else None, "refusal": None})
            for i in range(0, len(text or ""), 4):
                await asyncio.sleep(0.02)
                yield chunk({"content": (text or "")[i : i + 4]})
            for n, tc in enumerate(tool_calls):
                await asyncio.sleep(0.02)
                first = {**tc, "index": n, "function": {**tc["function"], "arguments": ""}}
                yield chunk({"tool_calls": [first]})
                args = tc["function"]["arguments"]
                half = len(args) // 2
                for piece in (args[:half], args[half:]):
                    await asyncio.sleep(0.02)
                    yield chunk({"tool_calls": [{"index": n, "function": {"arguments": piece}}]})
            yield chunk({}, finish)
            if with_usage:
                doc = {
                    **head,
                    "object": "chat.completion.chunk",
                    "system_fingerprint": "fp_agentshark",
                    "choices": [],
                    "usage": usage,
                }
                yield b"data: " + json.dumps(doc).encode() + b"\n\n"
            yield b"data: [DONE]\n\n"

        return StreamingResponse(events(), media_type="text/event-stream", headers=headers)

    def item_id(prefix: str) -> str:
        counter["items"] += 1
        return f"{prefix}_{short}{counter['items']:03d}"

    async def responses(request: Request) -> Response:
        raw = await request.body()
        body = json.loads(raw)
        if body.get("stream"):
            return JSONResponse(
                {"error": {"message": "this stub answers Responses as JSON only"}}, status_code=400
            )
        previous = body.get("previous_response_id")
        if previous is not None and previous not in stored:
            error = {
                "message": f"Previous response with id '{previous}' not found.",
                "type": "invalid_request_error",
                "param": "previous_response_id",
                "code": "previous_response_not_found",
            }
            return JSONResponse({"error": error}, status_code=404)
        items = body.get("input")
        items = items if isinstance(items, list) else []
        has_result = any(
            isinstance(i, dict) and i.get("type") == "function_call_output" for i in items
        )
        text, calls = answer_for(has_result)
        output: list[dict[str, Any]] = []
        if text:
            content = [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}]
            message = {"type": "message", "id": item_id("msg"), "status": "completed"}
            output.append({**message, "role": "assistant", "content": content})
        output.extend(
            {
                "type": "function_call",
                "id": item_id("fc"),
                "call_id": c.id,
                "name": c.name,
                "arguments": json.dumps(c.arguments, ensure_ascii=False),
                "status": "completed",
            }
            for c in calls
        )
        counter["responses"] += 1
        rid = f"resp_{short}{counter['responses']:03d}"
        out_text = (text or "") + "".join(json.dumps(c.arguments) for c in calls)
        prompt, completion = usage_numbers(raw, out_text)
        doc = {
            "id": rid,
            "object": "response",
            "created_at": created + counter["responses"],
            "status": "completed",
            "error": None,
            "incomplete_details": None,
            "instructions": body.get("instructions"),
            "max_output_tokens": body.get("max_output_tokens"),
            "model": body["model"],
            "output": output,
            "parallel_tool_calls": body.get("parallel_tool_calls", True),
            "previous_response_id": previous,
            "reasoning": {"effort": None, "summary": None},
            "store": body.get("store", True),
            "temperature": 1.0,
            "text": {"format": {"type": "text"}},
            "tool_choice": body.get("tool_choice", "auto"),
            "tools": body.get("tools", []),
            "top_p": 1.0,
            "truncation": "disabled",
            "usage": {
                "input_tokens": prompt,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": completion,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": prompt + completion,
            },
            "user": None,
            "metadata": {},
        }
        stored[rid] = doc
        headers = {"x-request-id": f"req-{short}-responses-{counter['responses']}"}
        return JSONResponse(doc, headers=headers)

    return Starlette(
        routes=[
            Route("/v1/chat/completions", chat, methods=["POST"]),
            Route("/v1/responses", responses, methods=["POST"]),
        ]
    )


# =========================================================================== the tools


def weather(city: str, date: str | None) -> dict[str, Any] | None:
    return WEATHER.get((city, date))


def build_weather_app() -> Any:
    """The weather REST API: ``GET /weather?city=...&date=...``."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    async def get_weather(request: Request) -> JSONResponse:
        city = request.query_params.get("city", "")
        found = weather(city, request.query_params.get("date"))
        if found is None:
            return JSONResponse({"error": f"no weather for {city}"}, status_code=404)
        return JSONResponse(found, headers={"cache-control": "no-store"})

    return Starlette(routes=[Route("/weather", get_weather, methods=["GET"])])


def build_mcp_app() -> Any:
    """An MCP server (mcp 2.x ``MCPServer``, Streamable HTTP at ``/mcp``) with get_weather."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    server = MCPServer("weather-mcp", version="1.0.0", log_level="WARNING")

    @server.tool()
    def get_weather(city: str, date: str | None = None) -> dict[str, Any]:
        """查询指定城市的天气"""
        found = weather(city, date)
        if found is None:
            raise ToolError(f"no weather for {city}")
        return found

    return server.streamable_http_app()


def serve(spec: dict[str, Any]) -> None:
    import uvicorn

    warnings.simplefilter("ignore")
    kind = spec["kind"]
    if kind == "model":
        app = build_model_app(spec["case"])
    elif kind == "weather":
        app = build_weather_app()
    elif kind == "mcp":
        app = build_mcp_app()
    else:
        raise SystemExit(f"unknown server kind {kind}")
    config = uvicorn.Config(
        app, host="127.0.0.1", port=spec["port"], log_level="warning", timeout_graceful_shutdown=2
    )
    uvicorn.Server(config).run()


# =========================================================================== the agent


def now() -> float:
    return round(time.time(), 6)


class Tracing:
    """W3C trace context as the agent propagates it (seed 000 §6.1.2): one trace-id for the
    run, an agent span, and a client span per outgoing request whose id is the request's
    ``parent-id``. Off, it sends nothing."""

    def __init__(self, on: bool) -> None:
        self.on = on
        self.trace_id = secrets.token_hex(16) if on else None
        self.agent_span_id = secrets.token_hex(8) if on else None
        self.sent: list[dict[str, Any]] = []

    def headers(self, hop: str) -> dict[str, str]:
        if not self.on:
            return {}
        span_id = secrets.token_hex(8)
        value = f"00-{self.trace_id}-{span_id}-01"
        self.sent.append(
            {
                "hop": hop,
                "traceparent": value,
                "trace_id": self.trace_id,
                "client_span_id": span_id,
                "client_span_parent_id": self.agent_span_id,
            }
        )
        return {"traceparent": value}


class WeatherHttp:
    """get_weather over the REST API, with httpx."""

    transport = "http"

    def __init__(self, http: Any, base: str) -> None:
        self.http = http
        self.base = base

    async def tools(self) -> list[dict[str, Any]]:
        return [
            {
                "name": "get_weather",
                "description": "查询指定城市的天气",
                "schema": WEATHER_TOOL_SCHEMA,
            }
        ]

    async def call(self, name: str, args: dict[str, Any], headers: dict[str, str]) -> Any:
        params = {k: v for k, v in args.items() if k in ("city", "date")}
        response = await self.http.get(f"{self.base}/weather", params=params, headers=headers)
        self.last = {
            "method": "GET",
            "url": str(response.request.url),
            "status": response.status_code,
        }
        response.raise_for_status()
        return response.json()


class WeatherMcp:
    """get_weather through an MCP ClientSession (tools/call)."""

    transport = "mcp"

    def __init__(self, session: Any) -> None:
        self.session = session

    async def tools(self) -> list[dict[str, Any]]:
        listed = await self.session.list_tools()
        return [
            {"name": t.name, "description": t.description, "schema": t.input_schema}
            for t in listed.tools
        ]

    async def call(self, name: str, args: dict[str, Any], headers: dict[str, str]) -> Any:
        assert not headers, "no traceparent through MCP in these runs"
        result = await self.session.call_tool(name, args)
        texts = [c.text for c in result.content if getattr(c, "type", None) == "text"]
        self.last = {
            "mcp_tool": name,
            "is_error": bool(result.is_error),
            "structured_content": result.structured_content,
            "content_text": texts,
        }
        return json.loads(texts[0]) if len(texts) == 1 else "\n".join(texts)


class Agent:
    """The loop: ask the model, run the tools it asks for, give back the results, again."""

    def __init__(self, case: Case, client: Any, tool: Any, tracing: Tracing) -> None:
        self.case = case
        self.client = client
        self.tool = tool
        self.tracing = tracing
        self.model_requests: list[dict[str, Any]] = []
        self.tool_executions: list[dict[str, Any]] = []

    async def run(self) -> str:
        tools = await self.tool.tools()
        if self.case.api == "chat":
            return await self.run_chat(tools)
        return await self.run_responses(tools)

    async def execute(self, call_id: str, name: str, arguments: str) -> str:
        args = json.loads(arguments)
        rec: dict[str, Any] = {
            "tool_call_id": call_id,
            "name": name,
            "transport": self.tool.transport,
            "arguments": args,
            "started": now(),
        }
        headers = self.tracing.headers(f"tool {call_id}")
        result = await self.tool.call(name, args, headers)
        rec["ended"] = now()
        rec.update(self.tool.last)
        rec["result"] = result
        self.tool_executions.append(rec)
        return json.dumps(result, ensure_ascii=False)

    # -- Chat Completions

    async def run_chat(self, tools: list[dict[str, Any]]) -> str:
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": self.case.system},
            {"role": "user", "content": self.case.user},
        ]
        definitions = [
            {
                "type": "function",
                "function": {
                    "name": t["name"],
                    "description": t["description"],
                    "parameters": t["schema"],
                },
            }
            for t in tools
        ]
        for _ in range(4):
            text, calls = await self.ask_chat(messages, definitions)
            if not calls:
                return text or ""
            assistant: dict[str, Any] = {"role": "assistant", "content": text}
            assistant["tool_calls"] = [
                {"id": c["id"], "type": "function", "function": c["function"]} for c in calls
            ]
            messages.append(assistant)
            results = [(c["id"], await self.execute(c["id"], **c["function"])) for c in calls]
            if self.case.answer_only_first:
                results = results[:1]  # the deliberate bug: one result for two tool calls
            messages.extend(
                {"role": "tool", "tool_call_id": cid, "content": content}
                for cid, content in results
            )
        raise RuntimeError("the model never answered")

    async def ask_chat(
        self, messages: list[dict[str, Any]], definitions: list[dict[str, Any]]
    ) -> tuple[str | None, list[dict[str, Any]]]:
        n = len(self.model_requests)
        rec: dict[str, Any] = {
            "call_index": n,
            "endpoint": "POST /v1/chat/completions",
            "model": self.case.model,
            "stream": self.case.stream,
            "message_count": len(messages),
            "messages": json.loads(json.dumps(messages)),
        }
        headers = self.tracing.headers(f"model {n}")
        kwargs: dict[str, Any] = {
            "model": self.case.model,
            "messages": messages,
            "tools": definitions,
            "tool_choice": "auto",
            "parallel_tool_calls": len(self.case.asks) > 1,
            "extra_headers": headers or None,
        }
        rec["started"] = now()
        if self.case.stream:
            text, calls = await self.stream_chat(kwargs, rec)
        else:
            completion = await self.client.chat.completions.create(**kwargs)
            rec["ended"] = now()
            choice = completion.choices[0]
            rec["response_id"] = completion.id
            rec["response_model"] = completion.model
            rec["finish_reason"] = choice.finish_reason
            rec["usage"] = completion.usage.model_dump() if completion.usage else None
            text = choice.message.content
            calls = [tc.model_dump() for tc in choice.message.tool_calls or []]
        rec["output_text"] = text
        rec["tool_calls_asked"] = [
            {"id": c["id"], "name": c["function"]["name"], "arguments": c["function"]["arguments"]}
            for c in calls
        ]
        self.model_requests.append(rec)
        return text, calls

    async def stream_chat(
        self, kwargs: dict[str, Any], rec: dict[str, Any]
    ) -> tuple[str | None, list[dict[str, Any]]]:
        """One streamed answer, put together from the SDK's chunks (seed 000 §4.3's keys)."""
        stream = await self.client.chat.completions.create(
            **kwargs, stream=True, stream_options={"include_usage": True}
        )
        text: list[str] = []
        calls: dict[int, dict[str, Any]] = {}
        chunks = 0
        async for chunk in stream:
            chunks += 1
            rec.setdefault("response_id", chunk.id)
            rec["response_model"] = chunk.model
            if chunk.usage is not None:
                rec["usage"] = chunk.usage.model_dump()
            for choice in chunk.choices:
                delta = choice.delta
                if delta.content:
                    rec.setdefault("first_token_at", now())
                    text.append(delta.content)
                for tc in delta.tool_calls or []:
                    rec.setdefault("first_token_at", now())
                    slot = calls.setdefault(
                        tc.index,
                        {"id": None, "type": "function", "function": {"name": "", "arguments": ""}},
                    )
                    if tc.id:
                        slot["id"] = tc.id
                    if tc.function and tc.function.name:
                        slot["function"]["name"] += tc.function.name
                    if tc.function and tc.function.arguments:
                        slot["function"]["arguments"] += tc.function.arguments
                if choice.finish_reason:
                    rec["finish_reason"] = choice.finish_reason
        rec["ended"] = now()
        rec["chunks"] = chunks
        return ("".join(text) or None), [calls[i] for i in sorted(calls)]

    # -- Responses

    async def run_responses(self, tools: list[dict[str, Any]]) -> str:
        definitions = [
            {
                "type": "function",
                "name": t["name"],
                "description": t["description"],
                "parameters": t["schema"],
                "strict": False,
            }
            for t in tools
        ]
        items: list[dict[str, Any]] = [
            {"role": "user", "content": [{"type": "input_text", "text": self.case.user}]}
        ]
        previous: str | None = None
        for _ in range(4):
            response = await self.ask_responses(items, definitions, previous)
            calls = [o for o in response.output if o.type == "function_call"]
            if not calls:
                return str(response.output_text)
            previous = response.id
            outputs = [
                (c.call_id, await self.execute(c.call_id, c.name, c.arguments)) for c in calls
            ]
            if self.case.answer_only_first:
                outputs = outputs[:1]
            items = [
                {"type": "function_call_output", "call_id": cid, "output": content}
                for cid, content in outputs
            ]
        raise RuntimeError("the model never answered")

    async def ask_responses(
        self, items: list[dict[str, Any]], definitions: list[dict[str, Any]], previous: str | None
    ) -> Any:
        n = len(self.model_requests)
        rec: dict[str, Any] = {
            "call_index": n,
            "endpoint": "POST /v1/responses",
            "model": self.case.model,
            "stream": False,
            "instructions": self.case.system,
            "previous_response_id": previous,
            "input_item_count": len(items),
            "input": json.loads(json.dumps(items)),
        }
        headers = self.tracing.headers(f"model {n}")
        kwargs: dict[str, Any] = {
            "model": self.case.model,
            "instructions": self.case.system,
            "input": items,
            "tools": definitions,
            "tool_choice": "auto",
            "parallel_tool_calls": False,
        }
        if previous is not None:
            kwargs["previous_response_id"] = previous
        if headers:
            kwargs["extra_headers"] = headers
        rec["started"] = now()
        response = await self.client.responses.create(**kwargs)
        rec["ended"] = now()
        rec["response_id"] = response.id
        rec["response_model"] = response.model
        rec["status"] = response.status
        rec["finish_reason"] = response.status  # Responses has no finish_reason: the status
        rec["usage"] = response.usage.model_dump() if response.usage else None
        rec["output_types"] = [o.type for o in response.output]
        rec["output_text"] = response.output_text or None
        rec["tool_calls_asked"] = [
            {"id": o.call_id, "name": o.name, "arguments": o.arguments}
            for o in response.output
            if o.type == "function_call"
        ]
        self.model_requests.append(rec)
        return response

    def expected_spans(self) -> list[dict[str, Any]]:
        """The span tree in seed 004's terms: each model call, then the tools it asked for."""
        executed = {t["tool_call_id"]: t["transport"] for t in self.tool_executions}
        out: list[dict[str, Any]] = []
        for rec in self.model_requests:
            out.append({"kind": "model", "call_index": rec["call_index"]})
            out.extend(
                {"kind": "tool", "tool_call_id": t["id"], "execution": executed.get(t["id"])}
                for t in rec["tool_calls_asked"]
            )
        return out


async def run_agent(case: Case, log: Any) -> dict[str, Any]:
    import httpx
    import openai

    tracing = Tracing(case.traceparent)
    base = f"http://127.0.0.1:{case.port}"
    tool_base = f"http://127.0.0.1:{case.port + 1}"
    model_http = httpx.AsyncClient(
        transport=agents.recording_transport(httpx, httpx.AsyncHTTPTransport(), log),
        timeout=30,
    )
    client = openai.AsyncOpenAI(
        base_url=f"{base}/v1", api_key=FAKE_KEY, http_client=model_http, max_retries=0
    )
    t0 = now()
    async with model_http:
        if case.tool_transport == "http":
            tool_http = httpx.AsyncClient(
                transport=agents.recording_transport(httpx, httpx.AsyncHTTPTransport(), log),
                timeout=30,
            )
            async with tool_http:
                agent = Agent(case, client, WeatherHttp(tool_http, tool_base), tracing)
                answer = await agent.run()
            mcp_messages: list[dict[str, Any]] = []
        else:
            agent, answer, mcp_messages = await run_with_mcp(case, client, tracing, log, tool_base)
    await asyncio.sleep(0.2)
    exchanges = agents.finish_http_log(log)
    return {
        "api": case.api,
        "tool_transport": case.tool_transport,
        "system": case.system,
        "user": case.user,
        "final_answer": answer,
        "agent_started": t0,
        "agent_ended": now(),
        "model_requests": agent.model_requests,
        "tool_executions": agent.tool_executions,
        "traceparent": {
            "trace_id": tracing.trace_id,
            "agent_span_id": tracing.agent_span_id,
            "sent": tracing.sent,
        },
        "expected_spans": agent.expected_spans(),
        "mcp_messages": mcp_messages,
        "http_exchanges": exchanges,
        "http_exchange_count": len(exchanges),
        "client_ports": sorted({e["client_port"] for e in exchanges if "client_port" in e}),
    }


async def run_with_mcp(
    case: Case, client: Any, tracing: Tracing, log: Any, tool_base: str
) -> tuple[Agent, str, list[dict[str, Any]]]:
    import httpx2
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    messages = agents.MessageLog()
    http = httpx2.AsyncClient(
        transport=agents.recording_transport(httpx2, httpx2.AsyncHTTPTransport(), log),
        timeout=httpx2.Timeout(30.0, read=300.0),
    )
    async with (
        http,
        streamable_http_client(f"{tool_base}/mcp", http_client=http) as (read, write),
        ClientSession(
            agents.RecordingRead(read, messages), agents.RecordingWrite(write, messages)
        ) as session,
    ):
        await session.initialize()
        agent = Agent(case, client, WeatherMcp(session), tracing)
        answer = await agent.run()
        await asyncio.sleep(0.2)
    summaries = [{k: v for k, v in m.items() if k != "message"} for m in messages.items]
    return agent, answer, summaries


# =========================================================================== one run


def start_server(spec: dict[str, Any], tmp: Path, label: str) -> tuple[Any, Path]:
    log_path = tmp / f"{label}.log"
    spec_path = tmp / f"{label}.spec.json"
    proc = genlib.start_serve_process(sys.executable, SCRIPT, spec, spec_path, log_path)
    return proc, log_path


def case_spec(case: Case) -> dict[str, Any]:
    return {
        "name": case.name,
        "asks": [{"id": t.id, "name": t.name, "arguments": t.arguments} for t in case.asks],
        "final": case.final,
        "first_text": case.first_text,
    }


def run_case(case: Case, tcpdump: str, tmp: Path) -> dict[str, Any]:
    folder = RUNS_DIR / case.name
    folder.mkdir(parents=True, exist_ok=True)
    tool_port = case.port + 1
    servers = [
        start_server({"kind": "model", "port": case.port, "case": case_spec(case)}, tmp, "model"),
        start_server(
            {"kind": "weather" if case.tool_transport == "http" else "mcp", "port": tool_port},
            tmp,
            "tool",
        ),
    ]
    pcap = folder / "capture.pcap"
    dump = genlib.Tcpdump(tcpdump, pcap, case.port, buffer_kib=65536)
    dump.argv[-1] = f"tcp port {case.port} or tcp port {tool_port}"
    log = agents.HttpLog()
    client_rc, client_error, result = 0, None, {}
    try:
        for (proc, _), port in zip(servers, (case.port, tool_port), strict=True):
            genlib.wait_listening(port, proc)
        dump.start()
        try:
            result = asyncio.run(run_agent(case, log))
        except Exception as exc:  # noqa: BLE001 - recorded in run.json, the case fails
            client_rc = 1
            client_error = "".join(traceback.format_exception(exc))[-3000:]
        counters = dump.stop(linger=0.7)
    finally:
        server_rcs = [genlib.stop_process(proc) for proc, _ in servers]
    size = pcap.stat().st_size
    truth = {
        "capture": case.name,
        "made_by": MADE_BY,
        "description": case.summary,
        "model_port": case.port,
        "tool_port": tool_port,
        "agent": "scripts/make_agent_runs.py Agent (openai AsyncOpenAI"
        + (", mcp ClientSession)" if case.tool_transport == "mcp" else ", httpx)"),
        **result,
    }
    run = {
        "name": case.name,
        "ports": [case.port, tool_port],
        "client_rc": client_rc,
        "client_error": client_error,
        "server_rcs": server_rcs,
        "server_log_tails": [p.read_text(errors="replace")[-1500:] or None for _, p in servers],
        "tcpdump": counters,
        "capture_complete": genlib.capture_complete(counters),
        "packets": genlib.pcap_packet_count(pcap),
        "pcap_bytes": size,
        "software": software(),
    }
    genlib.write_json(folder / "truth.json", truth)
    genlib.write_json(folder / "run.json", run)
    genlib.log(
        f"{case.name}: {size:,} bytes, {run['packets']} packets, "
        f"{truth.get('http_exchange_count')} HTTP exchanges, tcpdump {counters}"
    )
    if client_error:
        genlib.log(f"{case.name}: the agent failed:\n{client_error}")
        raise genlib.ToolError(f"{case.name}: the agent failed")
    if size > SIZE_LIMIT:
        genlib.log(f"warning: {case.name} is {size:,} bytes, over {SIZE_LIMIT:,}")
    return run


# =========================================================================== README


README_HEAD = """\
# Agent runs

Whole agent runs on loopback, made by `scripts/make_agent_runs.py` (run it again to remake
them, `--only NAME` for one): an agent loop using the official `openai` Python SDK against a
scripted model stub (Starlette on uvicorn, Chat Completions and Responses), a weather REST API
or an MCP server (mcp 2.3.0, Streamable HTTP) as the tool, tcpdump on `lo` capturing the run's
two ports with nothing dropped. Each folder holds `capture.pcap`, `truth.json` (the agent's own
records: the model requests with the messages or input items sent, the tool calls asked for,
response ids, finish reasons and usage; the tool executions with arguments, results and the
agent's clock; every `traceparent` sent; the HTTP exchanges its clients saw; and
`expected_spans`, the span tree in seed 004's terms) and `run.json` (ports, tcpdump counters,
exit codes, package versions). `tests/test_agent_runs.py` checks the traces agentshark builds
from each capture against `truth.json`.

| run | size | what happened |
|---|---|---|
"""

README_NOTES = """
The message sequences (Chat Completions counts the system message as message 0, as seed 004
does; agentshark's Chat family puts it in `system_instructions`, so its `input_messages` index
is one less):

- `seed000_chat_http_traceparent`: request 0 = [system, user "查上海天气"] -> tool call
  `call-weather-001` get_weather {"city": "Shanghai"} (finish `tool_calls`); `GET
  /weather?city=Shanghai` -> seed 000 §4.1.4's JSON; request 1 = [system, user, assistant
  (tool_calls), tool (call-weather-001)] -> "上海今天晴，气温 22℃。" (`stop`). Every request,
  model and tool, carries `traceparent: 00-T-S-01` with one trace-id T and its own client span
  id S (seed 000 §6.1.2); `truth.traceparent` lists them with the agent span id, their parent.
- `seed000_chat_mcp_stream`: the agent first opens an MCP session (initialize,
  notifications/initialized, the GET stream, tools/list: the tool definition sent to the model
  is the MCP tool's input schema), then the same two Chat requests as above, streamed
  (`stream_options.include_usage`: the last chunk has no choices and the usage), tool call
  `call-stream-001` run as MCP `tools/call get_weather`; the session ends with DELETE.
- `seed000_responses_http`: request 0 = `instructions` + one user input item -> a
  `function_call` item (`call-weather-002`); request 1 = `previous_response_id` of response 0 +
  one `function_call_output` item -> a `message` item with the final text. Finish reasons are
  the response `status` (`completed`).
- `seed004_shenzhen`: request 0 = [system "你是天气助手。", user "深圳明天天气怎么样，需要带伞吗？"]
  -> one assistant message with content "我先查询一下天气。" and tool call `call-shenzhen-001`
  get_weather {"city": "深圳", "date": "明天"}; `GET /weather?city=深圳&date=明天`
  (percent-encoded) -> {"weather": "雨", "rain_probability": 0.9}; request 1 = [system, user,
  assistant (text + tool call), tool] -> "预计有雨，建议带伞。".
- `parallel_tools_unanswered`: request 0 -> two tool calls in one answer (`call-weather-sh`
  Shanghai, `call-weather-bj` Beijing); the agent runs both (two GETs) but request 1 carries
  only the result of `call-weather-sh`: `call-weather-bj` is asked for and never answered. The
  stub answers anyway (a real provider would reject the history).
"""


def write_readme() -> None:
    rows = genlib.case_table_rows(CASES, RUNS_DIR)
    (RUNS_DIR / "README.md").write_text(README_HEAD + "\n".join(rows) + "\n" + README_NOTES)


# =========================================================================== main


def main() -> int:
    ap = genlib.case_arguments(__doc__, "run")
    args = ap.parse_args()
    if args.serve:
        serve(json.loads(args.serve.read_text()))
        return 0
    if args.list:
        for case in CASES:
            print(f"{case.name:<32} ports {case.port},{case.port + 1}  {case.summary}")
        return 0
    wanted = genlib.wanted_cases(ap, args.only, CASES, "run")
    reexec_in_venv()
    tcpdump = genlib.ensure_tcpdump()
    warnings.simplefilter("ignore")
    with tempfile.TemporaryDirectory(prefix="agentshark-runs-") as tmpdir:
        tmp = Path(tmpdir)
        failures = genlib.run_cases(
            CASES, wanted, args.attempts, lambda case: run_case(case, tcpdump, tmp)
        )
    write_readme()
    return genlib.exit_status(failures)


if __name__ == "__main__":
    sys.exit(main())
