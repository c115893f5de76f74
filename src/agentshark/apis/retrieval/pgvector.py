"""pgvector over PostgreSQL's wire protocol -> ``retrieval`` and ``retrieval.write`` calls
(role ``vector_store``, service ``pgvector``), from a PostgreSQL
:class:`~agentshark.wire.events.Operation`.

The statement decides (:func:`agentshark.apis.retrieval.pgvector_sql.parse`): a kNN search
(``ORDER BY embedding <-> $1 LIMIT 5``) becomes a ``retrieval`` call; an ``INSERT`` whose
values include a vector a ``retrieval.write``. What the call keeps, from the operation only:

- ``data_source``: the table; ``vector_column``; ``metric`` by operator or function
  (``l2_distance`` for ``<->``, ``cosine_distance`` ``<=>``, ``negative_inner_product``
  ``<#>``, ``l1_distance`` ``<+>``, ``hamming_distance`` ``<~>``, ``jaccard_distance``
  ``<%>``); ``order`` ``desc`` when the search orders descending;
- ``queries``: the query vector's size and head, read from the literal or from the bound
  parameter (pgvector's text form ``[1,2,3]``, or its binary form: uint16 dimensions, uint16
  unused, then float32 big-endian components, as pgvector's ``vector_send`` writes it); a
  vector the wire did not show (a subquery's) leaves ``queries`` out;
- ``top_k``: ``LIMIT``'s number, or the value bound to its parameter;
- ``filter``: ``{"where": <the WHERE clause's text>, "parameters": {"$2": value}}``, the
  values bound to the parameters it uses (which a tool call's arguments are matched
  against);
- documents, one per DataRow in order (rank), from the values the decoder kept (bounded:
  ``MAX_VALUES`` rows; ``documents_cut`` says more came): ``id`` (a column named ``id``, or
  else the first ``*_id``), ``score`` (the selected distance, its column's value as a number;
  ``score_kind`` the metric when the column is the distance itself, none when it is an
  expression of it), ``content`` (a column named ``content``, ``text``, ``document``,
  ``chunk``, ``page_content``, ``body``), and the other columns as ``metadata`` except the
  vector column. Values are as the wire carried them (text format: strings).

Both keep ``statement``, the SQL as sent (its first :data:`STATEMENT_KEPT` characters;
``statement_chars`` its length when longer). A write keeps ``data_source``, ``endpoint``
``insert``, ``count`` (rows in ``VALUES``), ``vectors`` and ``dimensions`` (their sizes, one
entry each) and ``written`` from the command tag. A value counts as a vector when it is cast
to ``vector``/``halfvec``/``sparsevec``, or is a binary parameter whose bytes are exactly
pgvector's binary form (a parameter without a cast in text form is not: its column's type is
not on the wire).
"""

from __future__ import annotations

import base64
import binascii
import math
import struct

from agentshark.apis.documents import MAX_CONTENT, document, query, record
from agentshark.apis.model import Call, CallError, GenericPart, Json
from agentshark.apis.retrieval.pgvector_sql import (
    METRICS,
    VECTOR_TYPES,
    Statement,
    VectorInsert,
    VectorQuery,
    VectorSearch,
    parse,
)
from agentshark.wire.events import Operation

ROLE = "vector_store"
SERVICE = "pgvector"
MAX_DIMENSIONS = 16000  # pgvector's limit for a vector
CONTENT_COLUMNS = ("content", "text", "document", "chunk", "page_content", "body")
STATEMENT_KINDS = ("query", "execute")  # a simple Query, an extended-protocol Execute
STATEMENT_KEPT = 4096  # characters of the statement kept on the call


class Pgvector:
    api = "pgvector"

    def match(self, op: Operation) -> float:
        if op.protocol != "postgresql" or op.kind not in STATEMENT_KINDS or not op.statement:
            return 0.0
        if not _worth_reading(op):
            return 0.0
        found = _parsed(op.statement)
        if isinstance(found, VectorSearch):
            return 0.9
        if isinstance(found, VectorInsert) and _insert_vectors(found, op.parameters):
            return 0.8
        return 0.0

    def parse(self, op: Operation, call: Call) -> None:
        found = _parsed(op.statement or "")
        call.error = _error(op)
        if isinstance(found, VectorSearch):
            _search(op, found, call)
        elif isinstance(found, VectorInsert):
            _write(op, found, call)


FAMILIES = (Pgvector(),)


def _worth_reading(op: Operation) -> bool:
    """Cheap looks before the statement is tokenized: a distance operator or function, or
    an INSERT that names a vector type or binds a binary value (every other INSERT of a
    database's workload is passed by here)."""
    sql = op.statement or ""
    if any(o in sql for o in METRICS):
        return True
    low = sql.lower()
    if "_distance" in low or "inner_product" in low:
        return True
    if "insert" not in low:
        return False
    return "vec" in low or any(_binary(p) is not None for p in op.parameters)


