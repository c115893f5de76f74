"""pgvector's statements read from SQL text (agentshark.apis.retrieval.pgvector_sql), and
the calls a PostgreSQL operation makes of them (agentshark.apis.retrieval.pgvector): many
search shapes, writes, and statements that are not searches."""

from __future__ import annotations

import base64
import struct
import time
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentshark.apis.model import Call, GenericPart
from agentshark.apis.retrieval.pgvector import Pgvector
from agentshark.apis.retrieval.pgvector_sql import (
    MAX_STATEMENT,
    VectorInsert,
    VectorQuery,
    VectorSearch,
    parse,
)
from agentshark.apis.retrieval.sql_lex import Group, tokens, tree
from agentshark.wire.events import Operation


def test_tokens_of_strings_comments_quotes_and_parameters() -> None:
    sql = (
        "SELECT 'it''s <->', E'a\\'b', $q$ x <-> y $q$, \"Col\"\"x\", $12 -- <-> no\n"
        "/* <-> */ FROM t WHERE a<->b"
    )
    got = [(t.kind, t.text) for t in tokens(sql)]
    assert got == [
        ("word", "SELECT"),
        ("string", "'it''s <->'"),
        ("punct", ","),
        ("string", "E'a\\'b'"),
        ("punct", ","),
        ("string", "$q$ x <-> y $q$"),
        ("punct", ","),
        ("quoted", '"Col""x"'),
        ("punct", ","),
        ("param", "$12"),
        ("word", "FROM"),
        ("word", "t"),
        ("word", "WHERE"),
        ("word", "a"),
        ("op", "<->"),
        ("word", "b"),
    ]
    assert tokens('"Col""x"')[0].name == 'Col"x' and tokens("Embedding")[0].name == "embedding"


def test_the_tree_nests_parentheses_and_brackets_and_survives_unbalanced_ones() -> None:
    root = tree(tokens("a (b [c] (d)) ) e ("))
    assert [type(i).__name__ for i in root.items] == ["Token", "Group", "Token", "Group"]
    inner = root.items[1]
    assert isinstance(inner, Group) and [type(i).__name__ for i in inner.items] == [
        "Token",
        "Group",
        "Group",
    ]


def search(sql: str) -> VectorSearch:
    found = parse(sql)
    assert isinstance(found, VectorSearch), sql
    return found


