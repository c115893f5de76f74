"""Make loopback captures of retrieval services and their official clients in
``tests/data/captures/<name>/``.

    python3 scripts/make_retrieval_captures.py                 # every capture
    python3 scripts/make_retrieval_captures.py --only retrieval_chroma
    python3 scripts/make_retrieval_captures.py --list

The cases:

* ``retrieval_chroma``: the real Chroma server (``chroma run --path DIR --host 127.0.0.1
  --port P``, from the ``chromadb`` package) driven by ``chromadb.HttpClient``: a collection
  made, documents added with their embeddings, a query with a ``where`` filter, a query of two
  vectors, and a query of a collection deleted meanwhile (Chroma's NotFound error).
* ``retrieval_stub_clients``: services with no local server, each driven by its official
  Python client against a stub on 127.0.0.1 that speaks the service's REST schema as its API
  reference gives it (a stub server, real clients): ``qdrant-client`` (``query_points``,
  ``search_batch`` through ``query_batch_points``, a missing collection), ``pinecone``
  (``Index(host=...).query``), ``cohere`` (``ClientV2.rerank``), ``tavily-python``
  (``TavilyClient.search``) and ``elasticsearch`` (``search`` with ``knn``); ``retrieval_mem0``
  likewise: ``mem0ai``'s ``MemoryClient`` (``add``, ``search``, ``get_all``, ``delete``; its
  telemetry off). The stub ranks a
  small corpus of fixed vectors by cosine similarity, so its answers follow the queries.
* ``retrieval_agent_chroma``: an agent run: the ``openai`` SDK asks a model stub, which calls
  ``search_docs(query)``; the agent runs the tool as a Chroma query with ``query_texts``, the
  collection's embedding function calling the stub's ``/v1/embeddings`` through the same SDK,
  so the capture holds the embeddings call and the Chroma query whose vector it returned;
  the result goes back to the stub, which answers from it. Two ports: the stub's and Chroma's.

Each folder gets ``capture.pcap``, ``truth.json`` (from the clients' own parsed results only:
Chroma's ``QueryResult``, qdrant-client's ``ScoredPoint``\\ s, Pinecone's matches, Cohere's
rerank results, Tavily's dict, Elasticsearch's hits, the SDK's response objects; never read
back from the pcap) and ``run.json`` (ports, tcpdump counters, package versions). The script
makes its venv, ``scripts/.venv-retrieval``, and re-runs itself in it.
"""

import base64
import json
import math
import os
import struct
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from starlette.responses import JSONResponse

BENCH_DIR = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH_DIR))

import genlib  # noqa: E402 - lives in bench/, shared with the other capture generators

SCRIPT = Path(__file__).resolve()
CAPTURES_DIR = genlib.REPO_ROOT / "tests" / "data" / "captures"
VENV = SCRIPT.parent / ".venv-retrieval"
REQUIREMENTS = (
    "chromadb==1.5.9",
    "qdrant-client==1.20.0",
    "cohere==7.3.1",
    "tavily-python==0.8.5",
    "elasticsearch==9.5.1",
    "openai==3.57.0",
    "uvicorn==0.54.0",
    "starlette==1.10.0",
    "httpx==0.28.1",
    "pinecone==10.2.0",
    "mem0ai==2.2.1",
)
MADE_BY = "scripts/make_retrieval_captures.py"
FAKE_KEY = "sk-proj-example-not-a-real-key-retrieval0"
MODEL = "gpt-stub-retrieval"
EMBED_MODEL = "text-embedding-stub"


@dataclass(frozen=True)
class Case:
    name: str
    port: int
    summary: str
    chroma_port: int | None = None


