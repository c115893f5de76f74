"""Make loopback captures of a real GraphQL server and client in ``tests/data/captures/<name>/``.

    python3 scripts/make_graphql_captures.py                 # every capture
    python3 scripts/make_graphql_captures.py --only graphql_agent_openai
    python3 scripts/make_graphql_captures.py --list

The server is a uvicorn process (``--serve``) running a Strawberry GraphQL ASGI app
(``strawberry.asgi.GraphQL``, batching on, GET allowed) at ``/graphql``. Strawberry has no
automatic persisted queries, so a small ASGI wrapper written here speaks Apollo's APQ
protocol in front of it (hash alone: the stored document, else ``PersistedQueryNotFound``;
hash and document: the document stored after its SHA-256 is checked) and hands the request to
Strawberry with the document filled in. The same process serves a model stub at
``/v1/chat/completions`` (an OpenAI Chat Completions look-alike: a first answer that asks for
the ``get_weather`` tool, a second that answers from the tool result). The clients are httpx
and the ``openai`` SDK in this process; ``tcpdump -i lo`` writes the case's port only.

The cases:

* ``graphql_strawberry``: httpx against Strawberry: a query with variables (asking for
  ``application/graphql-response+json``), a mutation, a GET query, a partial result (a
  resolver that raises: ``data`` and ``errors`` with a path), a validation error (errors
  only), a document of two operations selected by ``operationName``, a batch of two, and the
  APQ round: hash alone (not found), hash and document, hash alone again (found), over POST
  and GET.
* ``graphql_agent_openai``: an agent run: the ``openai`` SDK asks the model stub, which calls
  ``get_weather(city)``; the agent runs the tool as a GraphQL query whose variables are the
  call's arguments, sends the result back, and the stub answers.

Each folder gets ``capture.pcap``, ``truth.json`` (from the clients' own records only: each
HTTP exchange as httpx saw it through its event hooks, the request body as sent and the
response JSON as parsed, and for the agent the SDK's response objects; never read back from
the pcap) and ``run.json`` (port, tcpdump counters, package versions). The script makes its
venv, ``scripts/.venv-graphql`` (strawberry-graphql, uvicorn, httpx, openai), and re-runs
itself in it.
"""

import hashlib
import json
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH_DIR))

import genlib  # noqa: E402 - lives in bench/, shared with the other capture generators

SCRIPT = Path(__file__).resolve()
CAPTURES_DIR = genlib.REPO_ROOT / "tests" / "data" / "captures"
VENV = SCRIPT.parent / ".venv-graphql"
REQUIREMENTS = (
    "strawberry-graphql==0.341.2",
    "uvicorn==0.54.0",
    "httpx==0.28.1",
    "openai==3.57.0",
    "starlette==1.10.0",
)
MADE_BY = "scripts/make_graphql_captures.py"
FAKE_KEY = "sk-proj-example-not-a-real-key-graphql00000"
MODEL = "gpt-stub-graphql"


@dataclass(frozen=True)
class Case:
    name: str
    port: int
    summary: str


CASES = (
    Case(
        "graphql_strawberry",
        18821,
        "httpx -> Strawberry: query, mutation, GET, partial result, validation error, "
        "operationName, batch, persisted queries (POST and GET)",
    ),
    Case(
        "graphql_agent_openai",
        18822,
        "openai SDK -> model stub asks get_weather; the agent runs it as a GraphQL query",
    ),
)

WEATHER = {
    "Paris": (18.5, "light rain"),
    "Lisbon": (24.0, "sunny"),
    "Oslo": (9.0, "cloudy"),
}
WEATHER_QUERY = (
    "query Weather($city: String!) { weather(city: $city) { city temperatureC conditions } }"
)


# =========================================================================== --serve


