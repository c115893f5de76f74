"""How a tool call's arguments are found in a call that may have executed it.

A model's tool call is only an object in a response; the tool runs as some other request.
:func:`argument_values` is what every match looks for: the scalar values of the arguments,
as text. :func:`graphql_match` matches a GraphQL call (:mod:`agentshark.apis.graphql`) by its
operations' variables, strongest first:

- 1.0: an operation's ``variables`` equal the arguments (same keys and values);
- 0.8: every argument value is one of an operation's variable values (other names, more
  variables);
- 0.6: every argument value is in an operation's variables or its document (an inlined
  literal: ``weather(city: "Paris")``).

The trace keeps slim calls (:func:`agentshark.trace.collect.slim`): a string longer than
256 characters is its head and digest on both sides, so long values still match, but a
long document is searched in its head only.
"""

from __future__ import annotations

import orjson

from agentshark.apis.model import Json


def argument_values(arguments: Json) -> list[str]:
    """The scalar values of a tool call's arguments, as text (strings of 2+ characters)."""
    out: list[str] = []
    stack = [arguments]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
        elif isinstance(value, str) and len(value) >= 2:
            out.append(value)
        elif isinstance(value, int | float) and not isinstance(value, bool):
            out.append(str(value))
    return out


def graphql_match(arguments: Json, operations: list[dict[str, Json]]) -> tuple[str, float] | None:
    """(evidence, confidence) that a GraphQL call with ``operations`` ran a tool call with
    ``arguments``, or None."""
    values = argument_values(arguments)
    best: tuple[str, float] | None = None
    for op in operations:
        found = _one(arguments, values, op)
        if found is not None and (best is None or found[1] > best[1]):
            best = found
    return best


def _one(arguments: Json, values: list[str], op: dict[str, Json]) -> tuple[str, float] | None:
    what = " ".join(str(x) for x in ("GraphQL", op.get("type"), op.get("name")) if x)
    variables = op.get("variables")
    if (
        isinstance(arguments, dict)
        and arguments
        and isinstance(variables, dict)
        and _canonical(arguments) == _canonical(variables)
    ):
        return f"{what}: its variables are the tool call's arguments", 1.0
    if not values:
        return None
    own = set(argument_values(variables))
    if all(v in own for v in values):
        return f"{what}: every argument value is one of its variables", 0.8
    text = str(op.get("document") or "") + "\n" + orjson.dumps(variables).decode()
    if all(v in text for v in values):
        return f"{what}: its document and variables hold every argument value", 0.6
    return None


def _canonical(value: Json) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