CASES = (
    Case("retrieval_chroma", 18831, "chromadb.HttpClient -> the Chroma server", 18831),
    Case(
        "retrieval_stub_clients",
        18832,
        "qdrant-client, pinecone, cohere, tavily-python, elasticsearch -> a REST stub",
    ),
    Case(
        "retrieval_agent_chroma",
        18833,
        "openai SDK -> model stub asks search_docs; the agent queries Chroma (embeddings "
        "through the stub)",
        18834,
    ),
    Case("retrieval_mem0", 18835, "mem0ai MemoryClient (add, search, get_all, delete) -> a stub"),
)

# The corpus every store holds: id -> (text, metadata).
DOCS = {
    "d1": ("Green tea is steamed or pan-fired soon after picking.", {"topic": "tea"}),
    "d2": ("Black tea is fully oxidised before drying.", {"topic": "tea"}),
    "d3": (
        "Espresso is coffee brewed by forcing hot water through fine grounds.",
        {"topic": "coffee"},
    ),
    "d4": ("Matcha is green tea ground into a fine powder.", {"topic": "tea"}),
}


def embed(text: str) -> list[float]:
    """The stub's embedding: 8 buckets of letter counts, normalized (deterministic)."""
    v = [0.0] * 8
    for ch in text.lower():
        if ch.isalpha():
            v[(ord(ch) - 97) % 8] += 1.0
    norm = math.sqrt(sum(x * x for x in v)) or 1.0
    return [x / norm for x in v]


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def ranked(vector: list[float], k: int) -> list[tuple[str, float]]:
    scores = [(doc_id, round(cosine(vector, embed(text)), 6)) for doc_id, (text, _) in DOCS.items()]
    return sorted(scores, key=lambda s: -s[1])[:k]


# =========================================================================== --serve


