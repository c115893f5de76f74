"""Which model call continues which: the agent loop rebuilt from stateless calls.

Input: the :class:`~agentshark.apis.model.Call` values the API families recognized, in the
order they were recognized. Output: ``call id -> HistoryLink`` naming the earlier call each
model call continues. No header is needed: a stateless chat API replays the conversation, so
call N+1's input is call N's input, then call N's output (the assistant turn with its tool
calls), then the tool results and maybe a new user message (seed 000 §4.1.5, seed 004 0x02).

Rules, strongest first (the first that applies wins):

1. Ids (Responses API, seed 000 §4.2.5): ``ids["previous_response_id"]`` equal to an earlier
   call's ``response_id`` (origin ``"previous_response_id"``); else ``ids["conversation_id"]``
   taken from the request's own ``$.conversation`` field and shared with an earlier call
   (origin ``"conversation"``, the latest earlier call of that conversation). A
   ``conversation_id`` an application put in ``metadata`` proves nothing about the server's
   state and is not used: parallel sub-agents share such ids.
2. History: B continues A when, with equal system instructions and the same ``api``, B's
   input messages start with A's input messages followed by A's output messages, and B has
   at least one more input message (the tool results or the next user turn), unless A
   stopped with ``pause_turn`` (Anthropic: the client sends the paused turn back as is).
   Among the
   earlier calls that qualify, the one accounting for the most of B's messages wins, a full
   replay beats an input-only one (rule below), then the latest. The model may differ
   (agents switch models); the API family may not.
3. Nothing else: time-closeness guesses belong to another module.

A predecessor started before B (or comes earlier in the list when times are missing) and had
ended by the time B started (when both times are known): a call cannot continue one that has
not answered yet. Calls are ordered by ``timing.started`` when every model call has one,
else kept in list order.

Normalizations (what :func:`message_key` fingerprints), chosen so that an assistant message in
A's output equals its replay in B's input:

* A response's messages are the ``assistant``'s whatever role they carry.
* Consecutive assistant messages are one turn: their parts are compared as one flat sequence,
  so a turn split one message per item (Responses) equals its replay merged into one message
  (Chat puts content and tool calls in one message). Needing this makes the link not exact.
* Text is compared whitespace-stripped; empty text is no part. Tool calls compare id, name
  and arguments as the parsed JSON value (the raw string when it does not parse); tool call
  responses compare id and the response as JSON, ``cache_control`` markers aside (clients
  move them every turn). Other parts compare every field but ``provider_details`` (vendor
  ids, statuses, annotations) and, for generic parts, item ids and statuses.
* Reasoning parts are left out: providers and clients drop, redact or re-sign them. Whether
  they changed in the replay is recorded in ``HistoryLink.reasoning_changed``.
* In an assistant turn, so are the parts the provider made and the client need not carry
  back as is: hosted tool calls and their results (Responses ``web_search_call``,
  ``tool_search_call`` run by the server, Anthropic ``server_tool_use`` and its result...)
  and provider items (``mcp_list_tools``, ``compaction``...); refusals stay. Clients drop or
  trim them (pydantic-ai replays a hosted tool search without its ``tool_search_output``).
  Only the client's own tool calls, text and media must match; the link is then not exact.
* Chat Completions with ``n > 1``: only one choice is replayed, so each output message is
  tried on its own.
* Tool calls without ids (Gemini, Ollama): clients replay them as the model sent them, or
  with ids of their own (pydantic-ai's ``pyd_ai_…``). When no link is found with ids, a call
  whose output has id-less tool calls is looked up again with every tool call id left out
  (its input and output, and the later call's input); such a link is not exact and says so.
* A call whose output is empty or incomplete (a cut stream) can only be matched by its input:
  B's input starting with A's input is a weaker link, said in the evidence, never exact.

Consequence for the replay of altered tool-call arguments: a different value is a different
history (no link); the same value written differently (spacing, key order) links, not exact.

Cost: each call's message sequence is hashed once into a chain of prefix fingerprints; a call
looks its own prefixes up in a dict of earlier calls' "input + output" fingerprints, so linking
is linear in the number of messages, not quadratic in the number of calls.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Literal, assert_never

import orjson

from agentshark.apis.model import (
    BlobPart,
    Call,
    FilePart,
    GenericPart,
    Json,
    Message,
    Part,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolCallResponsePart,
    UriPart,
)

Origin = Literal["previous_response_id", "conversation", "history"]

# the session APIs: their calls continue one another on their WebSocket session
SESSION_APIS = frozenset({"openai.realtime", "gemini.live"})
MODEL_APIS = frozenset({"openai.chat", "openai.responses", "anthropic.messages", *SESSION_APIS})
CHAT_OPERATION = "chat"  # the OTel GenAI operation name the families give generation calls
ASSISTANT = "assistant"
# generic-part fields that name or track the item rather than say what it is
_VOLATILE_FIELDS = frozenset({"id", "item_id", "status", "cache_control"})
# Responses items for tools the server runs (seen as provider_details["item_type"])
_HOSTED_ITEMS = frozenset(
    {
        "web_search_call",
        "file_search_call",
        "code_interpreter_call",
        "image_generation_call",
        "mcp_call",
    }
)
# generic parts of an assistant turn that are the model's own words
_MODEL_GENERIC = frozenset({"refusal"})
# Anthropic: the model paused a long turn; the client sends it back as is to resume
# (https://docs.anthropic.com/en/docs/build-with-claude/handling-stop-reasons)
_PAUSED = frozenset({"pause_turn"})
# the reasoning fields a replay should carry back unchanged
_REASONING_FIELDS = ("signature", "data", "encrypted_content")
_CONVERSATION_SOURCE = "request body $.conversation"


@dataclass(frozen=True, slots=True, kw_only=True)
class HistoryLink:
    """The earlier call a model call continues, and why we think so."""

    previous: str  # id of the earlier call this one continues
    origin: Origin
    evidence: str  # for a person: which messages or which id
    matched_messages: int  # this call's input messages the previous call accounts for
    exact: bool  # every replayed message matched as sent, no normalization needed
    reasoning_changed: bool = False  # reasoning in the replay differs from what was sent


def is_model_call(call: Call) -> bool:
    """A chat-like generation call: one of the model APIs, or any API whose ``chat``
    operation carries input messages."""
    if call.api in MODEL_APIS:
        return call.operation in (None, CHAT_OPERATION)
    return call.operation == CHAT_OPERATION and bool(call.input_messages)


def link_history(calls: Sequence[Call], *, by_start: bool | None = None) -> dict[str, HistoryLink]:
    """``call.id -> HistoryLink`` for every model call that continues an earlier one.
    ``by_start`` says whether to order the calls by start time (when None: if every model
    call has one); a part of a larger input is ordered as the whole input was."""
    ordered = _in_order([c for c in calls if is_model_call(c)], by_start)
    ids = _IdIndex()
    replays = _ReplayIndex()
    links: dict[str, HistoryLink] = {}
    for pos, call in enumerate(ordered):
        entry = _Entry(pos=pos, call=call)
        link = ids.find(entry) or replays.find(entry)
        if link is not None:
            links[call.id] = link
        ids.add(entry)
        replays.add(entry)
    return links


def replay_keys(call: Call) -> tuple[list[bytes], list[bytes], bytes]:
    """What :func:`link_history` can link a model call by, as ``(offered, sought, input)``:
    the keys its own entries are indexed under, the keys it looks up as a later call, and
    the fingerprint of its instructions and input messages. A link joins a call seeking a
    key to one offering it; the keys of a session, a response id or a conversation are both.
    Reading a long capture, the calls are grouped by these before any group is linked
    (:mod:`agentshark.trace.spill`): two calls sharing no key cannot be linked, whatever
    else the capture holds."""
    offered: list[bytes] = []
    sought: list[bytes] = []
    if call.api in SESSION_APIS:
        offered.append(b"s" + call.exchange_id.encode())
        sought.append(offered[-1])
    if call.response_id is not None:
        offered.append(b"r" + call.response_id.encode())
    previous_id = call.ids.get("previous_response_id")
    if previous_id is not None:
        sought.append(b"r" + previous_id.encode())
    conversation = _conversation(call)
    if conversation is not None:
        offered.append(b"c" + conversation.encode())
        sought.append(offered[-1])
    head = _head(call)
    inputs = [(m, False) for m in call.input_messages]
    input_turns = _turns(head, inputs)
    outputs = _alternatives(call)
    ends_assistant = bool(inputs) and _role(inputs[-1][0], output=False) == ASSISTANT
    for _, output in outputs:
        messages = [*inputs, *((m, True) for m in output)]
        if ends_assistant:  # the output continues the input's last turn
            offered.append(b"f" + _turns(head, messages).chain[-1])
        else:  # an output is one assistant turn after the input's
            parts = [p for m in output for p in m.parts]
            key = _dumps([ASSISTANT, _parts_key(parts, role=ASSISTANT)])
            offered.append(b"f" + _digest(input_turns.chain[-1] + key))
        if _idless_calls(output):
            offered.append(b"i" + _turns(head, messages, ids=False).chain[-1])
    if not outputs or not call.complete:
        offered.append(b"f" + input_turns.chain[-1])
    sought.extend(b"f" + key for key in input_turns.chain[1:])
    if _has_tool_call_ids(call.input_messages):
        idless = _turns(head, inputs, ids=False)
        sought.extend(b"i" + key for key in idless.chain[1:-1])
    return offered, sought, input_turns.chain[-1]


def message_key(message: Message, *, output: bool) -> bytes:
    """The normalized fingerprint of one message (see the module docstring): an output
    message and its replay as an input message have the same key. Several consecutive
    assistant messages are compared as the key of one message holding all their parts."""
    role = _role(message, output=output)
    return _dumps([role, _parts_key(message.parts, role=role)])


# -- order -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class _Entry:
    pos: int  # place in the processing order
    call: Call


def _in_order(calls: list[Call], by_start: bool | None = None) -> list[Call]:
    starts = [c.timing.started for c in calls]
    if by_start is None:
        by_start = all(s is not None for s in starts)
    if by_start:
        return [c for _, _, c in sorted(zip(starts, range(len(calls)), calls, strict=True))]
    return calls


def _precedes(a: _Entry, b: _Entry) -> bool:
    """``a`` started before ``b`` and had answered by the time ``b`` was sent."""
    if a.pos >= b.pos:
        return False
    ended, started = a.call.timing.ended, b.call.timing.started
    return ended is None or started is None or ended <= started


# -- rule 1: ids -----------------------------------------------------------------------------


class _IdIndex:
    """Earlier calls by response id and by server-side conversation."""

    def __init__(self) -> None:
        self._responses: dict[str, list[_Entry]] = {}
        self._conversations: dict[str, list[_Entry]] = {}
        self._sessions: dict[str, list[_Entry]] = {}  # Realtime: exchange id -> responses

    def add(self, entry: _Entry) -> None:
        call = entry.call
        if call.api in SESSION_APIS:
            self._sessions.setdefault(call.exchange_id, []).append(entry)
        if call.response_id is not None:
            self._responses.setdefault(call.response_id, []).append(entry)
        conversation = _conversation(call)
        if conversation is not None:
            self._conversations.setdefault(conversation, []).append(entry)

    def find(self, entry: _Entry) -> HistoryLink | None:
        call = entry.call
        if call.api in SESSION_APIS:
            found = _latest(self._sessions.get(call.exchange_id, ()), entry)
            if found is not None:
                return HistoryLink(
                    previous=found.call.id,
                    origin="conversation",
                    evidence=f"the same session (WebSocket {call.exchange_id}), whose "
                    f"previous turn was {found.call.id}",
                    matched_messages=0,
                    exact=True,
                )
        previous_id = call.ids.get("previous_response_id")
        if previous_id is not None:
            found = _latest(self._responses.get(previous_id, ()), entry)
            if found is not None:
                source = call.id_sources.get("previous_response_id", "previous_response_id")
                return HistoryLink(
                    previous=found.call.id,
                    origin="previous_response_id",
                    evidence=f"{_request(source)} = {previous_id} ({found.call.id}'s response id)",
                    matched_messages=0,
                    exact=True,
                )
        conversation = _conversation(call)
        if conversation is not None:
            found = _latest(self._conversations.get(conversation, ()), entry)
            if found is not None:
                source = call.id_sources["conversation_id"]
                return HistoryLink(
                    previous=found.call.id,
                    origin="conversation",
                    evidence=f"{_request(source)} = {conversation}, as in {found.call.id}, "
                    "the latest earlier call of that conversation",
                    matched_messages=0,
                    exact=True,
                )
        return None


def _conversation(call: Call) -> str | None:
    """The server-side conversation a request names in its own ``conversation`` field."""
    source = call.id_sources.get("conversation_id", "")
    return call.ids.get("conversation_id") if source.startswith(_CONVERSATION_SOURCE) else None


def _request(source: str) -> str:
    """``"request body $.x"`` -> ``"request $.x"``."""
    return source.replace("request body ", "request ", 1)


def _latest(entries: Iterable[_Entry], later: _Entry) -> _Entry | None:
    for entry in reversed(list(entries)):
        if _precedes(entry, later):
            return entry
    return None


# -- rule 2: replayed history ----------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class _Turns:
    """A message sequence cut into turns (consecutive assistant messages are one), with
    the fingerprint of every prefix: ``chain[k]`` covers the first ``k`` turns."""

    chain: list[bytes]
    ends: list[int]  # message index just after each turn


def _turns(head: bytes, messages: Sequence[tuple[Message, bool]], *, ids: bool = True) -> _Turns:
    """``messages`` as (message, is output) pairs; ``ids=False``: tool call ids left out."""
    keys: list[bytes] = []
    ends: list[int] = []
    run: list[Part] | None = None  # the parts of the assistant turn being read
    for index, (message, output) in enumerate(messages):
        role = _role(message, output=output)
        if role != ASSISTANT:
            run = None
            keys.append(_dumps([role, _parts_key(message.parts, role=role, ids=ids)]))
        elif run is None:
            run = list(message.parts)
            keys.append(_dumps([role, _parts_key(run, role=role, ids=ids)]))
        else:  # continues the turn before
            run.extend(message.parts)
            keys[-1] = _dumps([role, _parts_key(run, role=role, ids=ids)])
            ends.pop()
        ends.append(index + 1)
    chain = [_digest(head)]
    for key in keys:
        chain.append(_digest(chain[-1] + key))
    return _Turns(chain=chain, ends=ends)


@dataclass(frozen=True, slots=True, kw_only=True)
class _Replay:
    """What an earlier call's replay looks like: its input, then one output alternative."""

    entry: _Entry
    output: list[Message]  # the replayed output ([] for an input-only match)
    choice: int | None  # the Chat choice, when there were several
    input_turns: int  # turns of the replay made of the call's input alone