def build_app() -> Any:
    import strawberry  # type: ignore[import-not-found, unused-ignore]
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route
    from strawberry.asgi import GraphQL  # type: ignore[import-not-found, unused-ignore]
    from strawberry.schema.config import (  # type: ignore[import-not-found, unused-ignore]
        StrawberryConfig,
    )

    @strawberry.type
    class Weather:
        city: str
        temperature_c: float
        conditions: str

    @strawberry.type
    class Note:
        id: str
        text: str

    notes: list[Note] = []
    make_weather: Any = Weather  # strawberry.type makes the dataclass __init__
    make_note: Any = Note

    def resolve_weather(city: str) -> Weather:
        if city not in WEATHER:
            raise ValueError(f"no station for {city}")
        t, c = WEATHER[city]
        return make_weather(city=city, temperature_c=t, conditions=c)  # type: ignore[no-any-return, unused-ignore]

    def resolve_alerts(city: str) -> list[str] | None:
        raise RuntimeError(f"the alert service for {city} is down")

    def all_notes() -> list[Note]:
        return notes

    def resolve_add_note(text: str) -> Note:
        note: Note = make_note(id=str(len(notes) + 1), text=text)
        notes.append(note)
        return note

    @strawberry.type
    class Query:
        weather: Weather = strawberry.field(resolver=resolve_weather)
        alerts: list[str] | None = strawberry.field(resolver=resolve_alerts)
        notes: list[Note] = strawberry.field(resolver=all_notes)

    @strawberry.type
    class Mutation:
        add_note: Note = strawberry.mutation(resolver=resolve_add_note)

    schema = strawberry.Schema(
        query=Query,
        mutation=Mutation,
        config=StrawberryConfig(batching_config={"max_operations": 10}),
    )
    graphql_app = GraphQL(schema, graphql_ide=None, allow_queries_via_get=True)
    apq = PersistedQueries(graphql_app)

    async def chat(request: Request) -> JSONResponse:
        body = await request.json()
        return JSONResponse(stub_answer(body))

    return Starlette(
        routes=[
            Route("/v1/chat/completions", chat, methods=["POST"]),
            Route("/graphql", apq, methods=["GET", "POST"]),
        ]
    )


class PersistedQueries:
    """Apollo's automatic persisted queries in front of an ASGI GraphQL app: a request with
    ``extensions.persistedQuery.sha256Hash`` and no ``query`` gets the stored document (else
    ``PersistedQueryNotFound``); with a ``query`` whose SHA-256 is the hash, the document is
    stored. POST JSON bodies and GET parameters."""

    def __init__(self, app: Callable[..., Awaitable[None]]) -> None:
        self.app = app
        self.store: dict[str, str] = {}

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        from urllib.parse import parse_qs, urlencode

        if scope["method"] == "GET":
            params = {k: v[0] for k, v in parse_qs(scope["query_string"].decode()).items()}
            filled = self._fill(params, json.loads(params.get("extensions") or "null"))
            if isinstance(filled, dict) and "errors" in filled:
                await _json_response(send, 200, filled)
                return
            scope = {**scope, "query_string": urlencode(params).encode()}
            await self.app(scope, receive, send)
            return
        body = bytearray()
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        data = json.loads(body) if body else None
        if isinstance(data, dict):
            filled = self._fill(data, data.get("extensions"))
            if isinstance(filled, dict) and "errors" in filled:
                await _json_response(send, 200, filled)
                return
            body = bytearray(json.dumps(data).encode())
        sent = False

        async def replay() -> dict[str, Any]:
            nonlocal sent
            if sent:
                return {"type": "http.disconnect"}
            sent = True
            return {"type": "http.request", "body": bytes(body), "more_body": False}

        headers = [(k, v) for k, v in scope["headers"] if k != b"content-length"]
        headers.append((b"content-length", str(len(body)).encode()))
        await self.app({**scope, "headers": headers}, replay, send)

    def _fill(self, data: dict[str, Any], extensions: Any) -> dict[str, Any] | None:
        pq = extensions.get("persistedQuery") if isinstance(extensions, dict) else None
        if not isinstance(pq, dict):
            return None
        sha = pq.get("sha256Hash")
        query = data.get("query")
        if query:
            if hashlib.sha256(query.encode()).hexdigest() != sha:
                return _apq_error("provided sha does not match query", "BAD_USER_INPUT")
            self.store[sha] = query
            return None
        if sha not in self.store:
            return _apq_error("PersistedQueryNotFound", "PERSISTED_QUERY_NOT_FOUND")
        data["query"] = self.store[sha]
        return None


def _apq_error(message: str, code: str) -> dict[str, Any]:
    return {"errors": [{"message": message, "extensions": {"code": code}}]}


