"""A2A values -> the call types: parts, messages, task and message results, agent cards, errors.

The conversions :mod:`agentshark.apis.a2a.calls`'s bindings share (its docstring says what the
normalization is): :func:`part_from` and :func:`message_from` for 1.0 and 0.3 parts and
messages, :func:`classify` for a result or stream payload, :class:`TaskOutput` gathering the
output message, state and artifacts of a result or of a stream's events, :func:`apply_result`
for a non-streamed result, :func:`card_summary` for an agent card, and :func:`jsonrpc_error`
and :func:`http_error` for error bodies.
"""

from __future__ import annotations

from agentshark.apis.model import (
    BlobPart,
    Call,
    CallError,
    GenericPart,
    Json,
    Message,
    Part,
    TextPart,
    UriPart,
)
from agentshark.apis.view import ExchangeView

# JSON-RPC and A2A error codes -> names (A2A 0.3 and 1.0 specifications).
ERROR_NAMES: dict[int, str] = {
    -32700: "JSONParseError",
    -32600: "InvalidRequestError",
    -32601: "MethodNotFoundError",
    -32602: "InvalidParamsError",
    -32603: "InternalError",
    -32001: "TaskNotFoundError",
    -32002: "TaskNotCancelableError",
    -32003: "PushNotificationNotSupportedError",
    -32004: "UnsupportedOperationError",
    -32005: "ContentTypeNotSupportedError",
    -32006: "InvalidAgentResponseError",
    -32007: "ExtendedAgentCardNotConfiguredError",
    -32008: "ExtensionSupportRequiredError",
    -32009: "VersionNotSupportedError",
}

_ENDING_STATES = frozenset(
    {
        "completed",
        "canceled",
        "cancelled",
        "failed",
        "rejected",
        "input-required",
        "auth-required",
    }
)


def _state_name(state: Json) -> str | None:
    """A task state as sent, kept raw: a string, or an enum number as its digits."""
    if isinstance(state, str) and state:
        return state
    if isinstance(state, int) and not isinstance(state, bool):
        return str(state)
    return None


def is_ending(state: str | None) -> bool:
    """Whether ``state`` (either version's spelling) ends a stream."""
    if state is None:
        return False
    # the 1.0 enum's numbers (ASCII): completed..auth-required, not 1, 2 or 0
    if state.isascii() and state.isdigit():
        return int(state) in (3, 4, 5, 6, 7, 8)
    s = state.lower().removeprefix("task_state_").replace("_", "-")
    return s in _ENDING_STATES


def str_value(value: Json) -> str | None:
    return value if isinstance(value, str) and value else None


def set_id(call: Call, name: str, value: Json, source: str) -> None:
    """Record id ``name`` the first time a value for it is seen."""
    text = str_value(value)
    if text is not None and name not in call.ids:
        call.ids[name] = text
        call.id_sources[name] = source


# -- parts and messages ---------------------------------------------------------------------


def _modality(mime: str | None) -> str | None:
    if mime is None:
        return None
    top = mime.split("/", 1)[0].lower()
    return top if top in ("image", "audio", "video") else None


def part_from(raw: Json) -> Part:
    """One A2A part (1.0 or 0.3 form) as a normalized part; anything else kept whole."""
    if not isinstance(raw, dict):
        return GenericPart(type="unknown", fields={"value": raw})
    details: dict[str, Json] = {}
    if isinstance(raw.get("metadata"), dict):
        details["metadata"] = raw["metadata"]
    kind = _tag(raw)
    if kind == "text" or (kind is None and isinstance(raw.get("text"), str)):
        text = raw.get("text")
        if isinstance(text, str):
            if isinstance(raw.get("mediaType"), str):
                details["media_type"] = raw["mediaType"]
            return TextPart(content=text, provider_details=details)
    elif kind == "file" or (kind is None and isinstance(raw.get("file"), dict)):
        file = raw.get("file")
        if isinstance(file, dict):
            return _file_part(file, details) or _generic(raw)
    elif kind is None and ("raw" in raw or "url" in raw):
        return _file_part(raw, details) or _generic(raw)
    if kind == "data" or (kind is None and "data" in raw):
        return GenericPart(type="data", fields=_untagged(raw))
    return _generic(raw)


