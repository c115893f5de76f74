"""pgvector statements read from their SQL text: ``str -> VectorSearch | VectorInsert | None``.

pgvector (https://github.com/pgvector/pgvector#querying) searches by ordering on a distance
operator and limiting: ``SELECT ... FROM items [WHERE ...] ORDER BY embedding <-> $1 LIMIT 5``.
Its operators: ``<->`` L2 distance, ``<#>`` negative inner product, ``<=>`` cosine distance,
``<+>`` L1 distance, ``<~>`` Hamming distance, ``<%>`` Jaccard distance; the same metrics as
functions (``l2_distance(a, b)``, ``inner_product``, ``cosine_distance``, ``l1_distance``...).
A query vector is a literal (``'[1,2,3]'``, cast or not), or a bound parameter (``$1``,
``$1::vector``).

A statement is a search when one SELECT of it (the statement itself, or a parenthesized
subquery or CTE, the outermost first) orders first by a distance (an operator or function
between a column and a vector, or the alias or position of a selected distance) and has a
``LIMIT`` or ``FETCH FIRST``: a kNN query. A distance that is only selected or filtered on
(``WHERE embedding <-> $1 < 0.5``) is not. An ``INSERT ... VALUES`` whose values include a
vector (a cast to ``vector``/``halfvec``/``sparsevec``, or a bound parameter the caller reads
as one, see :mod:`agentshark.apis.retrieval.pgvector`) is a write.

The text is read as tokens nested by parentheses (:mod:`.sql_lex`: one linear pass), and
clause keywords are looked up at each level of the tree; hand-written, as no SQL library of
the field is a dependency. Statements longer than :data:`MAX_STATEMENT` characters are not
read.
"""

from __future__ import annotations

from dataclasses import dataclass

from agentshark.apis.retrieval.sql_lex import (
    Group,
    Item,
    Token,
    is_text,
    split,
    string_value,
    token_texts,
    tokens,
    tree,
    word_at,
)

MAX_STATEMENT = 1 << 20  # characters of a statement read for pgvector
METRICS = {  # operator -> metric (pgvector's function of the same distance)
    "<->": "l2_distance",
    "<#>": "negative_inner_product",
    "<=>": "cosine_distance",
    "<+>": "l1_distance",
    "<~>": "hamming_distance",
    "<%>": "jaccard_distance",
}
FUNCTIONS = {
    "l2_distance": "l2_distance",
    "inner_product": "inner_product",
    "cosine_distance": "cosine_distance",
    "l1_distance": "l1_distance",
    "hamming_distance": "hamming_distance",
    "jaccard_distance": "jaccard_distance",
}
VECTOR_TYPES = frozenset({"vector", "halfvec", "sparsevec"})  # bit is PostgreSQL's own
_ENDS = frozenset({"FROM", "WHERE", "GROUP", "HAVING", "WINDOW", "ORDER", "LIMIT", "OFFSET"})
_CLAUSES = _ENDS | {"FETCH", "FOR", "UNION", "INTERSECT", "EXCEPT", "RETURNING"}
_SET_OPERATIONS = frozenset({"UNION", "INTERSECT", "EXCEPT"})


@dataclass(frozen=True, slots=True, kw_only=True)
class VectorQuery:
    """The query vector of a search: a bound parameter (1-based ``parameter``) or a literal's
    text, and the type it is cast to."""

    parameter: int | None = None
    literal: str | None = None
    cast: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class VectorSearch:
    """A kNN search: the table, the vector column, the metric and order, the query vector,
    ``LIMIT`` (a number, or the parameter bound to it), the ``WHERE`` text and the
    parameters it uses, and the selected columns (output name or None each, ``star`` when
    a ``*`` makes their positions unknown) with which one is the distance."""

    table: str | None
    column: str | None
    metric: str
    descending: bool
    query: VectorQuery | None
    limit: int | None
    limit_parameter: int | None
    where: str | None
    where_parameters: list[int]
    selected: list[str | None]
    star: bool
    distance_column: int | None  # index into ``selected`` of the selected distance
    distance_exact: bool  # that column is the distance itself, not an expression of it


@dataclass(frozen=True, slots=True, kw_only=True)
class VectorInsert:
    """An ``INSERT ... VALUES``: the table, the columns named (empty: none named), and per
    row its values, each a :class:`VectorQuery` when it is a parameter or a literal (with the
    cast it has), else None. Which are vectors the caller decides: a cast to one of
    :data:`VECTOR_TYPES`, or a bound value whose bytes are a vector."""

    table: str | None
    columns: list[str]
    rows: list[list[VectorQuery | None]]


Statement = VectorSearch | VectorInsert