async def _json_response(send: Any, status: int, doc: dict[str, Any]) -> None:
    body = json.dumps(doc).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def stub_answer(body: dict[str, Any]) -> dict[str, Any]:
    """The model stub: a tool call for the first turn, an answer from the tool result after."""
    messages = body.get("messages") or []
    tool_results = [m for m in messages if m.get("role") == "tool"]
    created = 1_780_000_000
    usage = {"prompt_tokens": 61, "completion_tokens": 17, "total_tokens": 78}
    if not tool_results:
        message: dict[str, Any] = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_gql_weather_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Lisbon"}'},
                }
            ],
        }
        finish, rid = "tool_calls", "chatcmpl-gql-0001"
    else:
        weather = json.loads(tool_results[-1]["content"])["weather"]
        text = f"It is {weather['temperatureC']} °C and {weather['conditions']} in Lisbon."
        message = {"role": "assistant", "content": text}
        finish, rid = "stop", "chatcmpl-gql-0002"
        usage = {"prompt_tokens": 104, "completion_tokens": 14, "total_tokens": 118}
    return {
        "id": rid,
        "object": "chat.completion",
        "created": created,
        "model": MODEL,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": usage,
    }


def serve(spec: dict[str, Any]) -> None:
    import uvicorn

    config = uvicorn.Config(
        build_app(),
        host="127.0.0.1",
        port=spec["port"],
        log_level="warning",
        timeout_graceful_shutdown=2,
    )
    uvicorn.Server(config).run()


# =========================================================================== clients


class Recorder:
    """Every HTTP exchange as httpx saw it (event hooks): method, path and query, request
    headers of interest, the body as sent; status, content type, the JSON parsed."""

    def __init__(self) -> None:
        self.exchanges: list[dict[str, Any]] = []

    def on_request(self, request: Any) -> None:
        body = request.content
        self.exchanges.append(
            {
                "method": request.method,
                "path": request.url.path,
                "query": request.url.query.decode() if request.url.query else "",
                "content_type": request.headers.get("content-type"),
                "accept": request.headers.get("accept"),
                "request_json": json.loads(body) if body else None,
                "started": time.time(),
            }
        )

    def on_response(self, response: Any) -> None:
        response.read()
        record = self.exchanges[-1]
        record["status"] = response.status_code
        record["response_content_type"] = response.headers.get("content-type")
        try:
            record["response_json"] = response.json()
        except ValueError:
            record["response_text"] = response.text
        record["client_port"] = _client_port(response)


def _client_port(response: Any) -> int | None:
    stream = response.extensions.get("network_stream")
    info = stream.get_extra_info("client_addr") if stream is not None else None
    return int(info[1]) if info else None


def _http_client(recorder: Recorder, port: int) -> Any:
    import httpx

    return httpx.Client(
        base_url=f"http://127.0.0.1:{port}",
        event_hooks={"request": [recorder.on_request], "response": [recorder.on_response]},
        timeout=20,
    )


def strawberry_client(port: int) -> dict[str, Any]:
    recorder = Recorder()
    sha = hashlib.sha256(WEATHER_QUERY.encode()).hexdigest()
    apq = {"persistedQuery": {"version": 1, "sha256Hash": sha}}
    with _http_client(recorder, port) as http:
        http.post(
            "/graphql",
            json={
                "query": WEATHER_QUERY,
                "operationName": "Weather",
                "variables": {"city": "Paris"},
            },
            headers={"accept": "application/graphql-response+json, application/json"},
        )
        http.post(
            "/graphql",
            json={
                "query": "mutation AddNote($text: String!) { addNote(text: $text) { id text } }",
                "variables": {"text": "buy an umbrella"},
            },
        )
        http.get("/graphql", params={"query": "{ notes { id text } }"})
        http.post(
            "/graphql",
            json={
                "query": "query Partial($city: String!) { weather(city: $city) { city } "
                "alerts(city: $city) }",
                "variables": {"city": "Oslo"},
            },
        )
        http.post("/graphql", json={"query": 'query Bad { weather(city: "Oslo") { humidity } }'})
        http.post(
            "/graphql",
            json={
                "query": 'query A { notes { id } } query B { weather(city: "Lisbon") { city } }',
                "operationName": "B",
            },
        )
        http.post(
            "/graphql",
            json=[
                {"query": WEATHER_QUERY, "variables": {"city": "Oslo"}},
                {"query": "query Notes { notes { text } }"},
            ],
        )
        http.post("/graphql", json={"variables": {"city": "Oslo"}, "extensions": apq})
        http.post(
            "/graphql",
            json={"query": WEATHER_QUERY, "variables": {"city": "Oslo"}, "extensions": apq},
        )
        http.post("/graphql", json={"variables": {"city": "Lisbon"}, "extensions": apq})
        http.get(
            "/graphql",
            params={
                "variables": json.dumps({"city": "Paris"}),
                "extensions": json.dumps(apq),
            },
        )
    return {"exchanges": recorder.exchanges}