@pytest.mark.parametrize(
    ("sql", "metric", "column", "query", "limit"),
    [
        (
            "SELECT * FROM items ORDER BY embedding <-> '[3,1,2]' LIMIT 5",
            "l2_distance",
            "embedding",
            VectorQuery(literal="[3,1,2]"),
            5,
        ),
        (
            "select id from items order by embedding <=> $1::vector limit 10",
            "cosine_distance",
            "embedding",
            VectorQuery(parameter=1, cast="vector"),
            10,
        ),
        (
            "SELECT id FROM items ORDER BY embedding <#> $1 LIMIT $2",
            "negative_inner_product",
            "embedding",
            VectorQuery(parameter=1),
            None,
        ),
        (
            "SELECT id FROM items ORDER BY embedding <+> '[1,2]'::vector(2) LIMIT 3",
            "l1_distance",
            "embedding",
            VectorQuery(literal="[1,2]", cast="vector"),
            3,
        ),
        (
            "SELECT id FROM items ORDER BY $1::vector <-> i.embedding LIMIT 3",  # vector first
            "l2_distance",
            "i.embedding",
            VectorQuery(parameter=1, cast="vector"),
            3,
        ),
        (
            'SELECT id FROM "Docs" ORDER BY "Embedding" <~> $1 LIMIT 2',
            "hamming_distance",
            "Embedding",
            VectorQuery(parameter=1),
            2,
        ),
        (
            "SELECT id FROM items ORDER BY embedding <-> CAST($1 AS halfvec) LIMIT 4",
            "l2_distance",
            "embedding",
            VectorQuery(parameter=1, cast="halfvec"),
            4,
        ),
        (
            "SELECT id FROM items ORDER BY cosine_distance(embedding, $1) FETCH FIRST 7 ROWS ONLY",
            "cosine_distance",
            "embedding",
            VectorQuery(parameter=1),
            7,
        ),
        (
            "SELECT id FROM items ORDER BY (embedding <-> E'[1,\\'2]') LIMIT 1",  # parenthesized
            "l2_distance",
            "embedding",
            VectorQuery(literal="[1,\\'2]"),
            1,
        ),
        (
            "SELECT id FROM items ORDER BY embedding <-> ARRAY[1,2,-3]::vector LIMIT 2",
            "l2_distance",
            "embedding",
            VectorQuery(literal="[1,2,-3]", cast="vector"),
            2,
        ),
        (
            "SELECT id FROM items ORDER BY embedding::halfvec(3) <-> $1::halfvec(3) LIMIT 2",
            "l2_distance",
            "embedding",
            VectorQuery(parameter=1, cast="halfvec"),
            2,
        ),
        (
            "SELECT DISTINCT ON (doc_id) doc_id, chunk FROM chunks c JOIN docs d "
            "ON d.id = c.doc_id ORDER BY c.embedding <=> $1, id LIMIT 10 OFFSET 10 FOR UPDATE",
            "cosine_distance",
            "c.embedding",
            VectorQuery(parameter=1),
            10,
        ),
        (
            "SELECT id FROM items ORDER BY embedding <-> $$[1,2]$$ LIMIT 1",
            "l2_distance",
            "embedding",
            VectorQuery(literal="[1,2]"),
            1,
        ),
    ],
)
def test_search_shapes(
    sql: str, metric: str, column: str, query: VectorQuery, limit: int | None
) -> None:
    found = search(sql)
    assert (found.metric, found.column, found.query, found.limit) == (metric, column, query, limit)


def test_the_search_keeps_table_filter_limit_parameter_and_selected_distance() -> None:
    found = search(
        "SELECT id, content, embedding <=> $1 AS distance -- nearest first\n"
        "FROM public.items WHERE category = $2 AND /* ( */ year > 2020 "
        "ORDER BY distance LIMIT $3"
    )
    assert found.table == "public.items"
    assert found.where == "category = $2 AND /* ( */ year > 2020"
    assert found.where_parameters == [2]
    assert (found.limit, found.limit_parameter) == (None, 3)
    assert found.selected == ["id", "content", "distance"]
    assert (found.distance_column, found.distance_exact) == (2, True)


def test_a_star_with_a_selected_distance() -> None:
    found = search("SELECT *, embedding <-> $1 AS d FROM t ORDER BY d LIMIT 5")
    assert (found.star, found.selected, found.distance_column) == (True, [None, "d"], 1)


def test_order_by_position_and_descending_inner_product() -> None:
    found = search(
        "SELECT id, inner_product(embedding, $1) AS score FROM items ORDER BY 2 DESC LIMIT 5"
    )
    assert (found.metric, found.descending, found.distance_column) == ("inner_product", True, 1)


def test_a_subquery_or_cte_search_is_found() -> None:
    inner = search(
        "SELECT id FROM (SELECT id FROM chunks ORDER BY emb <-> $1 LIMIT 20) AS near "
        "JOIN docs USING (id)"
    )
    assert (inner.table, inner.limit) == ("chunks", 20)
    cte = search(
        "WITH near AS (SELECT id, emb <=> $1 AS d FROM chunks ORDER BY d LIMIT 8) "
        "SELECT * FROM near"
    )
    assert (cte.table, cte.limit, cte.metric) == ("chunks", 8, "cosine_distance")


def test_a_vector_from_a_subquery_is_a_search_without_a_query() -> None:
    found = search(
        "SELECT id FROM items WHERE id != 1 ORDER BY embedding <-> "
        "(SELECT embedding FROM items WHERE id = 1) LIMIT 5"
    )
    assert (found.column, found.query, found.where) == ("embedding", None, "id != 1")