def build_app() -> Any:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    async def root(request: Request) -> JSONResponse:
        if "elastic" in (request.headers.get("user-agent") or "").lower():
            return es_json(
                {
                    "name": "stub",
                    "cluster_name": "stub",
                    "version": {"number": "9.1.0", "build_flavor": "default"},
                    "tagline": "You Know, for Search",
                }
            )
        return JSONResponse({"title": "qdrant - vector search engine", "version": "1.15.0"})

    async def qdrant_exists(request: Request) -> JSONResponse:
        name = request.path_params["name"]
        return JSONResponse({"result": {"exists": name == "notes"}, "status": "ok", "time": 0.0})

    async def qdrant_points(request: Request) -> JSONResponse:
        name, op = request.path_params["name"], request.path_params["op"]
        body = await request.json()
        if name != "notes":
            return JSONResponse(
                {
                    "status": {"error": f"Not found: Collection `{name}` doesn't exist!"},
                    "time": 0.0,
                },
                status_code=404,
            )
        if op.endswith("/batch"):
            result = [qdrant_result(s, op.startswith("query")) for s in body["searches"]]
        else:
            result = qdrant_result(body, op == "query")
        return JSONResponse({"result": result, "status": "ok", "time": 0.0004})

    async def pinecone_query(request: Request) -> JSONResponse:
        body = await request.json()
        matches = [
            {
                "id": doc_id,
                "score": score,
                "values": [],
                "metadata": {**DOCS[doc_id][1], "text": DOCS[doc_id][0]},
            }
            for doc_id, score in ranked(body["vector"], body["topK"])
            if _passes(doc_id, body.get("filter"))
        ]
        return JSONResponse(
            {
                "results": [],
                "matches": matches,
                "namespace": body.get("namespace", ""),
                "usage": {"readUnits": 5},
            }
        )

    async def cohere_rerank(request: Request) -> JSONResponse:
        body = await request.json()
        q = embed(body["query"])
        scores = [(i, round(cosine(q, embed(d)), 6)) for i, d in enumerate(body["documents"])]
        top = sorted(scores, key=lambda s: -s[1])[: body.get("top_n") or len(scores)]
        return JSONResponse(
            {
                "id": "rerank-stub-1",
                "results": [{"index": i, "relevance_score": s} for i, s in top],
                "meta": {"api_version": {"version": "2"}, "billed_units": {"search_units": 1}},
            }
        )

    async def search(request: Request) -> JSONResponse:
        body = await request.json()  # Tavily's /search
        results = [
            {
                "url": f"https://docs.example/{doc_id}",
                "title": doc_id,
                "content": DOCS[doc_id][0],
                "score": score,
                "raw_content": None,
            }
            for doc_id, score in ranked(embed(body["query"]), body.get("max_results", 5))
        ]
        return JSONResponse(
            {
                "query": body["query"],
                "follow_up_questions": None,
                "answer": None,
                "images": [],
                "results": results,
                "response_time": 0.42,
                "request_id": "tavily-stub-1",
            }
        )

    async def es_search(request: Request) -> JSONResponse:
        body = await request.json()
        knn = body["knn"]
        hits = [
            {
                "_index": request.path_params["index"],
                "_id": doc_id,
                "_score": score,
                "_source": {"text": DOCS[doc_id][0], **DOCS[doc_id][1]},
            }
            for doc_id, score in ranked(knn["query_vector"], knn["k"])
        ]
        return es_json(
            {
                "took": 3,
                "timed_out": False,
                "_shards": {"total": 1, "successful": 1, "skipped": 0, "failed": 0},
                "hits": {
                    "total": {"value": len(hits), "relation": "eq"},
                    "max_score": hits[0]["_score"] if hits else None,
                    "hits": hits,
                },
            }
        )

    async def chat(request: Request) -> JSONResponse:
        return JSONResponse(stub_answer(await request.json()))

    async def embeddings(request: Request) -> JSONResponse:
        body = await request.json()
        inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
        data = []
        for n, text in enumerate(inputs):
            vector = embed(text)
            value: Any = vector
            if body.get("encoding_format") == "base64":
                value = base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()
            data.append({"object": "embedding", "index": n, "embedding": value})
        tokens = sum(len(t.split()) for t in inputs)
        return JSONResponse(
            {
                "object": "list",
                "data": data,
                "model": EMBED_MODEL,
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            }
        )

    memories: dict[str, dict[str, Any]] = {}

    async def mem0_ping(request: Request) -> JSONResponse:
        return JSONResponse(
            {
                "status": "ok",
                "org_id": "org-stub",
                "project_id": "proj-stub",
                "user_email": "stub@example.invalid",
            }
        )

    async def mem0_add(request: Request) -> JSONResponse:
        body = await request.json()  # the records mem0 would extract: one per user message
        user = body.get("user_id")
        results = []
        for message in body["messages"]:
            if message.get("role") != "user":
                continue
            mid = f"mem-{len(memories) + 1}"
            memories[mid] = {
                "id": mid,
                "memory": message["content"],
                "user_id": user,
                "hash": f"h{len(memories) + 1}",
                "metadata": body.get("metadata"),
                "created_at": "2026-12-01T00:00:00Z",
                "updated_at": "2026-12-01T00:00:00Z",
            }
            results.append({"id": mid, "event": "ADD", "memory": message["content"]})
        return JSONResponse({"results": results})

    async def mem0_search(request: Request) -> JSONResponse:
        body = await request.json()
        user = (body.get("filters") or {}).get("user_id")
        q = embed(body["query"])
        rows = [
            {**m, "score": round(cosine(q, embed(m["memory"])), 6)}
            for m in memories.values()
            if m["user_id"] == user
        ]
        rows.sort(key=lambda r: -r["score"])
        return JSONResponse({"results": rows[: body.get("top_k", 10)]})

    async def mem0_list(request: Request) -> JSONResponse:
        body = await request.json()
        user = (body.get("filters") or {}).get("user_id")
        rows = [m for m in memories.values() if m["user_id"] == user]
        return JSONResponse({"count": len(rows), "next": None, "previous": None, "results": rows})

    async def mem0_delete(request: Request) -> JSONResponse:
        memories.pop(request.path_params["mid"], None)
        return JSONResponse({"message": "Memory deleted successfully!"})

    return Starlette(
        routes=[
            Route("/v1/ping/", mem0_ping, methods=["GET"]),
            Route("/v3/memories/add/", mem0_add, methods=["POST"]),
            Route("/v3/memories/search/", mem0_search, methods=["POST"]),
            Route("/v3/memories/", mem0_list, methods=["POST"]),
            Route("/v1/memories/{mid}/", mem0_delete, methods=["DELETE"]),
            Route("/", root, methods=["GET", "HEAD"]),
            Route("/collections/{name}/exists", qdrant_exists, methods=["GET"]),
            Route("/collections/{name}/points/{op:path}", qdrant_points, methods=["POST"]),
            Route("/query", pinecone_query, methods=["POST"]),
            Route("/v2/rerank", cohere_rerank, methods=["POST"]),
            Route("/search", search, methods=["POST"]),
            Route("/{index}/_search", es_search, methods=["POST"]),
            Route("/v1/chat/completions", chat, methods=["POST"]),
            Route("/v1/embeddings", embeddings, methods=["POST"]),
        ]
    )