def _tag(raw: dict[str, Json]) -> str | None:
    """A part's ``kind`` (0.3), or ``type`` (before 0.2); None for 1.0's untagged parts."""
    for key in ("kind", "type"):
        value = raw.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def _untagged(raw: dict[str, Json]) -> dict[str, Json]:
    return {k: v for k, v in raw.items() if k not in ("kind", "type")}


def _generic(raw: dict[str, Json]) -> GenericPart:
    return GenericPart(type=_tag(raw) or "a2a.part", fields=_untagged(raw))


def _file_part(file: dict[str, Json], details: dict[str, Json]) -> Part | None:
    """A file: 0.3 ``{bytes|uri, mimeType, name}``, 1.0 ``{raw|url, mediaType, filename}``
    (and the 1.0 drafts' ``fileWithBytes``/``fileWithUri``)."""
    mime = str_value(file.get("mediaType")) or str_value(file.get("mimeType"))
    name = str_value(file.get("filename")) or str_value(file.get("name"))
    if name is not None:
        details["filename"] = name
    for key in ("raw", "bytes", "fileWithBytes"):
        data = file.get(key)
        if isinstance(data, str):
            return BlobPart(
                mime_type=mime, modality=_modality(mime), content=data, provider_details=details
            )
    for key in ("url", "uri", "fileWithUri"):
        uri = file.get(key)
        if isinstance(uri, str):
            return UriPart(
                uri=uri, mime_type=mime, modality=_modality(mime), provider_details=details
            )
    return None


def _parts(raw: Json) -> list[Part]:
    return [part_from(p) for p in raw] if isinstance(raw, list) else []


def message_from(raw: Json, *, finish_reason: str | None = None) -> Message | None:
    """An A2A Message as a normalized message, role as sent."""
    if not isinstance(raw, dict):
        return None
    role = raw.get("role")
    return Message(
        role=role if isinstance(role, str) else None,
        parts=_parts(raw.get("parts")),
        finish_reason=finish_reason,
    )


def _artifact_parts(artifact: dict[str, Json]) -> list[Part]:
    parts = _parts(artifact.get("parts"))
    aid = str_value(artifact.get("artifactId"))
    for part in parts:
        if aid is not None and not isinstance(part, GenericPart):
            part.provider_details["artifact_id"] = aid
    return parts


# -- results --------------------------------------------------------------------------------

_KINDS = {
    "task": "task",
    "message": "message",
    "status-update": "status-update",
    "artifact-update": "artifact-update",
}
# 1.0 wraps results in a oneof: {"task": ...}, {"message": ...}, {"statusUpdate": ...}...
_WRAPPERS = {
    "task": "task",
    "message": "message",
    "msg": "message",
    "statusUpdate": "status-update",
    "artifactUpdate": "artifact-update",
}


def classify(result: Json) -> tuple[str | None, dict[str, Json]]:
    """(kind, object) of a result or stream payload: ``task``, ``message``,
    ``status-update``, ``artifact-update``, or (None, the object) when it is none of them."""
    if not isinstance(result, dict):
        return None, {}
    kind = result.get("kind")
    if isinstance(kind, str) and kind in _KINDS:
        return _KINDS[kind], result
    if len(result) == 1:
        ((key, inner),) = result.items()
        if key in _WRAPPERS and isinstance(inner, dict):
            return _WRAPPERS[key], inner
    if isinstance(result.get("artifact"), dict) and "taskId" in result:
        return "artifact-update", result
    if isinstance(result.get("status"), dict) and "taskId" in result:
        return "status-update", result
    if isinstance(result.get("status"), dict) and "id" in result:
        return "task", result
    if "messageId" in result and isinstance(result.get("parts"), list):
        return "message", result
    return None, result