class _ReplayIndex:
    """Earlier calls by the fingerprint of "input + output" (full) and of input alone
    (for calls whose output is empty or incomplete)."""

    def __init__(self) -> None:
        self._full: dict[bytes, list[_Replay]] = {}
        self._input_only: dict[bytes, list[_Replay]] = {}
        self._paused: dict[bytes, list[_Replay]] = {}  # full replays of paused turns
        # full replays, tool call ids left out, of calls whose output has id-less tool calls
        self._idless: dict[bytes, list[_Replay]] = {}

    def add(self, entry: _Entry) -> None:
        call = entry.call
        head = _head(call)
        inputs = [(m, False) for m in call.input_messages]
        input_turns = _turns(head, inputs)
        outputs = _alternatives(call)
        for choice, output in outputs:
            turns = _turns(head, [*inputs, *((m, True) for m in output)])
            fit = sum(1 for end in turns.ends if end <= len(inputs))
            replay = _Replay(entry=entry, output=output, choice=choice, input_turns=fit)
            self._full.setdefault(turns.chain[-1], []).append(replay)
            if _PAUSED.intersection(call.finish_reasons):
                self._paused.setdefault(turns.chain[-1], []).append(replay)
            if _idless_calls(output):
                idless = _turns(head, [*inputs, *((m, True) for m in output)], ids=False)
                self._idless.setdefault(idless.chain[-1], []).append(replay)
        if not outputs or not call.complete:
            replay = _Replay(entry=entry, output=[], choice=None, input_turns=len(input_turns.ends))
            self._input_only.setdefault(input_turns.chain[-1], []).append(replay)

    def find(self, entry: _Entry) -> HistoryLink | None:
        call = entry.call
        turns = _turns(_head(call), [(m, False) for m in call.input_messages])
        # the longest prefix first; at least one turn must follow it, unless the earlier
        # call paused its turn (then the whole input may be its replay)
        last = len(turns.ends)
        found = _latest_replay(self._paused.get(turns.chain[last], ()), entry)
        if last and found is not None:
            return _history_link(call, found, turns, last, full=True)
        for k in range(last - 1, 0, -1):
            for index, full in ((self._full, True), (self._input_only, False)):
                found = _latest_replay(index.get(turns.chain[k], ()), entry)
                if found is not None:
                    return _history_link(call, found, turns, k, full=full)
        return self._find_idless(entry)

    def _find_idless(self, entry: _Entry) -> HistoryLink | None:
        """A replay that gave the model's id-less tool calls ids of the client's own."""
        call = entry.call
        if not self._idless or not _has_tool_call_ids(call.input_messages):
            return None
        turns = _turns(_head(call), [(m, False) for m in call.input_messages], ids=False)
        for k in range(len(turns.ends) - 1, 0, -1):
            found = _latest_replay(self._idless.get(turns.chain[k], ()), entry)
            if found is not None:
                link = _history_link(call, found, turns, k, full=True)
                note = (
                    f"; the replay gives {found.entry.call.id}'s id-less tool calls ids of "
                    "the client's (compared without tool call ids)"
                )
                return replace(link, evidence=link.evidence + note)
        return None