def es_json(doc: dict[str, Any]) -> "JSONResponse":
    """Elasticsearch's answer: its clients refuse a server without this header."""
    from starlette.responses import JSONResponse

    return JSONResponse(doc, headers={"X-Elastic-Product": "Elasticsearch"})


def _passes(doc_id: str, where: Any) -> bool:
    """Pinecone's ``{"topic": {"$eq": "tea"}}`` filter, the one the client sends here."""
    if not isinstance(where, dict):
        return True
    meta = DOCS[doc_id][1]
    return all(
        meta.get(k) == (v.get("$eq") if isinstance(v, dict) else v) for k, v in where.items()
    )


def qdrant_result(body: dict[str, Any], query: bool) -> Any:
    vector = body["query"] if query else body["vector"]
    if isinstance(vector, dict):  # the client sends {"nearest": [...]}
        vector = vector["nearest"]
    wanted = _qdrant_topic(body.get("filter"))
    points = [
        {
            "id": int(doc_id[1:]),
            "version": 1,
            "score": score,
            "payload": {"text": DOCS[doc_id][0], **DOCS[doc_id][1]},
        }
        for doc_id, score in ranked(vector, len(DOCS))
        if wanted is None or DOCS[doc_id][1]["topic"] == wanted
    ][: body.get("limit", 10)]
    return {"points": points} if query else points


def _qdrant_topic(flt: Any) -> str | None:
    for cond in (flt or {}).get("must") or []:
        if cond.get("key") == "topic":
            return str(cond["match"]["value"])
    return None


