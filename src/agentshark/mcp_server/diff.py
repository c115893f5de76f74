"""What changed between two runs of the same agent: two reports, compared (``diff_runs``).

A run is everything in one set of captures. What is compared, and how:

- **Steps**: the model calls (the calls a trace's model span stands for), in the order the
  report lists them (wire order). The N-th step of one run is compared with the N-th of the
  other; steps past the shorter run are ``only_before`` / ``only_after``. Per step, the
  fields that differ are listed, each with its two values: ``api``, ``model`` (the model
  that answered, else the one asked for), ``status`` (``ok``/``error``/``incomplete``),
  ``error`` (its message), ``finish_reasons``, ``tool_calls`` (the tools the model asked
  for, with their arguments, in order), ``system`` (the system instructions' text),
  ``input`` (the input messages: their number and the first that differs), ``output_text``
  (the text of the answer), ``input_tokens`` and ``output_tokens``.
- **Tool calls** by name (how many times the models asked for each), **other calls** (MCP,
  A2A, HTTP tools: by ``api``, ``operation`` and tool name), **finish reasons**, and
  **incidents** by rule: counts, listed only where the two runs differ; the incidents of a
  rule found more often in one run are listed for it (at most ``limit``).
- Not compared: times and durations, ids (call, exchange, trace, span ids; the vendors'
  response, request and tool call ids, which differ on every run), connection facts.

Messages are compared as the report has them, with tool call ids left out (they are minted
anew by the model on each run): a replayed history whose only difference is its ids is the
same input. ``identical`` is true when no compared aspect differs.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

import orjson

from agentshark.library.query import tool_names
from agentshark.library.report import Report
from agentshark.library.views import Call, Message, Part
from agentshark.mcp_server.shape import call_summary, clip, incident_json

Json = Any

__all__ = ["diff_reports"]

_PART_IDS = frozenset({"id", "provider_details"})


def diff_reports(before: Report, after: Report, *, limit: int, max_chars: int) -> dict[str, Json]:
    """The differences of ``after`` from ``before`` (see the module docstring)."""
    steps_b, steps_a = _steps(before), _steps(after)
    changed: list[dict[str, Json]] = []
    for n, (b, a) in enumerate(zip(steps_b, steps_a, strict=False)):
        changes = _step_changes(b, a, max_chars)
        if changes:
            changed.append({"step": n, "before": b.id, "after": a.id, "changes": changes})
    shared = min(len(steps_b), len(steps_a))
    only_b = [call_summary(c, {}) for c in steps_b[shared:]]
    only_a = [call_summary(c, {}) for c in steps_a[shared:]]
    tools = _counts(_tool_counts(steps_b), _tool_counts(steps_a))
    others = _counts(_other_counts(before), _other_counts(after))
    reasons = _counts(_reason_counts(steps_b), _reason_counts(steps_a))
    incidents = _incidents(before, after, limit, max_chars)
    totals = {k: {"before": v, "after": after.summary()[k]} for k, v in before.summary().items()}
    totals["steps"] = {"before": len(steps_b), "after": len(steps_a)}
    identical = not (changed or only_b or only_a or tools or others or reasons)
    identical = identical and not incidents["by_rule"]
    return {
        "identical": identical,
        "counts": totals,
        "steps": {
            "changed_total": len(changed),
            "changed": changed[:limit],
            "only_before_total": len(only_b),
            "only_before": only_b[:limit],
            "only_after_total": len(only_a),
            "only_after": only_a[:limit],
        },
        "tool_calls": tools,
        "other_calls": others,
        "finish_reasons": reasons,
        "incidents": incidents,
    }


def _steps(report: Report) -> list[Call]:
    model = {s.call_id for s in report.spans(kind="model") if s.call_id is not None}
    return [c for c in report.calls() if c.id in model]


def _step_changes(b: Call, a: Call, max_chars: int) -> dict[str, Json]:
    pairs: dict[str, tuple[Json, Json]] = {
        "api": (b.api, a.api),
        "model": (b.model, a.model),
        "status": (b.status, a.status),
        "error": (_error(b), _error(a)),
        "finish_reasons": (list(b.finish_reasons), list(a.finish_reasons)),
        "tool_calls": (_asked(b), _asked(a)),
        "system": (_text(b.system_instructions), _text(a.system_instructions)),
        "output_text": (b.output_text, a.output_text),
        "input_tokens": (_tokens(b, "input_tokens"), _tokens(a, "input_tokens")),
        "output_tokens": (_tokens(b, "output_tokens"), _tokens(a, "output_tokens")),
    }
    out = {
        name: {"before": clip(x, max_chars), "after": clip(y, max_chars)}
        for name, (x, y) in pairs.items()
        if x != y
    }
    inputs = _input_change(b.input_messages, a.input_messages, max_chars)
    if inputs is not None:
        out["input"] = inputs
    return out


def _error(call: Call) -> str | None:
    return call.error.message if call.error is not None else None


def _tokens(call: Call, name: str) -> int | None:
    return getattr(call.usage, name) if call.usage is not None else None


def _asked(call: Call) -> list[dict[str, Json]]:
    return [{"name": t.name, "arguments": t.arguments} for t in call.tool_calls]


def _text(parts: Iterable[Part]) -> str:
    return "".join(p.content or "" for p in parts if p.type == "text")


def _fingerprint(m: Message) -> bytes:
    parts = [{k: v for k, v in p.data.items() if k not in _PART_IDS} for p in m.parts]
    return orjson.dumps(
        [m.role, m.name, parts], option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS
    )


def _input_change(
    b: tuple[Message, ...], a: tuple[Message, ...], max_chars: int
) -> dict[str, Json] | None:
    fb, fa = [_fingerprint(m) for m in b], [_fingerprint(m) for m in a]
    if fb == fa:
        return None
    first = next((i for i, (x, y) in enumerate(zip(fb, fa, strict=False)) if x != y), None)
    index = first if first is not None else min(len(b), len(a))
    out: dict[str, Json] = {
        "messages": {"before": len(b), "after": len(a)},
        "first_difference": index,
    }
    out["before"] = _shown(b[index], max_chars) if index < len(b) else None
    out["after"] = _shown(a[index], max_chars) if index < len(a) else None
    return out


def _shown(m: Message, max_chars: int) -> dict[str, Json]:
    return {"role": m.role, "parts": [clip(dict(p.data), max_chars) for p in m.parts]}


def _counts(b: Counter[str], a: Counter[str]) -> dict[str, dict[str, int]]:
    """The keys whose counts differ, with both counts."""
    return {k: {"before": b[k], "after": a[k]} for k in sorted(b.keys() | a.keys()) if b[k] != a[k]}


def _tool_counts(steps: list[Call]) -> Counter[str]:
    return Counter(str(t.name) for c in steps for t in c.tool_calls)


def _other_counts(report: Report) -> Counter[str]:
    model = {s.call_id for s in report.spans(kind="model")}
    out: Counter[str] = Counter()
    for c in report.calls():
        if c.id not in model:
            tools = tool_names(c) if c.operation == "tools/call" else []
            out[" ".join(x for x in (c.api, c.operation, *tools) if x)] += 1
    return out


def _reason_counts(steps: list[Call]) -> Counter[str]:
    return Counter(r for c in steps for r in c.finish_reasons)


def _incidents(before: Report, after: Report, limit: int, max_chars: int) -> dict[str, Json]:
    rb = Counter(i.rule for i in before.incidents())
    ra = Counter(i.rule for i in after.incidents())
    by_rule = _counts(rb, ra)
    more_b = [i for i in before.incidents() if rb[i.rule] > ra[i.rule]]
    more_a = [i for i in after.incidents() if ra[i.rule] > rb[i.rule]]
    return {
        "by_rule": by_rule,
        "more_before": [incident_json(i, max_chars) for i in more_b[:limit]],
        "more_after": [incident_json(i, max_chars) for i in more_a[:limit]],
    }