def test_a_selected_distance_ordered_by_its_expression() -> None:
    found = search("SELECT id, embedding <-> $1 AS d FROM t ORDER BY embedding <-> $2 LIMIT 3")
    assert found.distance_column == 1 and found.query == VectorQuery(parameter=2)


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT count(*) FROM items",
        "SELECT id FROM items WHERE embedding <-> $1 < 0.5",  # a range, not a kNN
        "SELECT embedding <-> $1 FROM items WHERE id = 1",  # a distance computed
        "SELECT id FROM items ORDER BY embedding <-> $1",  # no LIMIT: every row, sorted
        "SELECT id FROM items ORDER BY created_at LIMIT 5",
        "SELECT '<->' AS op FROM t ORDER BY op LIMIT 1",  # the operator inside a string
        "SELECT id FROM t -- ORDER BY e <-> $1 LIMIT 1",  # ...or a comment
        "SELECT id FROM a UNION SELECT id FROM b ORDER BY id LIMIT 2",
        "CREATE INDEX ON items USING hnsw (embedding vector_l2_ops)",
        "DELETE FROM items WHERE embedding <-> $1 > 2",
        "",
        "ORDER BY LIMIT",
        "SELECT ((((",
    ],
)
def test_not_a_search(sql: str) -> None:
    assert not isinstance(parse(sql), VectorSearch)


def test_inserts_give_their_rows_values() -> None:
    found = parse(
        "INSERT INTO items (content, embedding) VALUES ($1, $2::vector), ('b', '[1,2]'::vector) "
        "ON CONFLICT DO NOTHING"
    )
    assert isinstance(found, VectorInsert)
    assert (found.table, found.columns) == ("items", ["content", "embedding"])
    assert found.rows == [
        [VectorQuery(parameter=1), VectorQuery(parameter=2, cast="vector")],
        [VectorQuery(literal="b"), VectorQuery(literal="[1,2]", cast="vector")],
    ]
    assert parse("INSERT INTO items SELECT * FROM other") is None


