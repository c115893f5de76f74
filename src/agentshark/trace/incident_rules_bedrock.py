"""Incident rules for Amazon Bedrock's own failure modes (``bedrock.converse`` and
``bedrock.invoke`` calls): a guardrail that intervened, output blocked by content filters,
the model's context window filled, and an exception event ending a stream.
docs/incidents.md says what each decides and why.

Bedrock reports these in its stop reasons (``guardrail_intervened``, ``content_filtered``,
``model_context_window_exceeded``: https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ConverseStreamOutput.html),
in Titan's ``completionReason`` (``CONTENT_FILTERED``), in the guardrail members of
InvokeModel bodies (``amazon-bedrock-guardrailAction: INTERVENED``) and trace
(``trace.guardrail``), and as exception messages of the event stream.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from agentshark.apis.model import Call, Json
from agentshark.trace.incident_rules_base import Context, excerpt, incident
from agentshark.trace.model import Incident

BEDROCK_APIS = frozenset({"bedrock.converse", "bedrock.invoke"})
MAX_ACTIONS = 10  # guardrail actions quoted in evidence
# 400 messages of a request longer than the model's context (ValidationException)
_TOO_LONG = re.compile(
    r"too long|too many (?:input )?tokens|context (?:window|length)|maximum context",
    re.IGNORECASE,
)


def _bedrock(ctx: Context) -> Iterator[Call]:
    return (c for c in ctx.calls if c.api in BEDROCK_APIS)


def _reasons(call: Call, wanted: str) -> list[str]:
    return [r for r in call.finish_reasons if r.lower() == wanted]


def _response(call: Call) -> dict[str, Json]:
    response = call.extras.get("response")
    return response if isinstance(response, dict) else {}


def _actions(value: Json, path: str, out: list[dict[str, Json]]) -> None:
    """Every assessment in a guardrail trace whose ``action`` is not ``NONE``."""
    if len(out) >= MAX_ACTIONS:
        return
    if isinstance(value, dict):
        action = value.get("action")
        if isinstance(action, str) and action != "NONE":
            found: dict[str, Json] = {"path": path, "action": action}
            for key in ("type", "name", "match", "policy"):
                if key in value:
                    found[key] = excerpt(value[key])
            out.append(found)
        for key, inner in value.items():
            _actions(inner, f"{path}.{key}", out)
    elif isinstance(value, list):
        for i, inner in enumerate(value):
            _actions(inner, f"{path}[{i}]", out)


def guardrail_intervened(ctx: Context) -> Iterator[Incident]:
    """Rule ``bedrock.guardrail_intervened``."""
    for call in _bedrock(ctx):
        response = _response(call)
        invoke_action = response.get("amazon-bedrock-guardrailAction")
        reasons = _reasons(call, "guardrail_intervened")
        if not reasons and invoke_action != "INTERVENED":
            continue
        evidence: dict[str, Json] = {"finish_reasons": call.finish_reasons}
        config = call.request_params.get("guardrailConfig")
        if isinstance(config, dict):
            evidence["guardrail"] = {
                k: config[k] for k in ("guardrailIdentifier", "guardrailVersion") if k in config
            }
        if invoke_action is not None:
            evidence["guardrail_action"] = invoke_action
        actions: list[dict[str, Json]] = []
        trace = response.get("trace")
        guard = trace.get("guardrail") if isinstance(trace, dict) else None
        _actions(guard if guard is not None else response.get("amazon-bedrock-trace"), "$", actions)
        if actions:
            evidence["actions"] = actions
        yield incident(
            ctx,
            "bedrock.guardrail_intervened",
            "warning",
            call,
            f"{call.id}'s output was changed or blocked by a Bedrock guardrail: the text the "
            "agent got is the guardrail's, not the model's; check the guardrail trace before "
            "retrying.",
            evidence,
        )


def content_filtered(ctx: Context) -> Iterator[Incident]:
    """Rule ``bedrock.content_filtered``."""
    for call in _bedrock(ctx):
        reasons = _reasons(call, "content_filtered")
        if not reasons:
            continue
        yield incident(
            ctx,
            "bedrock.content_filtered",
            "warning",
            call,
            f"{call.id}'s output was stopped by the model's content filters (finish reason "
            f"{reasons[0]}): what arrived is partial or empty; rephrase rather than retry.",
            {"finish_reasons": call.finish_reasons},
        )


def context_window_exceeded(ctx: Context) -> Iterator[Incident]:
    """Rule ``bedrock.model_context_window_exceeded``."""
    for call in _bedrock(ctx):
        reasons = _reasons(call, "model_context_window_exceeded")
        error = call.error
        rejected = (
            error is not None
            and error.status == 400
            and error.message is not None
            and _TOO_LONG.search(error.message) is not None
        )
        if not reasons and not rejected:
            continue
        evidence: dict[str, Json] = {"finish_reasons": call.finish_reasons}
        if call.usage is not None and call.usage.input_tokens is not None:
            evidence["input_tokens"] = call.usage.input_tokens
        if rejected and error is not None:
            evidence["error"] = {
                "status": error.status,
                "type": error.type,
                "message": excerpt(error.message),
            }
            what = "was rejected: the request is longer than the model's context window"
        else:
            what = "stopped because the model's context window is full"
        yield incident(
            ctx,
            "bedrock.model_context_window_exceeded",
            "error" if rejected else "warning",
            call,
            f"{call.id} {what}; trim or summarize the history before the next turn.",
            evidence,
        )


def stream_exception(ctx: Context) -> Iterator[Incident]:
    """Rule ``bedrock.stream_exception``."""
    for call in _bedrock(ctx):
        error = call.error
        if not call.stream or error is None or not error.source.startswith("stream event"):
            continue
        yield incident(
            ctx,
            "bedrock.stream_exception",
            "error",
            call,
            f"{call.id}'s stream ended with a {error.type or 'nameless'} exception event "
            f"({error.source}): the output before it is partial; "
            + (
                "back off and retry."
                if (error.type or "").lower().startswith(("throttling", "serviceunavailable"))
                else "the call failed."
            ),
            {
                "error": error.to_json(),
                "output_parts": sum(len(m.parts) for m in call.output_messages),
            },
        )


# in docs/incidents.md's order; trace/incidents.py adds them after the other call rules
RULES = (guardrail_intervened, content_filtered, context_window_exceeded, stream_exception)
