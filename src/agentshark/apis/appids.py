"""Application ids an agent or SDK put on the wire: request headers and body -> ``AppId`` list.

Session, turn, task, run, conversation, user, thread and non-W3C trace ids have no standard
name (seed 000 §6.5.1): ``x-session-id``, ``x-claude-code-session-id``, ``X-Amzn-Trace-Id``,
a body's ``session_id``, Anthropic's ``metadata.user_id``. So an id is found by the *shape of
its name*, never by a fixed list, and it is reported with the name and place exactly as
found. Its ``kind`` classifies the name only, for grouping: an id under ``x-run-id`` is "what
the sender called a run id", not a run in any shared sense, and a ``trace`` kind is never a
W3C trace-id (``context.parse_traceparent`` reads those).

The name rule, over the name split into lowercase tokens at ``-``, ``_``, ``.`` and (JSON
keys only) camelCase humps: the last token is ``id`` or ``uuid`` and the one before it is a
kind word (``session``, ``turn``, ``task``, ``run``, ``conversation``, ``user``, ``thread``,
``trace``, ``request``, ``agent``), or the last token is a kind word glued to ``id``
(``sessionid``). Never taken:

- a name with a credential word (``auth``, ``token``, ``key``, ``secret``, ``cookie``...):
  the value may be a secret;
- ``x-stainless-*`` (the OpenAI and Anthropic SDKs' runtime metadata), ``mcp-session-id``
  (MCP's own, read by ``apis.mcp.calls``), ``traceparent``/``tracestate``/``baggage``;
- names that merely contain a kind word (``user-agent``, ``x-amzn-bedrock-trace: ENABLED``,
  ``x-goog-user-project``): they do not end in an id.

Body: top-level keys by the same rule, plus OpenAI's ``user`` (an end-user id) and
``conversation`` (Responses: ``"conv_…"`` or ``{"id": "conv_…"}``); then one level into
``metadata`` (Anthropic ``metadata.user_id``, OpenAI's developer tags) and into ``request``
(the Gemini Code Assist envelope ``{model, project, request: {…, session_id}}`` that Gemini
CLI sends). Nothing deeper: A2A and MCP ids live in ``params`` and are read by their own
parsers. ``prompt_cache_key`` is not taken: it is a cache key, and the corpus uses it as one
(``"pydantic-ai-prompt-cache-e2e-chat"``), not as a session id.

Values are strings or integers (integers as decimal text), 1-512 characters, kept whole:
Claude Code's ``metadata.user_id`` (``user_<hash>_account_<uuid>_session_<uuid>`` in recent
versions) is one ``user`` id, not split.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from agentshark.apis.model import Json

KINDS = frozenset(
    {
        "session",
        "turn",
        "task",
        "run",
        "conversation",
        "user",
        "thread",
        "trace",
        "request",
        "agent",
    }
)
_ID_WORDS = frozenset({"id", "uuid"})
_GLUED = {kind + "id": kind for kind in KINDS}
_CREDENTIAL_WORDS = frozenset(
    {
        "auth",
        "authorization",
        "apikey",
        "bearer",
        "cookie",
        "credential",
        "credentials",
        "key",
        "passwd",
        "password",
        "secret",
        "signature",
        "token",
    }
)
_EXCLUDED_HEADERS = frozenset({"mcp-session-id", "traceparent", "tracestate", "baggage"})
_EXCLUDED_HEADER_PREFIXES = ("x-stainless-",)
_BODY_CONTAINERS = ("metadata", "request")
MAX_VALUE_CHARS = 512

_SEPARATORS = re.compile(r"[-_.]+")
_CAMEL_HUMP = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


@dataclass(frozen=True, slots=True, kw_only=True)
class AppId:
    """An application id as found: ``name`` and ``value`` exactly as sent.

    ``location`` says where: ``"request header x-session-id"``, ``"request body user"``,
    ``"request body metadata.user_id"``. ``kind`` is one of :data:`KINDS` and classifies the
    *name* only; it never means more than the name says.
    """

    name: str
    value: str
    location: str
    kind: str


def header_app_ids(headers: Sequence[tuple[str, str]]) -> list[AppId]:
    """The application ids in a request's headers, in header order."""
    found: list[AppId] = []
    for name, value in headers:
        lname = name.lower()
        if "id" not in lname:  # every id name ends in "id"/"uuid": most headers stop here
            continue
        if lname in _EXCLUDED_HEADERS or lname.startswith(_EXCLUDED_HEADER_PREFIXES):
            continue
        kind = _kind(_SEPARATORS.split(lname))
        if kind is not None and _usable(value):
            found.append(
                AppId(name=name, value=value, location=f"request header {name}", kind=kind)
            )
    return found


def body_app_ids(body: Json) -> list[AppId]:
    """The application ids in a decoded request body (any JSON value), in key order."""
    if not isinstance(body, dict):
        return []
    found: list[AppId] = []
    for key, value in body.items():
        if key == "user":
            found.extend(_take(key, value, "request body user", "user"))
        elif key == "conversation":
            found.extend(_conversation(value))
        elif (kind := _key_kind(key)) is not None:
            found.extend(_take(key, value, f"request body {key}", kind))
    for container in _BODY_CONTAINERS:
        inner = body.get(container)
        if not isinstance(inner, dict):
            continue
        for key, value in inner.items():
            if (kind := _key_kind(key)) is not None:
                found.extend(_take(key, value, f"request body {container}.{key}", kind))
    return found


def _conversation(value: Json) -> Iterable[AppId]:
    """OpenAI Responses ``conversation``: an id string, or an object with an ``id``."""
    if isinstance(value, dict):
        return _take(
            "conversation", value.get("id"), "request body conversation.id", "conversation"
        )
    return _take("conversation", value, "request body conversation", "conversation")


def _take(name: str, value: Json, location: str, kind: str) -> Iterable[AppId]:
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if isinstance(value, str) and _usable(value):
        yield AppId(name=name, value=value, location=location, kind=kind)


def _usable(value: str) -> bool:
    return bool(value.strip()) and len(value) <= MAX_VALUE_CHARS


def name_kind(name: str) -> str | None:
    """The kind an id's name says (header or JSON key), or None when it names no id."""
    return _key_kind(name)


def _key_kind(key: object) -> str | None:
    """The kind of a JSON key's name (camelCase humps split too), or None."""
    if not isinstance(key, str):
        return None
    return _kind(_SEPARATORS.split(_CAMEL_HUMP.sub("_", key).lower()))


def _kind(tokens: Sequence[str]) -> str | None:
    """The kind named by a token list ending in ``<kind> id`` or ``<kind>id``, or None."""
    if not tokens or any(t in _CREDENTIAL_WORDS for t in tokens):
        return None
    if len(tokens) >= 2 and tokens[-1] in _ID_WORDS and tokens[-2] in KINDS:
        return tokens[-2]
    return _GLUED.get(tokens[-1])