def parse(sql: str) -> Statement | None:
    """What ``sql`` is to pgvector: a search, a write of vectors, or None (anything else)."""
    if len(sql) > MAX_STATEMENT:
        return None
    low = sql.lower()
    marked = any(op in sql for op in METRICS) or "_distance" in low or "inner_product" in low
    if not marked and "insert" not in low:
        return None  # the common case: a few passes over the text, no tokens
    root = tree(tokens(sql))
    first = word_at(root.items, 0)
    if first == "INSERT":
        return _insert(root.items)
    for scope in _scopes(root):
        found = _search(sql, scope)
        if found is not None:
            return found
    return None


def _scopes(root: Group) -> list[list[Item]]:
    """The item lists that may be a SELECT: the statement, then each group, outermost first
    (breadth first, bounded by the groups there are)."""
    out: list[list[Item]] = []
    level = [root]
    while level:
        nxt: list[Group] = []
        for group in level:
            items = group.items
            start = _select_start(items)
            if start is not None:
                out.append(items[start:])
            nxt.extend(i for i in items if isinstance(i, Group))
        level = nxt
    return out


def _select_start(items: list[Item]) -> int | None:
    """Where the SELECT of ``items`` begins: the first word, or after a WITH's CTEs."""
    if word_at(items, 0) == "SELECT":
        return 0
    if word_at(items, 0) != "WITH":
        return None
    for i, item in enumerate(items):
        if isinstance(item, Token) and item.upper == "SELECT":
            return i
    return None


def _clauses(items: list[Item]) -> dict[str, tuple[int, int]]:
    """Each clause keyword of this level (the first of each) -> its items' span."""
    marks: list[tuple[str, int]] = []
    for i, item in enumerate(items):
        word = item.upper if isinstance(item, Token) else ""
        if word in _CLAUSES or (word == "SELECT" and i == 0):
            if word in ("ORDER", "GROUP") and word_at(items, i + 1) != "BY":
                continue
            marks.append((word, i))
    out: dict[str, tuple[int, int]] = {}
    for n, (word, i) in enumerate(marks):
        skip = 2 if word in ("ORDER", "GROUP") else 1
        end = marks[n + 1][1] if n + 1 < len(marks) else len(items)
        out.setdefault(word, (i + skip, end))
    return out


def _search(sql: str, items: list[Item]) -> VectorSearch | None:
    spans = _clauses(items)
    if "ORDER" not in spans or not _SET_OPERATIONS.isdisjoint(spans):
        return None
    if "LIMIT" not in spans and "FETCH" not in spans:
        return None
    select = split(items[slice(*spans["SELECT"])]) if "SELECT" in spans else []
    selected = [_output_name(e) for e in select]
    star = any(_is_star(e) for e in select)
    keys = split(items[slice(*spans["ORDER"])])
    if not keys:
        return None
    key, descending = _sort_key(keys[0])
    distance = _distance(key)
    column_index = None
    if distance is None:  # the alias or position of a selected distance
        column_index = _selected_index(key, selected, len(select))
        if column_index is None:
            return None
        distance = _distance(select[column_index])
        if distance is None:
            return None
    metric, column, vector = distance
    if column_index is None:  # the same distance selected (its vector maybe another $n)
        column_index = next(
            (n for n, e in enumerate(select) if _same_distance(_distance(e), distance)), None
        )
    limit, limit_parameter = _limit(items, spans)
    where = spans.get("WHERE")
    where_items = items[slice(*where)] if where else []
    exact = column_index is not None and _distance(_strip_alias(select[column_index]), exact=True)
    return VectorSearch(
        table=_table(items[slice(*spans["FROM"])]) if "FROM" in spans else None,
        column=column,
        metric=metric,
        descending=descending,
        query=vector,
        limit=limit,
        limit_parameter=limit_parameter,
        where=_text(sql, where_items) if where_items else None,
        where_parameters=_parameters(where_items),
        selected=selected,
        star=star,
        distance_column=column_index,
        distance_exact=bool(exact),
    )


def _same_distance(a: Distance | None, b: Distance) -> bool:
    """The same metric on the same column; literal vectors, when both are, the same."""
    if a is None or a[:2] != b[:2]:
        return False
    la, lb = (a[2].literal if a[2] else None), (b[2].literal if b[2] else None)
    return la is None or lb is None or la == lb


def _sort_key(key: list[Item]) -> tuple[list[Item], bool]:
    """A sort key without its ASC/DESC/NULLS words; whether it is descending."""
    descending = False
    while (
        key
        and isinstance(key[-1], Token)
        and key[-1].upper in ("ASC", "DESC", "FIRST", "LAST", "NULLS")
    ):
        descending = descending or key[-1].upper == "DESC"
        key = key[:-1]
    return key, descending