def stub_answer(body: dict[str, Any]) -> dict[str, Any]:
    """The model stub: a search_docs call first, an answer from the tool result after."""
    messages = body.get("messages") or []
    tool_results = [m for m in messages if m.get("role") == "tool"]
    usage = {"prompt_tokens": 58, "completion_tokens": 19, "total_tokens": 77}
    if not tool_results:
        arguments = json.dumps({"query": "how is matcha made", "k": 2})
        message: dict[str, Any] = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_search_docs_1",
                    "type": "function",
                    "function": {"name": "search_docs", "arguments": arguments},
                }
            ],
        }
        finish, rid = "tool_calls", "chatcmpl-rag-0001"
    else:
        found = json.loads(tool_results[-1]["content"])
        text = f"From {found[0]['id']}: {found[0]['text']}"
        message = {"role": "assistant", "content": text}
        finish, rid = "stop", "chatcmpl-rag-0002"
        usage = {"prompt_tokens": 131, "completion_tokens": 21, "total_tokens": 152}
    return {
        "id": rid,
        "object": "chat.completion",
        "created": 1_780_000_000,
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


def chroma_client(port: int) -> Any:
    import chromadb  # type: ignore[import-not-found, unused-ignore]
    from chromadb.config import Settings  # type: ignore[import-not-found, unused-ignore]

    return chromadb.HttpClient(
        host="127.0.0.1", port=port, settings=Settings(anonymized_telemetry=False)
    )


def query_result(result: Any) -> dict[str, Any]:
    """A Chroma ``QueryResult`` as JSON (the lists the client parsed)."""
    keys = ("ids", "distances", "documents", "metadatas")
    return {
        k: [list(row) for row in result[k]] if result.get(k) is not None else None for k in keys
    }


def chroma_case(case: Case, capture: genlib.Tcpdump) -> dict[str, Any]:
    client = chroma_client(case.port)
    capture.start()
    notes = client.create_collection("notes", embedding_function=None)
    ids = list(DOCS)
    notes.add(
        ids=ids,
        embeddings=[embed(DOCS[i][0]) for i in ids],
        documents=[DOCS[i][0] for i in ids],
        metadatas=[DOCS[i][1] for i in ids],
    )
    asked = embed("green tea powder")
    one = notes.query(query_embeddings=[asked], n_results=2, where={"topic": "tea"})
    two = notes.query(query_embeddings=[embed("coffee"), embed("oxidised")], n_results=2)
    gone = client.create_collection("scratch", embedding_function=None)
    client.delete_collection("scratch")
    error = None
    try:
        gone.query(query_embeddings=[asked], n_results=1)
    except Exception as exc:  # noqa: BLE001 - the client's own error is the truth
        error = {"type": type(exc).__name__, "message": str(exc)}
    return {
        "collection_id": str(notes.id),
        "queries": [
            {
                "vectors": [asked],
                "n_results": 2,
                "where": {"topic": "tea"},
                "result": query_result(one),
            },
            {
                "vectors": [embed("coffee"), embed("oxidised")],
                "n_results": 2,
                "result": query_result(two),
            },
            {"vectors": [asked], "n_results": 1, "collection_id": str(gone.id), "error": error},
        ],
    }


def stub_clients_case(case: Case, capture: genlib.Tcpdump) -> dict[str, Any]:
    import cohere
    from elasticsearch import Elasticsearch  # type: ignore[import-not-found, unused-ignore]
    from pinecone import Pinecone  # type: ignore[import-not-found, unused-ignore]
    from qdrant_client import QdrantClient, models  # type: ignore[import-not-found, unused-ignore]
    from tavily import TavilyClient  # type: ignore[import-not-found, unused-ignore]

    base = f"http://127.0.0.1:{case.port}"
    capture.start()
    truth: dict[str, Any] = {}
    qdrant = QdrantClient(url=base, port=case.port, check_compatibility=False, timeout=20)
    tea = models.Filter(
        must=[models.FieldCondition(key="topic", match=models.MatchValue(value="tea"))]
    )
    points = qdrant.query_points(
        "notes", query=embed("green tea"), limit=2, query_filter=tea
    ).points
    truth["qdrant_query"] = [p.model_dump() for p in points]
    batch = qdrant.query_batch_points(
        "notes",
        requests=[
            models.QueryRequest(query=embed("coffee"), limit=1, with_payload=True),
            models.QueryRequest(query=embed("black tea"), limit=2, with_payload=True),
        ],
    )
    truth["qdrant_batch"] = [[p.model_dump() for p in r.points] for r in batch]
    try:
        qdrant.query_points("nope", query=embed("tea"), limit=1)
    except Exception as exc:  # noqa: BLE001 - the client's own error is the truth
        truth["qdrant_missing"] = {"type": type(exc).__name__, "message": str(exc)}
    index = Pinecone(api_key=FAKE_KEY).Index(host=base)
    found = index.query(
        vector=embed("matcha"),
        top_k=3,
        namespace="kb",
        include_metadata=True,
        filter={"topic": {"$eq": "tea"}},
    )
    truth["pinecone"] = {
        "namespace": found.namespace,
        "matches": [{"id": m.id, "score": m.score, "metadata": m.metadata} for m in found.matches],
    }
    co = cohere.ClientV2(api_key=FAKE_KEY, base_url=base)
    documents = [DOCS[i][0] for i in DOCS]
    rr = co.rerank(model="rerank-v3.5", query="powdered green tea", documents=documents, top_n=2)
    truth["cohere_rerank"] = {
        "id": rr.id,
        "results": [{"index": r.index, "relevance_score": r.relevance_score} for r in rr.results],
    }
    tavily = TavilyClient(api_key="tvly-example-not-a-real-key", api_base_url=base)
    truth["tavily"] = tavily.search("how is black tea made", max_results=2)
    es = Elasticsearch(base, request_timeout=20)
    hits = es.search(
        index="kb",
        knn={"field": "vec", "query_vector": embed("espresso"), "k": 2, "num_candidates": 10},
    )
    truth["elasticsearch"] = dict(hits.body)
    return truth


class StubEmbedding:
    """The agent's embedding function: the ``openai`` SDK's embeddings call to the stub."""

    def __init__(self, client: Any) -> None:
        self.client = client

    def __call__(self, input: list[str]) -> list[Any]:  # noqa: A002 - Chroma's name
        import numpy as np  # type: ignore[import-not-found, unused-ignore]

        response = self.client.embeddings.create(model=EMBED_MODEL, input=list(input))
        self.last = [d.embedding for d in response.data]
        return [np.array(e, dtype=np.float32) for e in self.last]  # Chroma's Embeddings

    @staticmethod
    def name() -> str:
        return "agentshark-stub"

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> "StubEmbedding":
        raise NotImplementedError("the stub's client is the script's own")

    def get_config(self) -> dict[str, Any]:
        return {}

    def is_legacy(self) -> bool:
        return False

    def embed_query(self, input: list[str]) -> list[Any]:  # noqa: A002
        return self(input)

    def default_space(self) -> str:
        return "cosine"

    def supported_spaces(self) -> list[str]:
        return ["cosine", "l2", "ip"]


def agent_case(case: Case, capture: genlib.Tcpdump) -> dict[str, Any]:
    import openai

    assert case.chroma_port is not None
    client = openai.OpenAI(api_key=FAKE_KEY, base_url=f"http://127.0.0.1:{case.port}/v1")
    ef = StubEmbedding(client)
    chroma = chroma_client(case.chroma_port)
    kb = chroma.create_collection("tea-notes", embedding_function=ef)
    ids = list(DOCS)
    kb.add(ids=ids, documents=[DOCS[i][0] for i in ids], metadatas=[DOCS[i][1] for i in ids])
    capture.start()  # the run: the set-up above is not in it
    tools = [
        {
            "type": "function",
            "function": {
                "name": "search_docs",
                "description": "Search the tea notes",
                "parameters": {
                    "type": "object",
                    "properties": {"query": {"type": "string"}, "k": {"type": "integer"}},
                    "required": ["query"],
                },
            },
        }
    ]
    messages: list[dict[str, Any]] = [{"role": "user", "content": "How is matcha made?"}]
    chat: Any = client.chat.completions
    first = chat.create(model=MODEL, messages=messages, tools=tools)
    call = first.choices[0].message.tool_calls[0]
    arguments = json.loads(call.function.arguments)
    found = kb.query(query_texts=[arguments["query"]], n_results=arguments["k"])
    result = [
        {"id": i, "text": d} for i, d in zip(found["ids"][0], found["documents"][0], strict=True)
    ]
    messages.append(first.choices[0].message.model_dump(exclude_none=True))
    messages.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)})
    second = chat.create(model=MODEL, messages=messages, tools=tools)
    return {
        "sdk_responses": [first.model_dump(), second.model_dump()],
        "tool_call": {"id": call.id, "name": call.function.name, "arguments": arguments},
        "query_vector": [float(x) for x in ef.last[0]],
        "chroma_result": query_result(found),
        "collection_id": str(kb.id),
        "tool_result": result,
    }