def _idless_calls(messages: Sequence[Message]) -> bool:
    return any(isinstance(p, ToolCallPart) and p.id is None for m in messages for p in m.parts)


def _has_tool_call_ids(messages: Sequence[Message]) -> bool:
    return any(isinstance(p, ToolCallPart) and p.id is not None for m in messages for p in m.parts)


def _latest_replay(replays: Iterable[_Replay], later: _Entry) -> _Replay | None:
    for replay in reversed(list(replays)):
        if _precedes(replay.entry, later):
            return replay
    return None


def _head(call: Call) -> bytes:
    """What two calls of one conversation share before any message: API and instructions."""
    return _dumps([call.api, _parts_key(call.system_instructions, role="system")])


def _alternatives(call: Call) -> list[tuple[int | None, list[Message]]]:
    """The outputs a later call may replay: the whole output, or for a Chat call with
    several choices each choice on its own. None when the output is empty."""
    outputs = call.output_messages
    if not any(_parts_key(m.parts, role=ASSISTANT) for m in outputs):
        return []
    if call.api == "openai.chat" and len(outputs) > 1:
        return [(i, [m]) for i, m in enumerate(outputs)]
    return [(None, outputs)]


def _history_link(call: Call, found: _Replay, turns: _Turns, k: int, *, full: bool) -> HistoryLink:
    previous = found.entry.call
    matched = turns.ends[k - 1]
    replayed = [
        *((m, False) for m in previous.input_messages),
        *((m, True) for m in found.output),
    ]
    mine = [(m, False) for m in call.input_messages[:matched]]
    exact = full and previous.complete and _exact(replayed, mine)
    in_end = turns.ends[found.input_turns - 1] if found.input_turns else 0
    evidence = f"input messages {_span(0, matched)} equal {previous.id}'s input"
    if full:
        evidence += f" ({_span(0, in_end)}) and output ({_span(in_end, matched)})"
        if found.choice is not None:
            evidence += f", its choice {found.choice}"
        if not previous.complete:
            evidence += f" ({previous.id}'s response was incomplete)"
        if matched == len(call.input_messages):
            evidence += f"; nothing follows: {previous.id} paused its turn (pause_turn)"
    else:
        evidence += (
            f"; {previous.id}'s output is empty or incomplete, so its replay could not be"
            " checked (a weaker link)"
        )
    return HistoryLink(
        previous=previous.id,
        origin="history",
        evidence=evidence,
        matched_messages=matched,
        exact=exact,
        reasoning_changed=_reasoning(replayed) != _reasoning(mine),
    )