_last: list[tuple[str, Statement | None]] = []  # the statement match read, for parse


def _parsed(sql: str) -> Statement | None:
    """:func:`parse`, once per operation: ``match`` and ``parse`` read the same statement in
    a row (and a pipelined executemany sends the same one again)."""
    if _last and _last[0][0] is sql:
        return _last[0][1]
    found = parse(sql)
    _last[:] = [(sql, found)]
    return found


def _error(op: Operation) -> CallError | None:
    if op.error is None:
        return None
    code, message = op.error.get("code"), op.error.get("message")
    return CallError(
        status=None,
        type=None,  # the severity (ERROR, FATAL) is the operation's; the code says what
        code=str(code) if code is not None else None,
        message=str(message) if message is not None else None,
        source="postgresql",
    )


def _search(op: Operation, found: VectorSearch, call: Call) -> None:
    vector = _query_vector(found.query, op.parameters)
    limit = found.limit
    if limit is None and found.limit_parameter is not None:
        limit = _integer(_parameter(op.parameters, found.limit_parameter))
    info: dict[str, Json] = {
        **_statement(op),
        "data_source": found.table,
        "vector_column": found.column,
        "metric": found.metric,
        "order": "desc" if found.descending else None,
        "queries": [vector] if vector else [],
        "top_k": limit,
        "filter": _filter(found, op.parameters),
        "score_column": _score_column(found),
        "documents_cut": True if op.values_cut else None,
    }
    results = None
    if call.error is None and op.response_complete:
        results = [_documents(op, found)]
    record(call, role=ROLE, service=SERVICE, operation="retrieval", info=info, results=results)


def _write(op: Operation, found: VectorInsert, call: Call) -> None:
    vectors = _insert_vectors(found, op.parameters)
    written = None
    if op.result and op.result.startswith("INSERT "):
        written = _integer(op.result.rsplit(" ", 1)[-1])
    info: dict[str, Json] = {
        **_statement(op),
        "data_source": found.table,
        "endpoint": "insert",
        "count": len(found.rows),
        "vectors": len(vectors),
        "dimensions": sorted({d for d in vectors if d is not None}) or None,
        "written": written,
    }
    answered = op.response_complete
    record(
        call,
        role=ROLE,
        service=SERVICE,
        operation="retrieval.write",
        info=info,
        results=None,
        answered=answered,
    )


def _statement(op: Operation) -> dict[str, Json]:
    """The statement as sent, its first :data:`STATEMENT_KEPT` characters (what a tool
    call's SQL argument is matched against, like a SQL operation's body)."""
    sql = op.statement or ""
    out: dict[str, Json] = {"statement": sql[:STATEMENT_KEPT]}
    if len(sql) > STATEMENT_KEPT:
        out["statement_chars"] = len(sql)
    return out


def _insert_vectors(found: VectorInsert, parameters: list[Json]) -> list[int | None]:
    """The sizes of the vectors an INSERT's rows carry (None: a vector of unknown size)."""
    out: list[int | None] = []
    for row in found.rows:
        for value in row:
            if value is None:
                continue
            cast = (value.cast or "") in VECTOR_TYPES
            if value.parameter is not None and not cast:
                raw = _binary(_parameter(parameters, value.parameter))
                if raw is None or _binary_vector(raw) is None:
                    continue
            elif not cast:
                continue
            vector = _query_vector(value, parameters)
            size = vector.get("vector_dimensions") if vector else None
            out.append(size if isinstance(size, int) else None)
    return out


def _parameter(parameters: list[Json], n: int) -> Json:
    return parameters[n - 1] if 1 <= n <= len(parameters) else None


def _binary(value: Json) -> bytes | None:
    if not isinstance(value, dict) or value.get("format") != "binary":
        return None
    try:
        return base64.b64decode(str(value.get("base64", "")), validate=True)
    except (binascii.Error, ValueError):
        return None


def _integer(value: Json) -> int | None:
    if isinstance(value, dict):
        value = value.get("value")
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def _query_vector(found: VectorQuery | None, parameters: list[Json]) -> dict[str, Json] | None:
    """The query as the call keeps it: the vector's size and head; None when unknown."""
    if found is None:
        return None
    text: str | None = found.literal
    if found.parameter is not None:
        value = _parameter(parameters, found.parameter)
        if isinstance(value, str):
            text = value
        else:
            raw = _binary(value)
            floats = _binary_vector(raw, found.cast) if raw is not None else None
            return query(vector=floats) if floats is not None else None
    if text is None:
        return None
    if found.cast == "sparsevec" or text.lstrip().startswith("{"):
        size = _sparse_dimensions(text)
        return {"vector_dimensions": size} if size is not None else None
    floats = _text_vector(text)
    return query(vector=floats) if floats is not None else None


