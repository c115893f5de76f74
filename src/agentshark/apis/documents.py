"""What retrieval calls share: the documents they return as parts, and the query they ran.

A retrieval call is one made to a service by its role (:mod:`agentshark.apis.retrieval`): a
vector store (``retrieval``), a reranker (``rerank``), a web search API (``retrieval``) or a
memory service (``memory.read``, ``memory.write``, ``memory.delete``); a vector store's
writes are ``retrieval.write`` and ``retrieval.delete`` (:mod:`agentshark.apis.retrieval.writes`,
no documents back). It is a tool's
execution, not a model call, and keeps:

- ``extras["retrieval"]``: ``role`` (``vector_store``, ``reranker``, ``web_search``,
  ``memory``), ``service`` (``chroma``, ``qdrant``...), ``data_source`` (the collection, index,
  or what names the store: the OTel GenAI ``gen_ai.data_source.id``), ``namespace`` (a
  Pinecone namespace, Chroma tenant/database, the memory's user/agent/session scope),
  ``queries`` (one per query sent: ``text``, or ``vector_dimensions`` and ``vector_head``,
  the first :data:`HEAD` components, which an embeddings call's output is matched by),
  ``top_k``, ``filter``, ``documents`` (how many came back). A key is absent when the wire did
  not carry it.
- ``output_messages``: one per query (a batch has several), role the service's role, each
  part a document: :func:`document` (``type`` ``document``).

Content is bounded: a document's text longer than :data:`MAX_CONTENT` characters is its head,
with ``content_chars`` saying how long it was (the whole stays in the exchange's body).
"""

from __future__ import annotations

import base64
import binascii
import math
import struct

from agentshark.apis.model import Call, CallError, GenericPart, Json, Message
from agentshark.apis.view import ExchangeView

MAX_CONTENT = 2048  # characters of a document's text kept on the call
HEAD = 8  # vector components kept to match an embedding with the query that used it
RETRIEVAL_OPERATIONS = frozenset(
    {
        "retrieval",
        "retrieval.write",
        "retrieval.delete",
        "rerank",
        "memory.read",
        "memory.write",
        "memory.delete",
    }
)


def document(
    rank: int,
    *,
    id: Json = None,  # noqa: A002 - the document's id, as the service names it
    score: Json = None,
    score_kind: str | None = None,
    content: Json = None,
    metadata: Json = None,
    **more: Json,
) -> GenericPart:
    """One returned document: ``rank`` (1-based, in the service's order), then the fields
    the wire had (None ones left out). ``score_kind`` says what the score is (``distance``:
    lower is nearer; ``similarity``, ``relevance``)."""
    fields: dict[str, Json] = {"rank": rank}
    given = (("id", id), ("score", score), ("score_kind", score_kind))
    fields.update((key, value) for key, value in given if value is not None)
    if isinstance(content, str):
        fields["content"] = content[:MAX_CONTENT]
        if len(content) > MAX_CONTENT:
            fields["content_chars"] = len(content)
    elif content is not None:
        fields["content"] = content
    fields.update((key, value) for key, value in more.items() if value is not None)
    if metadata is not None:
        fields["metadata"] = metadata
    return GenericPart(type="document", fields=fields)


def query(text: Json = None, vector: Json = None) -> dict[str, Json]:
    """One query as the call keeps it: its text, or its vector's size and head."""
    out: dict[str, Json] = {}
    if isinstance(text, str):
        out["text"] = text
    if isinstance(vector, list):
        out["vector_dimensions"] = len(vector)
        head = vector_head(vector)
        if head:
            out["vector_head"] = head
    return out