class TaskOutput:
    """What a result or a stream of them says: the last status, artifacts by id, a message."""

    def __init__(self) -> None:
        self.state: str | None = None
        self.final = False
        self.status_message: Json = None
        self.artifacts: dict[str, list[Part]] = {}
        self.message: Message | None = None
        self.task: dict[str, Json] = {}

    def status(self, status: Json) -> None:
        if not isinstance(status, dict):
            return
        state = _state_name(status.get("state"))
        if state is not None:
            self.state = state
        # the message of the latest status only: an earlier one ("working...") is history
        message = status.get("message")
        self.status_message = message if isinstance(message, dict) else None

    def add_task(self, task: dict[str, Json]) -> None:
        self.status(task.get("status"))
        for key, name in (("id", "id"), ("contextId", "context_id")):
            if str_value(task.get(key)) is not None:
                self.task[name] = task[key]
        artifacts = task.get("artifacts")
        if isinstance(artifacts, list):
            for n, artifact in enumerate(artifacts):
                if isinstance(artifact, dict):
                    aid = str_value(artifact.get("artifactId")) or f"#{n}"
                    self.artifacts[aid] = _artifact_parts(artifact)
        history = task.get("history")
        if isinstance(history, list):
            self.task["history"] = len(history)

    def add_artifact(self, update: dict[str, Json]) -> None:
        artifact = update.get("artifact")
        if not isinstance(artifact, dict):
            return
        aid = str_value(artifact.get("artifactId")) or f"#{len(self.artifacts)}"
        parts = _artifact_parts(artifact)
        if update.get("append") is True and aid in self.artifacts:
            _append(self.artifacts[aid], parts)
        else:
            self.artifacts[aid] = parts

    def fill(self, call: Call) -> None:
        if self.state is not None:
            self.task["state"] = self.state
            call.finish_reasons = [self.state]
        if self.artifacts:
            self.task["artifacts"] = list(self.artifacts)
        if self.task:
            call.extras["task"] = self.task
        if self.message is not None:
            call.output_messages.append(self.message)
            return
        if self.state is None and not self.artifacts and self.status_message is None:
            return
        status = message_from(self.status_message)
        parts = status.parts if status is not None else []
        for artifact in self.artifacts.values():
            parts.extend(artifact)
        role = status.role if status is not None else "agent"
        call.output_messages.append(Message(role=role, parts=parts, finish_reason=self.state))


def _append(parts: list[Part], chunk: list[Part]) -> None:
    """Append a streamed chunk's parts (``append: true``) to an artifact's parts.

    A text chunk that continues a text part of the same kind (neither has metadata, the
    same media type) is that part's next characters: the two are one part, the text joined
    as sent, with nothing between (a word may be cut across chunks: ``"Toky"``, ``"o is"``).
    Other parts are appended as they came.
    """
    for part in chunk:
        last = parts[-1] if parts else None
        if (
            isinstance(part, TextPart)
            and isinstance(last, TextPart)
            and "metadata" not in part.provider_details
            and last.provider_details == part.provider_details
        ):
            last.content += part.content
        else:
            parts.append(part)


def result_ids(call: Call, kind: str | None, obj: dict[str, Json], where: str) -> None:
    if kind == "task":
        set_id(call, "a2a_task_id", obj.get("id"), f"{where}.id")
    else:
        set_id(call, "a2a_task_id", obj.get("taskId"), f"{where}.taskId")
    set_id(call, "a2a_context_id", obj.get("contextId"), f"{where}.contextId")


