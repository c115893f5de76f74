"""The work a tool call caused in retrieval services: searches, reranks, memory reads and
writes, and the embeddings they needed (:mod:`agentshark.apis.documents`).

An agent's ``search_docs`` tool runs as calls of its own: often an embeddings call (the query
text in, a vector out), then a vector search with that vector. :func:`tool_work` finds them
after the model asked and before the result was sent back, by the existing argument match
(:func:`agentshark.trace.tool_match.argument_values`):

- a retrieval or memory call whose request (query texts, filter, ``top_k``, data source,
  scope) holds every string argument value (numbers, such as a ``k``, are not required: an
  embeddings call never holds them): 0.8 when a query text is one of the argument strings,
  else 0.6; an embeddings call whose input texts hold them likewise;
- a retrieval call whose query vector is a vector an embeddings call found above returned
  (the first :data:`~agentshark.apis.documents.HEAD` components equal as float32): that
  embeddings call's confidence, the vector being the join.

A tool call takes one call of each kind (embeddings, search or memory read, rerank, memory
write), the first in time: the same query sent again later is another tool call's (a
cassette has no times, so its order decides). Nothing else joins: a search no tool call's
arguments reach stays a call of its own trace.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import orjson

from agentshark.apis.documents import RETRIEVAL_OPERATIONS, same_vector
from agentshark.apis.model import Call, Json, ToolCallPart
from agentshark.trace.history import is_model_call
from agentshark.trace.tool_match import argument_values

EMBEDDING_OPERATIONS = frozenset({"embeddings", "embeddings.batch"})
Work = tuple[Call, str, float]  # the call, the evidence, the confidence


def is_retrieval(call: Call) -> bool:
    return call.operation in RETRIEVAL_OPERATIONS and isinstance(call.extras.get("retrieval"), dict)


def is_work(call: Call) -> bool:
    """A call a tool may cause: retrieval, rerank, memory, embeddings (no model call)."""
    return (is_retrieval(call) or call.operation in EMBEDDING_OPERATIONS) and not is_model_call(
        call
    )


def _info(call: Call, key: str) -> dict[str, Json]:
    value = call.extras.get(key)
    return value if isinstance(value, dict) else {}


def _texts(call: Call) -> list[str]:
    if is_retrieval(call):
        queries = _info(call, "retrieval").get("queries")
        found = (
            [q.get("text") for q in queries if isinstance(q, dict)]
            if isinstance(queries, list)
            else []
        )
    else:
        texts = _info(call, "embeddings").get("texts")
        found = list(texts) if isinstance(texts, list) else []
    return [t for t in found if isinstance(t, str)]


def request_text(call: Call) -> str:
    """What a tool call's argument values are looked for in: the query texts, and for a
    retrieval call its SQL statement (pgvector), filter, ``top_k``, data source and scope."""
    pieces = _texts(call)
    if is_retrieval(call):
        info = _info(call, "retrieval")
        if isinstance(info.get("statement"), str):  # pgvector: the SQL as sent
            pieces.append(info["statement"])
        for key in ("filter", "top_k", "data_source", "namespace"):
            if info.get(key) is not None:
                pieces.append(orjson.dumps(info[key]).decode())
    return "\n".join(pieces)


def _vector_heads(call: Call, key: str) -> list[Json]:
    if key == "queries":
        queries = _info(call, "retrieval").get("queries")
        return (
            [q.get("vector_head") for q in queries if isinstance(q, dict)]
            if isinstance(queries, list)
            else []
        )
    heads = _info(call, "embeddings").get("vector_heads")
    return list(heads) if isinstance(heads, list) else []


def may_be_work(part: ToolCallPart, call: Call) -> bool:
    """Whether :func:`tool_work` could take ``call`` for ``part`` when it starts in the
    tool's window: its input holds every argument value, or it is a retrieval by a query
    vector (which an embeddings call of the same tool may have returned)."""
    values = [v for v in argument_values(part.arguments) if not _number(v)]
    if not values:
        return False
    text = request_text(call)
    if text and all(v in text for v in values):
        return True
    return is_retrieval(call) and bool(_vector_heads(call, "queries"))


def tool_work(
    part: ToolCallPart,
    in_window: Callable[[float | None], bool],
    workers: Sequence[Call],
    used: set[str],
) -> list[Work]:
    """The retrieval, memory and embeddings calls ``part`` caused, in time order."""
    values = [v for v in argument_values(part.arguments) if not _number(v)]
    if not values:
        return []
    candidates = [c for c in workers if c.id not in used and in_window(c.timing.started)]
    found: list[Work] = []
    kinds: set[str | None] = set()
    for call in candidates:
        if _kind(call) in kinds:
            continue  # one of each kind: the next one with the same query is the next tool's
        text = request_text(call)
        if not text or not all(v in text for v in values):
            continue
        kinds.add(_kind(call))
        exact = any(t in values for t in _texts(call))
        what = "its query" if is_retrieval(call) else "its input"
        evidence = f"{call.api} {call.operation}: {what} holds every argument value"
        found.append((call, evidence, 0.8 if exact else 0.6))
    embedded = [(c, conf, h) for c, _, conf in found for h in _vector_heads(c, "outputs")]
    taken = {c.id for c, _, _ in found}
    for call in candidates:
        if call.id in taken or not is_retrieval(call) or _kind(call) in kinds:
            continue
        for head in _vector_heads(call, "queries"):
            source = next(((c, conf) for c, conf, h in embedded if same_vector(head, h)), None)
            if source is not None:
                evidence = (
                    f"{call.api} {call.operation}: its query vector is the one "
                    f"{source[0].id} returned"
                )
                found.append((call, evidence, source[1]))
                taken.add(call.id)
                kinds.add(_kind(call))
                break
    found.sort(key=lambda w: (w[0].timing.started is None, w[0].timing.started or 0.0))
    return found


def execution_of(work: list[Work]) -> Work | None:
    """The call that stands for the tool's execution among its work: the first retrieval
    (or memory) call, else the first call."""
    return next((w for w in work if is_retrieval(w[0])), work[0] if work else None)


def _kind(call: Call) -> str | None:
    """What a tool takes one of: an embeddings call, a search (or memory read), a rerank, a
    memory write."""
    if call.operation in EMBEDDING_OPERATIONS:
        return "embeddings"
    return "retrieval" if call.operation == "memory.read" else call.operation


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
