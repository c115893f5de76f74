"""Incident rules for Gemini's own failure modes: a blocked prompt, output stopped by a
safety, recitation or policy filter, a malformed function call, and a ``thoughtSignature``
dropped from a replayed function call (which Gemini 3 rejects). ``MAX_TOKENS`` is the
generic ``output.truncated``. docs/incidents.md says what each decides and why.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from agentshark.apis.model import Call, Message, ToolCallPart
from agentshark.trace.incident_rules_base import Context, incident, where
from agentshark.trace.model import Incident

GEMINI = "gemini.generate_content"
# Candidate.FinishReason values that mean a filter stopped the output
# (https://ai.google.dev/api/generate-content#FinishReason)
BLOCKED = frozenset(
    {
        "SAFETY",
        "RECITATION",
        "LANGUAGE",
        "BLOCKLIST",
        "PROHIBITED_CONTENT",
        "SPII",
        "IMAGE_SAFETY",
        "IMAGE_PROHIBITED_CONTENT",
        "IMAGE_RECITATION",
        "MODEL_ARMOR",
    }
)
MALFORMED = frozenset({"MALFORMED_FUNCTION_CALL", "UNEXPECTED_TOOL_CALL", "TOO_MANY_TOOL_CALLS"})
SIGNATURE = "thoughtSignature"


def _gemini_calls(ctx: Context) -> Iterator[Call]:
    return (c for c in ctx.calls if c.api == GEMINI)


def prompt_blocked(ctx: Context) -> Iterator[Incident]:
    """Rule ``gemini.prompt_blocked``."""
    for call in _gemini_calls(ctx):
        response = call.extras.get("response")
        feedback = response.get("promptFeedback") if isinstance(response, dict) else None
        reason = feedback.get("blockReason") if isinstance(feedback, dict) else None
        if reason is None:
            continue
        assert isinstance(feedback, dict)
        yield incident(
            ctx,
            "gemini.prompt_blocked",
            "warning",
            call,
            f"{call.id}'s prompt was blocked (promptFeedback.blockReason {reason}): Gemini "
            "generated nothing; the agent must rephrase or report it, a retry of the same "
            "prompt is blocked again.",
            {
                "block_reason": reason,
                "block_reason_message": feedback.get("blockReasonMessage"),
                "safety_ratings": feedback.get("safetyRatings"),
            },
        )


def output_blocked(ctx: Context) -> Iterator[Incident]:
    """Rule ``gemini.output_blocked``."""
    for call in _gemini_calls(ctx):
        hit = [r for r in call.finish_reasons if r in BLOCKED]
        if not hit:
            continue
        response = call.extras.get("response")
        kept = response.get("candidates") if isinstance(response, dict) else None
        yield incident(
            ctx,
            "gemini.output_blocked",
            "warning",
            call,
            f"{call.id}'s output was stopped by a filter (finish reason {hit[0]}): the "
            "candidate is cut or empty; the agent must degrade, rephrase or report it rather "
            "than treat the answer as complete.",
            {"finish_reasons": call.finish_reasons, "candidates": kept},
        )


def malformed_function_call(ctx: Context) -> Iterator[Incident]:
    """Rule ``gemini.malformed_function_call``."""
    for call in _gemini_calls(ctx):
        hit = [r for r in call.finish_reasons if r in MALFORMED]
        if not hit:
            continue
        response = call.extras.get("response")
        kept = response.get("candidates") if isinstance(response, dict) else None
        yield incident(
            ctx,
            "gemini.malformed_function_call",
            "warning",
            call,
            f"{call.id} ended with {hit[0]}: the model's function call did not fit the "
            "declared tools, so no call was returned; check the function declarations "
            "(schemas) and the tool config.",
            {"finish_reasons": call.finish_reasons, "candidates": kept},
        )


def _tool_calls(messages: Sequence[Message]) -> list[tuple[int, int, ToolCallPart]]:
    return [
        (i, j, p)
        for i, m in enumerate(messages)
        for j, p in enumerate(m.parts)
        if isinstance(p, ToolCallPart)
    ]


def thought_signature_dropped(ctx: Context) -> Iterator[Incident]:
    """Rule ``gemini.thought_signature_dropped``."""
    for call in ctx.model_calls():
        previous = ctx.previous(call)
        link = ctx.links.get(call.id)
        if previous is None or link is None or call.api != GEMINI:
            continue
        sent = _tool_calls(previous.output_messages)
        if not any(SIGNATURE in p.provider_details for _, _, p in sent):
            continue
        start = len(previous.input_messages)
        replay = _tool_calls(call.input_messages[start : link.matched_messages])
        if len(replay) != len(sent):
            continue  # not the same turn, part for part: history.tool_call_altered's case
        dropped = [
            (where(output=False, message=start + i, part=j), p.name)
            for (_, _, a), (i, j, p) in zip(sent, replay, strict=True)
            if SIGNATURE in a.provider_details and SIGNATURE not in p.provider_details
        ]
        if not dropped:
            continue
        model = call.response_model or call.request_model or ""
        gemini3 = "gemini-3" in model
        yield incident(
            ctx,
            "gemini.thought_signature_dropped",
            "error" if gemini3 else "warning",
            call,
            f"{call.id} replays {previous.id}'s function call{'s' if len(dropped) > 1 else ''} "
            f"{', '.join(str(n) for _, n in dropped)} without the thoughtSignature the "
            "response gave: "
            + (
                "Gemini 3 rejects a function call of the current turn without its signature (400)."
                if gemini3
                else "the model loses its reasoning; Gemini 3 models reject such a history."
            ),
            {
                "previous_call": previous.id,
                "link": link.evidence,
                "dropped_at": [w for w, _ in dropped],
                "model": model or None,
            },
        )


# in the order docs/incidents.md lists them
RULES = (prompt_blocked, output_blocked, malformed_function_call, thought_signature_dropped)