def apply_result(call: Call, result: Json, where: str) -> None:
    """A non-streamed result (JSON-RPC ``result`` or a REST body) into ``call``."""
    kind, obj = classify(result)
    if kind is None:
        tasks = obj.get("tasks")
        if isinstance(tasks, list):  # ListTasks
            call.extras["tasks"] = [_task_summary(t) for t in tasks if isinstance(t, dict)]
        elif _is_card(obj):
            call.extras["agent_card"] = card_summary(obj)
        elif obj:
            call.extras["result"] = obj
        return
    wrapped = "" if obj is result else "." + next(iter(result))
    result_ids(call, kind, obj, where + wrapped)
    out = TaskOutput()
    if kind == "task":
        out.add_task(obj)
    elif kind == "message":
        out.message = message_from(obj)
    elif kind == "status-update":
        out.status(obj.get("status"))
    else:
        out.add_artifact(obj)
    out.fill(call)


def _task_summary(task: dict[str, Json]) -> dict[str, Json]:
    status = task.get("status")
    return {
        "id": task.get("id"),
        "context_id": task.get("contextId"),
        "state": _state_name(status.get("state")) if isinstance(status, dict) else None,
    }


# -- agent cards ----------------------------------------------------------------------------


def _is_card(obj: dict[str, Json]) -> bool:
    return isinstance(obj.get("name"), str) and (
        isinstance(obj.get("skills"), list)
        or isinstance(obj.get("supportedInterfaces"), list)
        or isinstance(obj.get("capabilities"), dict)
    )


def card_summary(card: dict[str, Json]) -> dict[str, Json]:
    """An agent card's name, versions, interfaces, skills and capabilities."""
    interfaces: list[list[Json]] = []
    supported = card.get("supportedInterfaces")
    for item in supported if isinstance(supported, list) else ():
        if isinstance(item, dict):
            binding = item.get("protocolBinding") or item.get("transport")
            interfaces.append([binding, item.get("protocolVersion"), item.get("url")])
    if not interfaces and isinstance(card.get("url"), str):  # 0.3 cards only
        interfaces.append(
            [card.get("preferredTransport"), card.get("protocolVersion"), card["url"]]
        )
        additional = card.get("additionalInterfaces")
        interfaces.extend(
            [item.get("transport"), card.get("protocolVersion"), item.get("url")]
            for item in (additional if isinstance(additional, list) else ())
            if isinstance(item, dict) and item.get("url") != card["url"]
        )
    skills = card.get("skills")
    versions = {i[1] for i in interfaces if isinstance(i[1], str)}
    protocol = card.get("protocolVersion")
    return {
        "name": card.get("name"),
        "description": card.get("description"),
        "version": card.get("version"),
        "protocol_version": protocol if isinstance(protocol, str) else None,
        "protocol_versions": sorted(versions),
        "interfaces": interfaces,
        "skills": [
            {"id": s.get("id"), "name": s.get("name")}
            for s in (skills if isinstance(skills, list) else ())
            if isinstance(s, dict)
        ],
        "capabilities": card.get("capabilities"),
    }


# -- errors ---------------------------------------------------------------------------------


def jsonrpc_error(error: Json, status: int | None, source: str, call: Call) -> CallError | None:
    if not isinstance(error, dict):
        return None
    code = error.get("code")
    message = error.get("message")
    if isinstance(code, int) and not isinstance(code, bool) and code in ERROR_NAMES:
        call.extras["error_name"] = ERROR_NAMES[code]
    if "data" in error and error["data"] is not None:
        call.extras["error_data"] = error["data"]
    return CallError(
        status=status,
        type="jsonrpc",
        code=str(code) if code is not None else None,
        message=message if isinstance(message, str) else None,
        source=source,
    )


def http_error(view: ExchangeView, body: Json) -> CallError | None:
    status = view.status
    if status is None or status < 400:
        return None
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        code = error.get("status") or error.get("code")
        message = error.get("message")
        return CallError(
            status=status,
            type="http",
            code=str(code) if code is not None else None,
            message=message if isinstance(message, str) else None,
            source="body",
        )
    text = view.response_body[:2000].decode("utf-8", "replace").strip()
    return CallError(status=status, type="http", code=None, message=text or None, source="http")