def _span(start: int, end: int) -> str:
    if end <= start:
        return "none"
    return str(start) if end - start == 1 else f"{start}-{end - 1}"


# -- keys ------------------------------------------------------------------------------------


def _role(message: Message, *, output: bool) -> str | None:
    return ASSISTANT if output else message.role


def _exact(replayed: Sequence[tuple[Message, bool]], mine: Sequence[tuple[Message, bool]]) -> bool:
    """Message by message and part by part as sent, reasoning aside. Tool-call arguments
    compare as strings when both sides sent one (Anthropic sends objects; its stream
    sends a string), else as values."""
    if len(replayed) != len(mine):
        return False
    for (a, a_out), (b, b_out) in zip(replayed, mine, strict=True):
        if _role(a, output=a_out) != _role(b, output=b_out):
            return False
        a_parts = [p for p in a.parts if not isinstance(p, ReasoningPart)]
        b_parts = [p for p in b.parts if not isinstance(p, ReasoningPart)]
        if len(a_parts) != len(b_parts):
            return False
        if not all(_same_part(x, y) for x, y in zip(a_parts, b_parts, strict=True)):
            return False
    return True


def _same_part(a: Part, b: Part) -> bool:
    if isinstance(a, ToolCallPart) and isinstance(b, ToolCallPart):
        if a.arguments_raw is not None and b.arguments_raw is not None:
            return (a.id, a.name, a.arguments_raw) == (b.id, b.name, b.arguments_raw)
        return _part_key(a, strict=False) == _part_key(b, strict=False)
    return _part_key(a, strict=True) == _part_key(b, strict=True)


