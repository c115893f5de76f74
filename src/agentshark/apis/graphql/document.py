"""A GraphQL document, read enough to say what it asks: its operations' type and name, and
the root fields each selects.

The document is parsed by graphql-core (the Python port of the reference implementation,
https://github.com/graphql-python/graphql-core), following the GraphQL specification's
grammar (https://spec.graphql.org/October2021/#sec-Document). A text that does not parse is
not a GraphQL document: the reason (the parser's message and position) is returned instead,
never an exception. Parsing is bounded: a document longer than :data:`MAX_DOCUMENT` characters
or with more than :data:`MAX_TOKENS` tokens is not parsed (graphql-core's own ``max_tokens``
guard), and one nested deeper than Python's recursion limit is reported as too deep.

The operation a request runs is chosen as the specification's ``GetOperation`` does
(https://spec.graphql.org/October2021/#GetOperation()): the one named by ``operationName``, or
the only operation when no name is given; anything else is a request error, said in
:attr:`Selection.problem`.
"""

from __future__ import annotations

from dataclasses import dataclass

from graphql import GraphQLError, parse
from graphql.language import FieldNode, OperationDefinitionNode

MAX_DOCUMENT = 1 << 20  # characters
MAX_TOKENS = 100_000


@dataclass(frozen=True, slots=True, kw_only=True)
class Operation:
    """One operation definition: ``type`` is ``query``, ``mutation`` or ``subscription``;
    ``name`` None for an anonymous one (the ``{ ... }`` shorthand is an anonymous query);
    ``root_fields`` the response keys of its top-level selection as written (``alias: field``
    gives ``alias=field``), fragments spread at the top level left out."""

    type: str
    name: str | None
    root_fields: tuple[str, ...]
    variables: tuple[str, ...]  # declared variable names, without ``$``


@dataclass(frozen=True, slots=True, kw_only=True)
class Document:
    operations: tuple[Operation, ...]
    fragments: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Selection:
    """The operation a request runs (None when it cannot be told), and why not."""

    operation: Operation | None
    problem: str | None


def parse_document(text: str) -> Document | str:
    """``text`` as a GraphQL executable document, or why it is not one."""
    if len(text) > MAX_DOCUMENT:
        return f"the document has {len(text)} characters, more than the {MAX_DOCUMENT} parsed"
    try:
        node = parse(text, no_location=True, max_tokens=MAX_TOKENS)
    except GraphQLError as exc:
        return f"not GraphQL: {exc.message}" + _where(exc)
    except RecursionError:
        return "the document is nested deeper than the parser can follow"
    operations: list[Operation] = []
    fragments = 0
    for definition in node.definitions:
        if isinstance(definition, OperationDefinitionNode):
            operations.append(_operation(definition))
        elif definition.kind == "fragment_definition":
            fragments += 1
    if not operations:
        return "the document defines no operation (only types, schema or fragments)"
    return Document(operations=tuple(operations), fragments=fragments)


def select(document: Document, operation_name: str | None) -> Selection:
    """The operation ``operation_name`` names in ``document`` (GetOperation)."""
    ops = document.operations
    if operation_name is None:
        if len(ops) == 1:
            return Selection(operation=ops[0], problem=None)
        return Selection(
            operation=None,
            problem=f"the document defines {len(ops)} operations and the request names none "
            "(operationName): the server cannot tell which to run",
        )
    found = [op for op in ops if op.name == operation_name]
    if len(found) == 1:
        return Selection(operation=found[0], problem=None)
    return Selection(
        operation=None,
        problem=f"operationName {operation_name!r} names "
        f"{'no' if not found else 'more than one'} operation of the document",
    )


def _operation(node: OperationDefinitionNode) -> Operation:
    fields: list[str] = []
    for sel in node.selection_set.selections:
        if isinstance(sel, FieldNode):
            name = sel.name.value
            fields.append(f"{sel.alias.value}={name}" if sel.alias is not None else name)
    return Operation(
        type=node.operation.value,
        name=node.name.value if node.name is not None else None,
        root_fields=tuple(fields),
        variables=tuple(v.variable.name.value for v in node.variable_definitions or ()),
    )


def _where(exc: GraphQLError) -> str:
    locations = exc.locations or []
    if not locations:
        return ""
    return f" (line {locations[0].line} column {locations[0].column})"