def vector_head(vector: Json) -> list[float]:
    """The first :data:`HEAD` components of a vector (a list of numbers, or base64 of
    little-endian float32 as OpenAI's ``encoding_format: base64`` sends it); empty when it
    is neither."""
    if isinstance(vector, str):
        try:
            raw = base64.b64decode(vector[: (HEAD * 4 + 2) // 3 * 4 + 4], validate=False)
        except (binascii.Error, ValueError):
            return []
        n = min(HEAD, len(raw) // 4)
        return [float(x) for x in struct.unpack(f"<{n}f", raw[: n * 4])]
    if not isinstance(vector, list):
        return []
    head = vector[:HEAD]
    if not all(isinstance(x, int | float) and not isinstance(x, bool) for x in head):
        return []
    return [float(x) for x in head]


def same_vector(a: Json, b: Json) -> bool:
    """Two vector heads with the same components, as float32 (a client that stores vectors
    as float32 sends the embedding back rounded)."""
    if not isinstance(a, list) or not isinstance(b, list) or len(a) != len(b) or not a:
        return False
    return all(
        isinstance(x, float) and isinstance(y, float) and math.isclose(x, y, rel_tol=1e-6)
        for x, y in zip(a, b, strict=True)
    )


def record(
    call: Call,
    *,
    role: str,
    service: str,
    operation: str,
    info: dict[str, Json],
    results: list[list[GenericPart]] | None,
    answered: bool = False,
) -> None:
    """Sets the retrieval call: ``info`` (the request side) in ``extras["retrieval"]``, one
    output message per result list. The call is complete when the service answered: with
    results, or with an error (``call.error``, set before), or (``answered``: a write, which
    returns no documents) with a whole response; ``results`` None and no error
    is a response of another shape or none (the registry still says whether the exchange
    was whole)."""
    call.operation = operation
    call.provider = service
    kept: dict[str, Json] = {"role": role, "service": service}
    kept.update({k: v for k, v in info.items() if v is not None and v != []})
    if results is not None:
        kept["documents"] = sum(len(r) for r in results)
        call.output_messages = [Message(role=role, parts=list(r)) for r in results]
    call.extras["retrieval"] = kept
    call.complete = results is not None or call.error is not None or answered


def http_error(view: ExchangeView, body: Json) -> CallError | None:
    """The error of a retrieval service's response: an HTTP status of 400 or more, with the
    message and code its body gives (``error`` as text or as an object with ``message``,
    ``reason``, ``type``, ``code``; ``message``; ``detail``; Qdrant's ``status.error``)."""
    status = view.status
    if status is None or status < 400:
        return None
    return body_error(body, status, "http")


def body_error(body: Json, status: int | None, source: str) -> CallError:
    message: Json = None
    kind: Json = None
    code: Json = None
    if isinstance(body, dict):
        err = body.get("error")
        if isinstance(err, dict):
            message = err.get("message") or err.get("reason")
            kind, code = err.get("type"), err.get("code")
        elif isinstance(err, str):
            kind = err
        inner = body.get("status")
        if isinstance(inner, dict):  # Qdrant: {"status": {"error": "..."}}
            message = inner.get("error")
        message = message or body.get("message") or body.get("detail")
        code = code if code is not None else body.get("code")
    if message is not None and not isinstance(message, str):
        message = str(message)
    return CallError(
        status=status,
        type=kind if isinstance(kind, str) else None,
        code=str(code) if code is not None else (str(status) if status is not None else None),
        message=message,
        source=source,
    )


def int_or_none(value: Json) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def text_or_none(value: Json) -> str | None:
    return value if isinstance(value, str) else None


KEPT_VECTORS = 16  # an embeddings call's inputs and output vectors kept to match (the first)


def embedding_evidence(inputs: Json, vectors: list[Json]) -> dict[str, Json]:
    """What links an embeddings call to the tool call and the search it served: its input
    texts (the first :data:`KEPT_VECTORS`, each bounded by :data:`MAX_CONTENT`) and the heads
    of its output vectors (the first :data:`KEPT_VECTORS`). Keys absent when there are none."""
    out: dict[str, Json] = {}
    texts = [inputs] if isinstance(inputs, str) else inputs if isinstance(inputs, list) else []
    kept = [t[:MAX_CONTENT] for t in texts[:KEPT_VECTORS] if isinstance(t, str)]
    if kept:
        out["texts"] = kept
    heads = [h for h in (vector_head(v) for v in vectors[:KEPT_VECTORS]) if h]
    if heads:
        out["vector_heads"] = heads
    return out