def mem0_case(case: Case, capture: genlib.Tcpdump) -> dict[str, Any]:
    os.environ["MEM0_TELEMETRY"] = "False"  # the client reports usage to PostHog otherwise
    from mem0 import MemoryClient  # type: ignore[import-not-found, unused-ignore]

    capture.start()
    client = MemoryClient(api_key="m0-example-not-a-real-key", host=f"http://127.0.0.1:{case.port}")
    added = client.add(
        [
            {"role": "user", "content": "I drink matcha every morning"},
            {"role": "assistant", "content": "Noted."},
            {"role": "user", "content": "I dislike black tea"},
        ],
        user_id="alex",
    )
    found = client.search("what tea does alex like", filters={"user_id": "alex"}, top_k=2)
    listed = client.get_all(filters={"user_id": "alex"})
    deleted = client.delete(added["results"][1]["id"])
    return {
        "add": added,
        "search": found,
        "get_all": listed,
        "delete": deleted,
        "deleted_id": added["results"][1]["id"],
    }


CLIENTS = {
    "retrieval_chroma": chroma_case,
    "retrieval_stub_clients": stub_clients_case,
    "retrieval_agent_chroma": agent_case,
    "retrieval_mem0": mem0_case,
}


# =========================================================================== running


def start_chroma(port: int, folder: Path, log_path: Path) -> subprocess.Popen[bytes]:
    chroma = Path(sys.executable).parent / "chroma"
    env = {**os.environ, "ANONYMIZED_TELEMETRY": "False"}
    with log_path.open("wb") as log_file:
        proc = subprocess.Popen(
            [str(chroma), "run", "--path", str(folder), "--host", "127.0.0.1", "--port", str(port)],
            stdout=log_file,
            stderr=subprocess.STDOUT,
            env=env,
        )
    genlib.wait_listening(port, proc, timeout=60)
    return proc