def _reasoning(messages: Sequence[tuple[Message, bool]]) -> list[Json]:
    return [
        [p.content, *(p.provider_details.get(name) for name in _REASONING_FIELDS)]
        for m, _ in messages
        for p in m.parts
        if isinstance(p, ReasoningPart)
    ]


def _parts_key(parts: Iterable[Part], *, role: str | None, ids: bool = True) -> list[Json]:
    """The loose keys of ``parts``: what a replay must keep (server-side parts of an
    assistant turn aside); ``ids=False`` leaves tool call ids out."""
    keep = (p for p in parts if role != ASSISTANT or not _server_side(p))
    keys = (_part_key(p, strict=False, ids=ids) for p in keep)
    return [k for k in keys if k is not None]


def _server_side(part: Part) -> bool:
    """A part of an assistant turn that the provider made and the client need not carry
    back as is: a hosted tool's call and result, a provider item (reasoning is left out of
    every key)."""
    if isinstance(part, ToolCallResponsePart):
        return True
    if isinstance(part, GenericPart):
        return part.type not in _MODEL_GENERIC
    if isinstance(part, ToolCallPart):
        details = part.provider_details
        return (
            "block_type" in details  # Anthropic server_tool_use, mcp_tool_use...
            or details.get("item_type") in _HOSTED_ITEMS
            or details.get("execution") == "server"
        )
    return False


