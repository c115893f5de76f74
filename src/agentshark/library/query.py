"""Which calls a search names: the filters of :meth:`Report.calls
<agentshark.library.report.Report.calls>` and of the MCP server's ``search_calls``.

Every filter given must hold (they are and-ed); a filter left None holds for every call:

- ``api``: the call's API family, whole (``openai.chat``) or its first part (``openai``),
  as ``agentshark calls --api`` takes it.
- ``model``: case-insensitive substring of the model asked for or the one that answered.
- ``operation``: the operation exactly (``chat``, ``tools/call``, ``message/send``).
- ``tool``: a tool of that name (exactly) was asked for in the call's output (a model's
  ``tool_call`` part), or is the tool an MCP ``tools/call`` executes.
- ``text``: case-insensitive substring of any text of the call as the report has it
  (system instructions, every message part, tool arguments and results, the error).
- ``status``: ``ok``, ``error`` or ``incomplete``, as :attr:`Call.status
  <agentshark.library.views.Call.status>` says.
"""

from __future__ import annotations

from dataclasses import dataclass

import orjson

from agentshark.library.views import Call

__all__ = ["STATUSES", "CallFilter", "tool_names"]

STATUSES = ("ok", "error", "incomplete")


def tool_names(call: Call) -> list[str]:
    """The tools a call asked for (its output's tool calls), or the tool an MCP
    ``tools/call`` executes; in order, repeats kept."""
    messages = call.output_messages
    if call.operation == "tools/call":
        messages = call.input_messages + messages
    return [
        str(p.data.get("name"))
        for m in messages
        for p in m.parts
        if p.type == "tool_call" and p.data.get("name") is not None
    ]


@dataclass(frozen=True, slots=True, kw_only=True)
class CallFilter:
    api: str | None = None
    model: str | None = None
    operation: str | None = None
    tool: str | None = None
    text: str | None = None
    status: str | None = None

    def __post_init__(self) -> None:
        if self.status is not None and self.status not in STATUSES:
            raise ValueError(f"status {self.status!r}: one of {', '.join(STATUSES)}")

    def matches(self, call: Call) -> bool:
        return (
            self._api(call)
            and self._model(call)
            and (self.operation is None or call.operation == self.operation)
            and (self.tool is None or self.tool in tool_names(call))
            and (self.status is None or call.status == self.status)
            and self._text(call)
        )

    def _api(self, call: Call) -> bool:
        return self.api is None or call.api == self.api or call.api.startswith(f"{self.api}.")

    def _model(self, call: Call) -> bool:
        if self.model is None:
            return True
        wanted = self.model.lower()
        return any(wanted in m.lower() for m in (call.request_model, call.response_model) if m)

    def _text(self, call: Call) -> bool:
        if not self.text:
            return True
        d = call.data
        searched = [
            d.get("system_instructions"),
            d.get("input_messages"),
            d.get("output_messages"),
            d.get("error"),
        ]
        blob = orjson.dumps(searched, option=orjson.OPT_NON_STR_KEYS).decode()
        # the JSON escapes of quotes and newlines are searched as the text they stand for
        plain = blob.replace('\\"', '"').replace("\\n", "\n")
        return self.text.lower() in plain.lower()