def _is_star(expr: list[Item]) -> bool:
    last = expr[-1]
    return (
        isinstance(last, Token)
        and last.kind == "op"
        and last.text == "*"
        and (len(expr) == 1 or (isinstance(expr[-2], Token) and expr[-2].text == "."))
    )


def _strip_alias(expr: list[Item]) -> list[Item]:
    if len(expr) > 2 and word_at(expr, len(expr) - 2) == "AS":
        return expr[:-2]
    if len(expr) > 1 and _bare_alias(expr):
        return expr[:-1]
    return expr


def _bare_alias(expr: list[Item]) -> bool:
    last, before = expr[-1], expr[-2]
    return (
        isinstance(last, Token)
        and last.kind in ("word", "quoted")
        and last.upper not in _CLAUSES
        and not (isinstance(before, Token) and before.kind in ("op", "punct"))
    )


def _output_name(expr: list[Item]) -> str | None:
    """A select item's column name: its alias, or a column reference's last name."""
    if len(expr) > 2 and word_at(expr, len(expr) - 2) == "AS":
        last = expr[-1]
        return last.name if isinstance(last, Token) else None
    if len(expr) > 1 and _bare_alias(expr):
        last = expr[-1]
        return last.name if isinstance(last, Token) else None
    if all(isinstance(i, Token) and (i.kind in ("word", "quoted") or i.text == ".") for i in expr):
        last = expr[-1]
        return last.name if isinstance(last, Token) and last.kind != "punct" else None
    return None


def _selected_index(key: list[Item], selected: list[str | None], count: int) -> int | None:
    if len(key) != 1 or not isinstance(key[0], Token):
        return None
    tok = key[0]
    if tok.kind == "number" and tok.text.isdigit():
        n = int(tok.text)
        return n - 1 if 1 <= n <= count else None
    if tok.kind in ("word", "quoted") and tok.name in selected:
        return selected.index(tok.name)
    return None


Distance = tuple[str, str | None, VectorQuery | None]  # metric, column, query vector


def _distance(expr: list[Item], *, exact: bool = False) -> Distance | None:
    """The distance an expression computes (anywhere in it, or with ``exact`` only when it is
    that distance alone, parenthesized or not)."""
    while exact and len(expr) == 1 and isinstance(expr[0], Group):
        expr = expr[0].items
    for i, item in enumerate(expr):
        if isinstance(item, Token) and item.kind == "op" and item.text in METRICS:
            left, right = _operand(expr[:i], before=True), _operand(expr[i + 1 :], before=False)
            if exact and (left[1] != i or right[1] != len(expr) - i - 1):
                return None
            return _pair(METRICS[item.text], left[0], right[0])
        if isinstance(item, Token) and item.kind == "word" and item.name in FUNCTIONS:
            args = expr[i + 1] if i + 1 < len(expr) else None
            if isinstance(args, Group):
                parts = split(args.items)
                if len(parts) == 2 and (not exact or len(expr) == 2):
                    a, b = _operand(parts[0], before=False), _operand(parts[1], before=False)
                    return _pair(FUNCTIONS[item.name], a[0], b[0])
        if isinstance(item, Group) and not exact:
            inner = _distance(item.items)
            if inner is not None:
                return inner
    return None


Operand = tuple[list[Item], int]  # the operand's items, how many items it took


def _operand(items: list[Item], *, before: bool) -> Operand:
    """The operand next to an operator: a name (``t.embedding``), a parameter or literal
    with its casts (``$1::vector(3)``), a ``CAST(...)``, an ``ARRAY[...]``, or a group."""
    if before:
        i = len(items) - 1
        while i >= 0:  # back over casts (``::vector(3)``) and dotted names
            if isinstance(items[i], Group) and i >= 2 and is_text(items[i - 2], "::"):
                i -= 1  # the type's modifier: to its name
            if i >= 2 and is_text(items[i - 1], "::", "."):
                i -= 2
                continue
            break
        i = max(i, 0)
        return items[i:], len(items) - i
    taken = 2 if word_at(items, 0) in ("CAST", "ARRAY") and len(items) > 1 else 1
    while taken + 1 < len(items) and is_text(items[taken], "."):  # t.embedding
        taken += 2
    while taken < len(items) and is_text(items[taken], "::"):
        taken += 2
        if taken < len(items) and isinstance(items[taken], Group):
            taken += 1  # vector(3)
    return items[:taken], min(taken, len(items))


def _pair(metric: str, a: list[Item], b: list[Item]) -> Distance:
    va, vb = _vector(a), _vector(b)
    column = _column(a) if vb is not None or va is None else _column(b)
    return metric, column, vb if vb is not None else va