def _part_key(part: Part, *, strict: bool, ids: bool = True) -> Json | None:
    """What a replay must keep of a part; None for what it may drop."""
    if isinstance(part, TextPart):
        text = part.content.strip()  # a replayed turn may lose the whitespace around a text
        return ["text", text] if text or strict else None
    if isinstance(part, ReasoningPart):
        return None
    if isinstance(part, ToolCallPart):
        return ["tool_call", part.id if ids else None, part.name, _arguments(part)]
    if isinstance(part, ToolCallResponsePart):
        response = part.response if strict else _without_markers(part.response)
        return ["tool_call_response", part.id, response]
    if isinstance(part, BlobPart):
        return ["blob", part.mime_type, part.modality, part.content]
    if isinstance(part, UriPart):
        return ["uri", part.uri, part.mime_type, part.modality]
    if isinstance(part, FilePart):
        return ["file", part.file_id, part.mime_type, part.modality]
    if isinstance(part, GenericPart):
        fields = part.fields
        if not strict:
            fields = {k: v for k, v in fields.items() if k not in _VOLATILE_FIELDS}
        return [part.type, fields]
    assert_never(part)


def _arguments(part: ToolCallPart) -> Json:
    """The parsed value, or the raw string when it did not parse."""
    if part.arguments_error is not None:
        return ["raw", part.arguments_raw]
    return ["value", part.arguments]


def _without_markers(value: Json) -> Json:
    """A tool result's content blocks without Anthropic's ``cache_control`` markers."""
    if isinstance(value, list):
        return [_without_markers(v) for v in value]
    if isinstance(value, dict):
        return {k: _without_markers(v) for k, v in value.items() if k != "cache_control"}
    return value


def _dumps(value: Json) -> bytes:
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)
    except TypeError:  # integers beyond 64 bits, odd values: slower but total
        return json.dumps(value, sort_keys=True, default=repr).encode()


def _digest(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=16).digest()