def _text_vector(text: str) -> list[float] | None:
    """pgvector's text form ``[1,2.5,-3e-1]``; None when it is not one."""
    text = text.strip()
    if not (text.startswith("[") and text.endswith("]")) or text.count(",") >= MAX_DIMENSIONS:
        return None
    try:
        floats = [float(x) for x in text[1:-1].split(",")] if text[1:-1].strip() else []
    except ValueError:
        return None
    return floats if floats and all(math.isfinite(x) for x in floats) else None


def _sparse_dimensions(text: str) -> int | None:
    """A sparsevec's ``{1:0.5,3:2}/5``: its dimensions (5)."""
    head, slash, size = text.strip().rpartition("/")
    if not slash or not head.startswith("{") or not size.isdigit():
        return None
    return int(size)


def _binary_vector(raw: bytes, cast: str | None = None) -> list[float] | None:
    """pgvector's binary form (``vector_send``: uint16 dim, uint16 unused, float32 each;
    ``halfvec_send`` the same with float16): the components; None when the bytes are not
    exactly that."""
    if len(raw) < 4:
        return None
    dim, unused = struct.unpack(">HH", raw[:4])
    width, code = (2, "e") if cast == "halfvec" else (4, "f")
    if unused != 0 or not 0 < dim <= MAX_DIMENSIONS or len(raw) != 4 + width * dim:
        return None
    floats = [float(x) for x in struct.unpack(f">{dim}{code}", raw[4:])]
    return floats if all(math.isfinite(x) for x in floats) else None


def _filter(found: VectorSearch, parameters: list[Json]) -> dict[str, Json] | None:
    if found.where is None:
        return None
    out: dict[str, Json] = {"where": found.where}
    bound = {f"${n}": _plain(_parameter(parameters, n)) for n in found.where_parameters}
    if bound:
        out["parameters"] = bound
    return out


def _plain(value: Json) -> Json:
    """A bound value as a filter shows it: text as sent, a typed binary one by its value, an
    untyped binary one as its base64 (a long one by its size only); bounded."""
    if isinstance(value, dict) and "value" in value:
        value = value["value"]
    elif isinstance(value, dict) and len(str(value.get("base64", ""))) > MAX_CONTENT:
        return {"format": "binary", "size": len(_binary(value) or b"")}
    if isinstance(value, str) and len(value) > MAX_CONTENT:
        return value[:MAX_CONTENT]
    return value


def _score_column(found: VectorSearch) -> str | None:
    return None if found.distance_column is None else found.selected[found.distance_column]


def _documents(op: Operation, found: VectorSearch) -> list[GenericPart]:
    """One document per row kept, in the server's order."""
    names = [c.lower() for c in op.columns]
    id_at = _column_at(names, ("id",)) if "id" in names else _suffix_at(names, "_id")
    content_at = _column_at(names, CONTENT_COLUMNS)
    score_at = found.distance_column  # by position; after a ``*``, by its name
    if found.star and score_at is not None:
        name = found.selected[score_at]
        score_at = names.index(name) if name in names else None
    if score_at is not None and score_at >= len(names):
        score_at = None
    vector_name = (found.column or "").rsplit(".", 1)[-1]
    score_kind = None
    if score_at is not None and found.distance_exact:
        score_kind = "distance" if found.metric.endswith("_distance") else found.metric
    taken = {id_at, content_at, score_at}
    docs = []
    for rank, row in enumerate(op.values or [], 1):
        metadata = {
            names[n]: _bounded(v)
            for n, v in enumerate(row)
            if n < len(names) and n not in taken and names[n] != vector_name
        }
        docs.append(
            document(
                rank,
                id=row[id_at] if id_at is not None and id_at < len(row) else None,
                score=_number(row[score_at])
                if score_at is not None and score_at < len(row)
                else None,
                score_kind=score_kind,
                content=row[content_at]
                if content_at is not None and content_at < len(row)
                else None,
                metadata=metadata or None,
            )
        )
    return docs


def _column_at(names: list[str], wanted: tuple[str, ...]) -> int | None:
    return next((names.index(w) for w in wanted if w in names), None)


def _suffix_at(names: list[str], suffix: str) -> int | None:
    return next((n for n, name in enumerate(names) if name.endswith(suffix)), None)


def _number(value: Json) -> Json:
    """A distance as a number: the text of a float8 read, a typed binary value's value."""
    if isinstance(value, dict):
        return value.get("value")
    if isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            return value
        return number if math.isfinite(number) else value
    return value


def _bounded(value: Json) -> Json:
    if isinstance(value, str) and len(value) > MAX_CONTENT:
        return value[:MAX_CONTENT]
    return value