def _column(items: list[Item]) -> str | None:
    """A column reference (``t.embedding``, casts after it left out), else None."""
    names: list[str] = []
    for item in items:
        if is_text(item, "::"):
            break
        if not isinstance(item, Token) or item.kind not in ("word", "quoted", "punct"):
            return None
        if item.kind == "punct" and item.text != ".":
            return None
        if item.text != ".":
            names.append(item.name)
    return ".".join(names) or None


def _vector(items: list[Item]) -> VectorQuery | None:
    """The query vector an operand is, or None (a column)."""
    if not items:
        return None
    head = items[0]
    cast = _cast(items)
    if isinstance(head, Token) and head.upper == "CAST" and len(items) > 1:
        inner = items[1]
        if isinstance(inner, Group):
            found = _vector(inner.items)
            as_at = next((n for n, i in enumerate(inner.items) if word_at([i], 0) == "AS"), None)
            kind = word_at(inner.items, as_at + 1).lower() if as_at is not None else ""
            if found is not None:
                return VectorQuery(
                    parameter=found.parameter, literal=found.literal, cast=kind or found.cast
                )
        return None
    if isinstance(head, Token) and head.upper == "ARRAY" and len(items) > 1:
        inside: list[Item] = [head]
        if isinstance(items[1], Group) and items[1].bracket:
            inside = items[1].items
        if all(isinstance(i, Token) and i.kind in ("number", "op", "punct") for i in inside):
            return VectorQuery(literal="[" + "".join(token_texts(inside)) + "]", cast=cast)
        return None
    if isinstance(head, Token) and head.kind == "param":
        return VectorQuery(parameter=int(head.text[1:]), cast=cast)
    if isinstance(head, Token) and head.kind == "string":
        return VectorQuery(literal=string_value(head.text), cast=cast)
    if isinstance(head, Group) and len(items) == 1:
        return _vector(head.items)
    return None


def _cast(items: list[Item]) -> str | None:
    for n, item in enumerate(items[:-1]):
        if is_text(item, "::"):
            name = word_at(items, n + 1).lower()
            if name:
                return name
    return None


def _limit(items: list[Item], spans: dict[str, tuple[int, int]]) -> tuple[int | None, int | None]:
    """``LIMIT n`` / ``FETCH FIRST n ROWS ONLY``: the number, or the parameter bound to it."""
    if "LIMIT" in spans:
        part = items[slice(*spans["LIMIT"])]
    else:
        part = items[slice(*spans["FETCH"])][1:]  # after FIRST/NEXT
    head = part[0] if part else None
    while isinstance(head, Group) and len(head.items) == 1:
        head = head.items[0]
    if isinstance(head, Token) and head.kind == "number" and head.text.isdigit():
        return int(head.text), None
    if isinstance(head, Token) and head.kind == "param":
        return None, int(head.text[1:])
    return None, None


def _table(items: list[Item]) -> str | None:
    """The first table of a FROM: ``[ONLY] [schema.]name``; None for a subquery."""
    i = 1 if word_at(items, 0) == "ONLY" else 0
    names = []
    while i < len(items):
        item = items[i]
        if not isinstance(item, Token) or item.kind not in ("word", "quoted"):
            break
        names.append(item.name)
        if not is_text(items[i + 1] if i + 1 < len(items) else Group(), "."):
            break
        i += 2
    return ".".join(names) or None


def _text(sql: str, items: list[Item]) -> str:
    first, last = items[0], items[-1]
    return " ".join(sql[first.start : last.end].split())


def _parameters(items: list[Item]) -> list[int]:
    out: list[int] = []
    stack = list(reversed(items))
    while stack:
        item = stack.pop()
        if isinstance(item, Group):
            stack.extend(reversed(item.items))
        elif item.kind == "param":
            n = int(item.text[1:])
            if n not in out:
                out.append(n)
    return out


def _insert(items: list[Item]) -> VectorInsert | None:
    """``INSERT INTO t [(cols)] VALUES (...), ...``: its rows' values."""
    if word_at(items, 1) != "INTO":
        return None
    table = _table(items[2:])
    i = 2
    while i < len(items) and isinstance(items[i], Token) and word_at(items, i) != "VALUES":
        i += 1
    columns: list[str] = []
    group = items[i] if i < len(items) else None
    if isinstance(group, Group):
        columns = [_output_name(c) or "" for c in split(group.items)]
        i += 1
    if word_at(items, i) != "VALUES":
        return None
    rows: list[list[VectorQuery | None]] = []
    for item in items[i + 1 :]:
        if isinstance(item, Token):
            if item.kind == "punct" and item.text == ",":
                continue
            break  # ON CONFLICT, RETURNING: the rows are over
        rows.append([_vector(value) for value in split(item.items)])
    return VectorInsert(table=table, columns=columns, rows=rows) if rows else None