def agent_client(port: int) -> dict[str, Any]:
    import httpx
    import openai

    recorder = Recorder()
    hooks = {"request": [recorder.on_request], "response": [recorder.on_response]}
    model_http = httpx.Client(event_hooks=hooks, timeout=20)
    client = openai.OpenAI(
        api_key=FAKE_KEY, base_url=f"http://127.0.0.1:{port}/v1", http_client=model_http
    )
    tools = [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "The current weather in a city",
                "parameters": {
                    "type": "object",
                    "properties": {"city": {"type": "string"}},
                    "required": ["city"],
                },
            },
        }
    ]
    messages: list[dict[str, Any]] = [{"role": "user", "content": "What is the weather in Lisbon?"}]
    sdk: list[dict[str, Any]] = []
    chat: Any = client.chat.completions  # plain dicts for messages and tools
    first = chat.create(model=MODEL, messages=messages, tools=tools)
    sdk.append(first.model_dump())
    call = first.choices[0].message.tool_calls[0]
    arguments = json.loads(call.function.arguments)
    with _http_client(recorder, port) as http:  # the tool: a GraphQL query
        response = http.post("/graphql", json={"query": WEATHER_QUERY, "variables": arguments})
    result = response.json()["data"]
    messages.append(first.choices[0].message.model_dump(exclude_none=True))
    messages.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)})
    second = chat.create(model=MODEL, messages=messages, tools=tools)
    sdk.append(second.model_dump())
    model_http.close()
    return {
        "exchanges": recorder.exchanges,
        "sdk_responses": sdk,
        "tool_call": {"id": call.id, "name": call.function.name, "arguments": arguments},
        "tool_result": result,
    }


CLIENTS = {"graphql_strawberry": strawberry_client, "graphql_agent_openai": agent_client}


# =========================================================================== running


def run_case(case: Case, tcpdump: str, tmp: Path) -> dict[str, Any]:
    out = CAPTURES_DIR / case.name
    out.mkdir(parents=True, exist_ok=True)
    server = genlib.start_serve_process(
        sys.executable,
        SCRIPT,
        {"port": case.port},
        tmp / f"{case.name}.json",
        tmp / f"{case.name}.log",
    )
    capture = genlib.Tcpdump(tcpdump, out / "capture.pcap", case.port)
    try:
        genlib.wait_listening(case.port, server)
        capture.start()
        truth = CLIENTS[case.name](case.port)
        counters = capture.stop()
    finally:
        code = genlib.stop_process(server)
    truth = {"made_by": MADE_BY, "case": case.name, **truth}
    genlib.write_json(out / "truth.json", truth)
    run = {
        "made_by": MADE_BY,
        "port": case.port,
        "tcpdump": counters,
        "capture_complete": genlib.capture_complete(counters),
        "server_exit": code,
        "packets": genlib.pcap_packet_count(out / "capture.pcap"),
        "pcap_bytes": (out / "capture.pcap").stat().st_size,
        "versions": genlib.package_versions("strawberry-graphql", "httpx", "openai", "uvicorn"),
        "tcpdump_version": genlib.tcpdump_version(tcpdump),
    }
    genlib.write_json(out / "run.json", run)
    return run


def main() -> int:
    ap = genlib.case_arguments(__doc__, "capture")
    args = ap.parse_args()
    if args.serve:
        serve(json.loads(args.serve.read_text()))
        return 0
    if args.list:
        for case in CASES:
            print(f"{case.name:<24} port {case.port}  {case.summary}")
        return 0
    wanted = genlib.wanted_cases(ap, args.only, CASES, "capture")
    genlib.reexec_in_venv(SCRIPT, VENV, lambda: genlib.ensure_venv(VENV, REQUIREMENTS))
    tcpdump = genlib.ensure_tcpdump()
    with tempfile.TemporaryDirectory(prefix="agentshark-graphql-") as tmpdir:
        failures = genlib.run_cases(
            CASES, wanted, args.attempts, lambda case: run_case(case, tcpdump, Path(tmpdir))
        )
    return genlib.exit_status(failures)


if __name__ == "__main__":
    sys.exit(main())