def run_case(case: Case, tcpdump: str, tmp: Path) -> dict[str, Any]:
    out = CAPTURES_DIR / case.name
    out.mkdir(parents=True, exist_ok=True)
    procs: list[subprocess.Popen[bytes]] = []
    ports = [case.port] if case.chroma_port in (None, case.port) else [case.port, case.chroma_port]
    capture = genlib.Tcpdump(tcpdump, out / "capture.pcap", case.port)
    capture.argv[-1] = " or ".join(f"tcp port {p}" for p in ports)
    try:
        if case.chroma_port is not None:
            db = Path(tempfile.mkdtemp(prefix=f"{case.name}-db-", dir=tmp))  # fresh each attempt
            procs.append(start_chroma(case.chroma_port, db, tmp / f"{case.name}-chroma.log"))
        if case.chroma_port != case.port:
            server = genlib.start_serve_process(
                sys.executable,
                SCRIPT,
                {"port": case.port},
                tmp / f"{case.name}.json",
                tmp / f"{case.name}.log",
            )
            procs.append(server)
            genlib.wait_listening(case.port, server)
        truth = CLIENTS[case.name](case, capture)
        counters = capture.stop()
    finally:
        codes = [genlib.stop_process(p) for p in procs]
    genlib.write_json(out / "truth.json", {"made_by": MADE_BY, "case": case.name, **truth})
    run = {
        "made_by": MADE_BY,
        "ports": ports,
        "tcpdump": counters,
        "capture_complete": genlib.capture_complete(counters),
        "server_exits": codes,
        "packets": genlib.pcap_packet_count(out / "capture.pcap"),
        "pcap_bytes": (out / "capture.pcap").stat().st_size,
        "versions": genlib.package_versions(*(r.split("==")[0] for r in REQUIREMENTS)),
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
    with tempfile.TemporaryDirectory(prefix="agentshark-retrieval-") as tmpdir:
        failures = genlib.run_cases(
            CASES, wanted, args.attempts, lambda case: run_case(case, tcpdump, Path(tmpdir))
        )
    return genlib.exit_status(failures)


if __name__ == "__main__":
    sys.exit(main())