def test_statements_past_the_bound_are_not_read() -> None:
    big = "SELECT id FROM t ORDER BY e <-> '[" + "1," * (MAX_STATEMENT // 2) + "1]' LIMIT 1"
    assert parse(big) is None


def test_a_long_vector_literal_reads_in_linear_time() -> None:
    literal = "[" + ",".join("0.125" for _ in range(16000)) + "]"
    sql = f"SELECT id FROM t WHERE a = 'x' ORDER BY e <=> '{literal}' LIMIT 3"
    started = time.perf_counter()
    for _ in range(5):
        assert search(sql).query == VectorQuery(literal=literal)
    assert time.perf_counter() - started < 2.0


@given(st.text(max_size=300))
def test_any_text_parses_or_is_not_pgvector(sql: str) -> None:
    found = parse(sql)
    assert found is None or isinstance(found, VectorSearch | VectorInsert)


SQL_WORDS = (
    *("SELECT", "id", ",", "FROM", "t", "WHERE", "ORDER", "BY", "LIMIT", "$1", "$2", "'[1,2]'"),
    *("<->", "<=>", "<#>", "(", ")", "::", "vector", "AS", "d", "5", "INSERT", "INTO"),
    *("VALUES", "cosine_distance", "DESC", "FETCH", "FIRST", "WITH", "--", "/*", "'", '"'),
)
SQL_PIECES = st.sampled_from(SQL_WORDS)


@given(st.lists(SQL_PIECES, max_size=40))
def test_near_sql_parses_or_is_not_pgvector(pieces: list[str]) -> None:
    found = parse(" ".join(pieces))
    assert found is None or isinstance(found, VectorSearch | VectorInsert)


# -- calls from operations ------------------------------------------------------------------


def operation(statement: str, **kw: Any) -> Operation:
    given: dict[str, Any] = {
        "protocol": "postgresql",
        "kind": "execute",
        "index": 3,
        "command": statement.split()[0].upper(),
        "statement": statement,
        "started": 1.0,
        "request_ended": 1.0,
        "response_started": 1.1,
        "ended": 1.2,
        "request_complete": True,
        "response_complete": True,
    }
    given.update(kw)
    return Operation(**given)


def binary_vector(*components: float) -> dict[str, Any]:
    raw = struct.pack(f">HH{len(components)}f", len(components), 0, *components)
    return {"format": "binary", "base64": base64.b64encode(raw).decode()}


def call_of(op: Operation) -> Call | None:
    family = Pgvector()
    if family.match(op) <= 0:
        return None
    call = Call(id="call1", exchange_id="e1", api=family.api)
    family.parse(op, call)
    return call


def test_a_search_call_with_documents_from_the_rows() -> None:
    op = operation(
        "SELECT id, content, embedding, embedding <-> $1 AS distance, lang FROM items "
        "WHERE lang = $2 ORDER BY distance LIMIT $3",
        parameters=[binary_vector(0.5, 0.25), "en", {"format": "binary", "value": 2}],
        result="SELECT 2",
        rows=2,
        columns=["id", "content", "embedding", "distance", "lang"],
        values=[["7", "first", "[0.5,0.2]", "0.05", "en"], ["9", "second", "[1,1]", "0.9", "en"]],
    )
    call = call_of(op)
    assert call is not None and call.operation == "retrieval" and call.complete
    assert call.extras["retrieval"] == {
        "role": "vector_store",
        "service": "pgvector",
        "statement": op.statement,
        "data_source": "items",
        "vector_column": "embedding",
        "metric": "l2_distance",
        "queries": [{"vector_dimensions": 2, "vector_head": [0.5, 0.25]}],
        "top_k": 2,
        "filter": {"where": "lang = $2", "parameters": {"$2": "en"}},
        "score_column": "distance",
        "documents": 2,
    }
    (message,) = call.output_messages
    docs = [p.fields for p in message.parts if isinstance(p, GenericPart)]
    assert docs == [
        {
            "rank": 1,
            "id": "7",
            "score": 0.05,
            "score_kind": "distance",
            "content": "first",
            "metadata": {"lang": "en"},
        },
        {
            "rank": 2,
            "id": "9",
            "score": 0.9,
            "score_kind": "distance",
            "content": "second",
            "metadata": {"lang": "en"},
        },
    ]


def test_a_search_without_rows_kept_says_so() -> None:
    op = operation(
        "SELECT id FROM items ORDER BY embedding <=> '[1,0]' LIMIT 1000",
        rows=1500,
        columns=["id"],
        values=[["1"]],
        values_cut=True,
    )
    call = call_of(op)
    assert call is not None
    assert call.extras["retrieval"]["documents_cut"] is True
    assert call.extras["retrieval"]["documents"] == 1  # what was kept, never more


def test_an_unreadable_vector_is_left_out_not_made_up() -> None:
    op = operation(
        "SELECT id FROM items ORDER BY embedding <-> $1 LIMIT 3",
        parameters=[{"format": "binary", "base64": base64.b64encode(b"\x00\x09\x00\x00").decode()}],
    )
    call = call_of(op)
    assert call is not None and "queries" not in call.extras["retrieval"]


def test_an_error_is_the_calls_error() -> None:
    op = operation(
        "SELECT id FROM items ORDER BY embedding <-> $1::vector LIMIT 1",
        parameters=["[1,2]"],
        error={"severity": "ERROR", "code": "22000", "message": "different vector dimensions"},
    )
    call = call_of(op)
    assert call is not None and call.error is not None
    assert (call.error.code, call.error.source) == ("22000", "postgresql")
    assert call.output_messages == [] and call.complete


def test_writes_need_a_vector_on_the_wire() -> None:
    text = operation(
        "INSERT INTO items (content, embedding) VALUES ($1, $2)", parameters=["a", "[1,2]"]
    )
    assert call_of(text) is None  # a text parameter without a cast: its type is not known
    binary = operation(
        "INSERT INTO items (content, embedding) VALUES ($1, $2), ($3, $4)",
        parameters=["a", binary_vector(1, 2), "b", binary_vector(3, 4)],
        result="INSERT 0 2",
    )
    call = call_of(binary)
    assert call is not None and call.operation == "retrieval.write"
    assert call.extras["retrieval"] == {
        "role": "vector_store",
        "service": "pgvector",
        "statement": binary.statement,
        "data_source": "items",
        "endpoint": "insert",
        "count": 2,
        "vectors": 2,
        "dimensions": [2],
        "written": 2,
    }
    sparse = operation("INSERT INTO items (embedding) VALUES ('{1:1,3:2}/5'::sparsevec)")
    call = call_of(sparse)
    assert call is not None and call.extras["retrieval"]["dimensions"] == [5]


def test_other_protocols_and_kinds_are_not_read() -> None:
    sql = "SELECT id FROM items ORDER BY embedding <-> '[1]' LIMIT 1"
    assert call_of(operation(sql, protocol="mysql")) is None
    assert call_of(operation(sql, kind="parse")) is None


def test_plain_inserts_are_not_writes_of_vectors() -> None:
    assert (
        call_of(operation("INSERT INTO notes (body, n) VALUES ($1, $2)", parameters=["a", "1"]))
        is None
    )
    assert call_of(operation("INSERT INTO flags (f) VALUES (B'101'::bit(3))")) is None  # core type
    bulk = "INSERT INTO notes (body) VALUES " + ",".join(["('x')"] * 100_000)
    started = time.perf_counter()
    assert call_of(operation(bulk)) is None
    assert time.perf_counter() - started < 0.5  # looked at, never tokenized


def test_a_long_binary_filter_value_is_kept_by_its_size() -> None:
    blob = {"format": "binary", "base64": base64.b64encode(b"\x01" * 4000).decode()}
    op = operation(
        "SELECT id FROM items WHERE sig = $2 ORDER BY embedding <-> $1 LIMIT 1",
        parameters=["[1,2]", blob],
    )
    call = call_of(op)
    assert call is not None
    assert call.extras["retrieval"]["filter"]["parameters"] == {
        "$2": {"format": "binary", "size": 4000}
    }


def test_a_long_statement_is_kept_by_its_head_and_length() -> None:
    literal = "[" + ",".join(["0.5"] * 2000) + "]"
    op = operation(f"SELECT id FROM items ORDER BY embedding <-> '{literal}' LIMIT 2")
    call = call_of(op)
    assert call is not None
    info = call.extras["retrieval"]
    assert info["statement"] == (op.statement or "")[:4096]
    assert info["statement_chars"] == len(op.statement or "")
    assert info["queries"][0]["vector_dimensions"] == 2000


def test_a_tool_whose_sql_argument_is_the_search_links_to_it() -> None:
    """An agent's ``run_sql`` tool sends the search itself: its argument is in the call's
    statement (as it was in the SQL operation's body before the search was recognized)."""
    from agentshark.apis.model import ToolCallPart
    from agentshark.trace.retrieval import tool_work

    sql = "SELECT id, content FROM items ORDER BY embedding <=> '[1,0,0]' LIMIT 3"
    call = call_of(operation(sql, columns=["id", "content"], values=[["1", "a"]]))
    assert call is not None
    call.timing.started = 1.0
    part = ToolCallPart(id="call_1", name="run_sql", arguments={"sql": sql})
    ((found, evidence, confidence),) = tool_work(part, lambda _: True, [call], set())
    assert found is call and confidence == 0.6
    assert "holds every argument value" in evidence
