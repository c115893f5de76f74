"""What the Bedrock Runtime wire says around the bodies: routes, model ids, errors, usage and
event stream messages.

Routes (https://docs.aws.amazon.com/bedrock/latest/APIReference/API_Operations_Amazon_Bedrock_Runtime.html):
``POST /model/{modelId}/converse``, ``/converse-stream``, ``/invoke``,
``/invoke-with-response-stream`` and ``/count-tokens``. ``modelId`` is a model id
(``amazon.nova-micro-v1:0``), a cross-region inference profile (``us.anthropic.claude-…``), or
an ARN (``arn:aws:bedrock:us-east-1:…:inference-profile/…``, imported and SageMaker models), all
URL-encoded in the path (``%3A``, ``%2F``): the route decodes it.

Errors are AWS REST-JSON errors (as botocore's ``RestJSONParser`` reads them): the code is the
``x-amzn-errortype`` header up to its first ``:`` (else the body's ``__type`` after its last
``#``, else ``code``), the message the body's ``message`` or ``Message``. Inside an event stream an
exception is a message with ``:message-type`` ``exception`` whose ``:exception-type`` names it
(``throttlingException``, ``modelStreamErrorException``, ``validationException``...) and whose
JSON payload has the ``message``; ``:message-type`` ``error`` carries ``:error-code`` and
``:error-message`` headers instead.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import unquote

import orjson

from agentshark.apis.model import CallError, Json, Usage
from agentshark.apis.view import ExchangeView
from agentshark.errors import Diagnostic
from agentshark.framing.events import EventStreamMessage
from agentshark.model import header

__all__ = [
    "PROVIDER",
    "Route",
    "count",
    "error_of",
    "exception_error",
    "messages",
    "route_of",
    "usage_of",
    "vendor_of",
]

PROVIDER = "aws.bedrock"  # the OpenTelemetry gen_ai.provider.name value

_ROUTE = re.compile(
    r"/model/(?P<id>[^/]+)/(?P<op>converse|converse-stream|invoke|invoke-with-response-stream|"
    r"count-tokens)$"
)
# cross-region inference profile prefixes (https://docs.aws.amazon.com/bedrock/latest/userguide/inference-profiles-support.html)
_REGION_PREFIXES = frozenset({"us", "eu", "apac", "global", "us-gov", "jp", "au", "ca"})


@dataclass(frozen=True, slots=True)
class Route:
    operation: str  # "converse", "converse-stream", "invoke", ...
    model: str  # URL-decoded
    stream: bool


def route_of(view: ExchangeView) -> Route | None:
    """The Bedrock Runtime operation the request path names, or None."""
    return _route(view.path)


@functools.lru_cache(maxsize=1024)
def _route(path: str) -> Route | None:
    if "/model/" not in path:
        return None
    m = _ROUTE.search(path)
    if m is None:
        return None
    op = m.group("op")
    return Route(op, unquote(m.group("id")), op.endswith("stream"))


@functools.lru_cache(maxsize=1024)
def vendor_of(model: str) -> str | None:
    """The model vendor a model id names (``amazon``, ``anthropic``, ``meta``, ``mistral``,
    ``cohere``, ``ai21``, ``deepseek``, ``openai``...), through inference profiles and
    foundation-model ARNs; None for ids that do not say (application inference profiles,
    imported and SageMaker models)."""
    if model.startswith("arn:"):
        resource = model.split(":", 5)[-1]
        kind, _, name = resource.partition("/")
        if kind not in ("foundation-model", "inference-profile"):
            return None
        model = name
    head, _, rest = model.partition(".")
    if head in _REGION_PREFIXES and rest:
        head = rest.partition(".")[0]
    return head or None


_EXACT = 2**53  # floats are exact integers up to here (IEEE 754 binary64)


def count(value: Json) -> int | None:
    """A token count: an int, or a float with no fraction (Titan streams send ``28.0``) that
    is an exact integer (``1e308`` is not a count)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer() and abs(value) <= _EXACT:
        return int(value)
    return None


def usage_of(raw: dict[str, Json]) -> Usage:
    """Converse usage (``inputTokens``, ``outputTokens``, ``totalTokens``,
    ``cacheReadInputTokens``, ``cacheWriteInputTokens``). Bedrock's ``inputTokens`` does not
    count cache reads and writes (``totalTokens`` adds them); the normalized
    ``input_tokens`` does, as the OpenTelemetry conventions ask. ``raw`` keeps the vendor's
    numbers."""
    given = count(raw.get("inputTokens"))
    read = count(raw.get("cacheReadInputTokens"))
    written = count(raw.get("cacheWriteInputTokens"))
    return Usage(
        input_tokens=None if given is None else given + (read or 0) + (written or 0),
        output_tokens=count(raw.get("outputTokens")),
        cached_input_tokens=read,
        cache_creation_input_tokens=written,
        total_tokens=count(raw.get("totalTokens")),
        raw=raw,
    )


# -- errors -----------------------------------------------------------------------------------


def _text(value: Json) -> str | None:
    return value if isinstance(value, str) else None


def error_of(view: ExchangeView) -> CallError | None:
    """The error of a failed response (status >= 400), or None."""
    status = view.status
    if status is None or status < 400:
        return None
    response = view.exchange.response
    kind = header(response.headers, "x-amzn-errortype") if response is not None else None
    code = kind.split(":", 1)[0] if kind else None
    body = view.response_json
    message = None
    if isinstance(body, dict):
        message = _text(body.get("message")) or _text(body.get("Message"))
        if code is None and isinstance(body.get("__type"), str):
            code = body["__type"].rsplit("#", 1)[-1]
        code = code or _text(body.get("code"))
    elif view.response_body:
        message = view.response_body[:300].decode("utf-8", "replace")
    return CallError(
        status=status, type=code, code=None, message=message, source="body" if body else "http"
    )


def exception_error(message: EventStreamMessage, n: int) -> CallError:
    """The error an exception (or error) message of an event stream carries."""
    if message.message_type == "error":
        code, text = message.headers.get(":error-code"), message.headers.get(":error-message")
        return CallError(
            status=None,
            type=code if isinstance(code, str) else None,
            code=None,
            message=text if isinstance(text, str) else None,
            source=f"stream event {n}",
        )
    payload = json_object(message.payload) or {}
    text = _text(payload.get("message")) or _text(payload.get("Message"))
    original = payload.get("originalStatusCode")  # modelStreamErrorException
    return CallError(
        status=None,
        type=message.event_type,
        code=str(original) if count(original) is not None else None,
        message=text,
        source=f"stream event {n}",
    )


# -- event stream -----------------------------------------------------------------------------


def json_object(raw: bytes | str) -> dict[str, Json] | None:
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def messages(
    view: ExchangeView, diagnostics: list[Diagnostic]
) -> Iterator[tuple[int, EventStreamMessage]]:
    """The response's event stream messages with their place; framing diagnostics go to
    ``diagnostics``."""
    n = -1
    for out in view.events:
        if isinstance(out, Diagnostic):
            diagnostics.append(out)
        elif isinstance(out, EventStreamMessage):
            n += 1
            yield n, out
