"""Redis RESP2/RESP3 (https://redis.io/docs/latest/develop/reference/protocol-spec/): both
directions of a connection -> :class:`~agentshark.wire.events.Operation` values.

Each command (an array of bulk strings, or an inline command) is an operation of kind
``command``, paired with its reply by order: Redis answers the commands of a connection in
the order sent, pipelined or not. (S|P)SUBSCRIBE and (S|P)UNSUBSCRIBE get one reply per
channel. A pub/sub message (a RESP3 push ``>``, or a RESP2 array ``message``/``pmessage``/
``smessage`` on a connection that subscribed) is an operation of kind ``push`` of its own.

``role`` names what a command does when an agent uses Redis as a queue or a bus:
``queue.publish`` (LPUSH, RPUSH, XADD...), ``queue.consume`` (BRPOP, LPOP, XREADGROUP...),
``queue.ack`` (XACK), ``queue.claim`` (XCLAIM, XAUTOCLAIM), ``pubsub.publish``,
``pubsub.subscribe``, ``pubsub.deliver`` (a push). The messages such commands publish,
deliver or ack are their ``Operation.messages`` (:mod:`agentshark.wire.resp_queue`), and an
RQ job hash written (``HSET rq:job:<id>``) is ``details["rq_job"]``.

After a capture gap the framing resumes at the next value that parses
(:mod:`agentshark.wire.resp_values`), but RESP pairs by order, so lost values break the count:
replies pair again only where TCP acknowledgments prove it: a reply sent before the server
had received the next command seen answers a lost one (``resp.gap_unpaired``); a command sent
after the client had received every server byte up to where reading resumed, with one
command owed before it, proves that one's reply lost (``resp.gap_unanswered``); a reply that
begins exactly where the client's acknowledgment stood when it sent the first command after
lost client bytes, sent when the server had received that command and nothing past it,
answers that command (a sequential client, the rule of HTTP/1 pairing; not once the
connection pipelined across segments). Otherwise replies pair by order as incomplete guesses
(``resp.gap_pairing``).

Secrets: the password of AUTH and of HELLO's AUTH option is never kept (``details
["secret_arguments"]`` counts them). Reply values are kept (bounded) in ``values``, written
only with ``--events``; ``result`` is a short summary (``OK``, an integer, ``bulk 5 bytes``,
``array 3``), ``rows`` the number of elements of an aggregate reply.
"""

from __future__ import annotations

import base64
from collections import deque
from typing import Any

from agentshark.errors import Diagnostic
from agentshark.wire.events import Json, Operation
from agentshark.wire.resp_queue import QUEUE_COMMANDS, messages, push_messages, rq_job
from agentshark.wire.resp_values import RespError, RespReader, RespValue

PROTOCOL = "redis"
MAX_VALUE_BYTES = 1 << 20  # reply bytes kept in ``values`` per operation
ROLES = {
    **dict.fromkeys(("LPUSH", "RPUSH", "LPUSHX", "RPUSHX", "XADD"), "queue.publish"),
    **dict.fromkeys(
        (
            "BRPOP", "BLPOP", "LPOP", "RPOP", "BLMOVE", "LMOVE", "BRPOPLPUSH", "RPOPLPUSH",
            "LMPOP", "BLMPOP", "XREADGROUP", "XREAD",
        ),
        "queue.consume",
    ),
    "XACK": "queue.ack",
    "XCLAIM": "queue.claim",
    "XAUTOCLAIM": "queue.claim",
    "PUBLISH": "pubsub.publish",
    "SPUBLISH": "pubsub.publish",
    **dict.fromkeys(("SUBSCRIBE", "PSUBSCRIBE", "SSUBSCRIBE"), "pubsub.subscribe"),
}  # fmt: skip
_PER_CHANNEL = frozenset(
    ("SUBSCRIBE", "PSUBSCRIBE", "SSUBSCRIBE", "UNSUBSCRIBE", "PUNSUBSCRIBE", "SUNSUBSCRIBE")
)
_PUSH_KINDS = frozenset((b"message", b"pmessage", b"smessage"))


def looks_like_resp(client: bytes) -> bool:
    """A RESP array of bulk strings: ``*<n>\\r\\n$<len>\\r\\n``."""
    if not client.startswith(b"*"):
        return False
    end = client.find(b"\r\n", 1, 16)
    return end > 1 and client[1:end].isdigit() and client[end + 2 : end + 3] in (b"$", b"")


def text(data: bytes) -> Json:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(data).decode()}


def plain(kind: str, value: Any) -> Json:
    """A reply value as JSON: strings as text (base64 when not UTF-8), errors as
    ``{"error": ...}``, maps as lists of pairs."""
    if isinstance(value, bytes):
        return {"error": text(value)} if kind in "-!" else text(value)
    if kind in "%|" and value is not None:
        return [[plain(*k), plain(*v)] for k, v in value]
    if isinstance(value, list):
        return [plain(k, v) for k, v in value]
    return value


class _Command:
    __slots__ = (
        "acked", "answered", "args", "end", "name", "op", "replies", "segment", "subscribed",
    )  # fmt: skip

    def __init__(self, name: str, op: dict[str, Any], replies: int, args: list[bytes]) -> None:
        self.name = name  # "" for the mark of client bytes lost in a gap
        self.op = op
        self.replies = replies  # replies still owed
        self.args = args  # a queue command's arguments (after its name), else empty
        self.end = -1  # client stream offset past it
        self.acked = -1  # of the server's stream, by the segment that carried it
        self.segment = 0  # the client segment (feed) that finished it
        self.answered = 0  # for the mark of lost client bytes: replies given out to them
        self.subscribed = False  # the connection had subscribed when it was sent


_LOST = ""  # the name of the queue's mark of lost client bytes


class RespSession:
    """Both directions of one Redis connection; see the module docstring."""

    __slots__ = (
        "_acked", "_count", "_ended", "_pipelined", "_queue", "_readers", "_segments",
        "_subscribed", "_unsure",
        "diagnostics", "location",
    )  # fmt: skip

    def __init__(self, location: str) -> None:
        self.location = location
        self._readers = (
            RespReader(inline=True, location=f"{location} client"),
            RespReader(inline=False, location=f"{location} server"),
        )
        self._unsure: str | None = None  # the gap since which pairing by order is not proven
        self._acked = -1
        self._queue: deque[_Command] = deque()
        self._subscribed = False
        # a command was sent in a later segment than an older one still waiting for its reply
        # (a batch written at once, in one segment, is not counted)
        self._pipelined = False
        self._segments = 0  # client segments fed
        self._count = 0
        self._ended: list[bool | None] = [None, None]
        self.diagnostics: list[Diagnostic] = []

    def feed(self, direction: int, data: bytes, ts: float, acked: int = -1) -> list[Operation]:
        reader = self._readers[direction]
        if reader.lost:
            return []
        try:
            values = reader.feed(data, ts)
        except RespError as exc:
            reader.lose()
            self._diagnostic(
                "resp.framing",
                f"{exc}: nothing more of this direction is read",
                direction,
                reader.offset,
            )
            return []
        out: list[Operation] = []
        # a value read from bytes held while hunting came with an earlier segment's ack
        self._acked = -1 if reader.resynced and reader.held else acked
        for diag, at in reader.resynced:
            self.diagnostics.append(diag)
            if direction == 1:
                self._server_resync(at, out)
        reader.resynced.clear()
        self._segments += direction == 0
        for value in values:
            if direction == 0:
                self._command(value, value.ts)
            else:
                self._reply(value, value.ts, out)
        return out

    def gap(self, direction: int, size: int, ts: float) -> list[Operation]:
        """Lost bytes: the direction hunts for its next value (see
        :mod:`agentshark.wire.resp_values`); what the loss does to the pairing is in
        :meth:`_reply` and :meth:`_server_resync`."""
        reader = self._readers[direction]
        at_rest = reader.at_rest
        diag = reader.gap(size)
        if diag is None:
            return []
        self.diagnostics.append(diag)
        if direction == 0:
            if not self._queue or self._queue[-1].name != _LOST:
                self._queue.append(_Command(_LOST, {}, 0, []))
        elif self._queue or not at_rest:
            self._unsure = self._unsure or diag.location  # replies lost: to which commands?
        return []

    def _server_resync(self, at: int, out: list[Operation]) -> None:
        """The server's framing resumed at ``at``. A command the client sent having
        received every server byte up to there came after everything lost: when exactly
        one command was waiting before it, the lost bytes held that one's reply (when it was
        sent unsubscribed, so no push could be among them), and pairing by order is proven
        again."""
        if not self._unsure:
            return
        for n, cmd in enumerate(self._queue):
            if cmd.acked != at:
                continue
            first = self._queue[0]
            if n == 1 and first.name not in _PER_CHANNEL | {_LOST} and not first.subscribed:
                head = self._queue.popleft()
                head.op["diagnostics"].append(
                    Diagnostic(
                        code="resp.gap_unanswered",
                        message=f"its reply was lost in a capture gap ({self._unsure}): the "
                        "client's next command was sent after the lost bytes had come",
                        location=self.location,
                    )
                )
                if head.args:
                    head.op["messages"] = messages(head.name, head.args, None)
                self._unsure = None
                out.append(self._done(head.op, complete=False))
            elif n == 0:
                self._unsure = None
            elif n == 1 and first.name == _LOST and self._sequential(cmd, at, answered=True):
                # the lost server bytes held the answers to the lost commands
                self._queue.popleft()
                self._unsure = None
            return

    def end(self, direction: int, ts: float, *, clean: bool) -> list[Operation]:
        self._ended[direction] = clean
        return []

    def close(self) -> list[Operation]:
        out = []
        for reader in self._readers:
            self.diagnostics.extend(reader.close())
        while self._queue:
            cmd = self._queue.popleft()
            if cmd.name == _LOST:
                continue
            if cmd.args:
                cmd.op["messages"] = messages(cmd.name, cmd.args, None)
            cmd.op["diagnostics"].append(
                Diagnostic(
                    code="resp.unanswered",
                    message=f"no reply to this {cmd.name} in the capture",
                    location=self.location,
                )
            )
            out.append(self._done(cmd.op, complete=False))
        return out

    def _diagnostic(self, code: str, message: str, direction: int, offset: int) -> None:
        side = "client" if direction == 0 else "server"
        self.diagnostics.append(
            Diagnostic(code=code, message=message, location=f"{self.location} {side} byte {offset}")
        )

    # -- commands -------------------------------------------------------------------------

    def _command(self, value: RespValue, ts: float) -> None:
        if value.kind == "inline":
            args: list[bytes] = value.value
        elif (
            value.kind == "*"
            and value.value
            and all(k == "$" and v is not None for k, v in value.value)
        ):
            args = [v for _, v in value.value]
        else:
            self._diagnostic(
                "resp.not_a_command",
                f"a {value.kind!r} value where a command (an array of bulk strings) was expected",
                0,
                value.offset,
            )
            return
        name = args[0].decode("latin-1").upper()
        params = [text(a) for a in args[1:]]
        secrets = _secret_positions(name, args)
        for n in sorted(secrets, reverse=True):
            del params[n - 1]
        op: dict[str, Any] = {
            "command": name,
            "statement": " ".join(
                [name, *(p if isinstance(p, str) else "<binary>" for p in params)]
            ),
            "parameters": params,
            "started": ts,
            "details": {"secret_arguments": len(secrets)} if secrets else {},
            "diagnostics": [],
            "role": ROLES.get(name),
            "values": [],
            "kept": 0,
        }
        if value.kind == "inline":
            op["details"]["inline"] = True
        if name in ("HSET", "HMSET") and (job := rq_job(name, args[1:])) is not None:
            op["details"]["rq_job"] = job
        replies = max(1, len(args) - 1) if name in _PER_CHANNEL else 1
        if name in _PER_CHANNEL and name.endswith("UNSUBSCRIBE") and len(args) == 1:
            replies = 1  # one per channel subscribed: at least one
        kept = args[1:] if name in QUEUE_COMMANDS else []
        command = _Command(name, op, replies, kept)
        command.subscribed = self._subscribed
        if name in ROLES and ROLES[name] == "pubsub.subscribe":
            self._subscribed = True
        command.end = value.offset + value.size
        command.acked = self._acked
        command.segment = self._segments
        waiting = next((c for c in self._queue if c.name != _LOST), None)
        if waiting is not None and waiting.segment < command.segment:
            self._pipelined = True
        self._queue.append(command)

    # -- replies --------------------------------------------------------------------------

    def _reply(self, value: RespValue, ts: float, out: list[Operation]) -> None:
        if self._is_push(value):
            out.append(self._push(value, ts))
            return
        if not self._queue:
            self._diagnostic(
                "resp.unpaired",
                "a reply to no command seen (the capture starts "
                "mid-connection or lost client bytes)",
                1,
                value.offset,
            )
            return
        if self._queue[0].name == _LOST and self._lost_reply(value):
            return
        cmd = self._queue[0]
        op = cmd.op
        op.setdefault("response_started", ts)
        op["ended"] = ts
        reply = plain(value.kind, value.value)
        if op["kept"] + value.size <= MAX_VALUE_BYTES:
            op["values"].append([reply])
            op["kept"] += value.size
        else:
            op["values_cut"] = True
        if value.kind in "-!":
            message = reply["error"] if isinstance(reply, dict) else None
            code = message.split(" ", 1)[0] if isinstance(message, str) else None
            op["error"] = {"code": code, "message": message}
        else:
            op["result"] = _summary(value)
            if value.kind in "*%~" and value.value is not None:
                op["rows"] = len(value.value)
        cmd.replies -= 1
        if cmd.name.endswith("UNSUBSCRIBE") and isinstance(value.value, list):
            left = value.value[-1][1] if value.value else None
            if left == 0:
                cmd.replies = 0
                self._subscribed = False
        if cmd.replies <= 0:
            self._queue.popleft()
            if cmd.args:
                op["messages"] = messages(cmd.name, cmd.args, value)
            out.append(self._done(op, complete=True))

    def _lost_reply(self, value: RespValue) -> bool:
        """A reply when the mark of lost client bytes is the head: True when the server's
        ack proves it answers a lost command (the server had not yet received the command
        after them); else the mark goes, and pairing by order is not proven from here."""
        after = self._queue[1] if len(self._queue) > 1 else None
        if self._acked >= 0 and (after is None or self._acked < after.end):
            self._diagnostic(
                "resp.gap_unpaired",
                "a reply to a command lost in a capture gap (the server had not received "
                "the next command seen when it sent it): it is not paired",
                1,
                value.offset,
            )
            self._queue[0].answered += 1
            return True
        mark = self._queue.popleft()
        if after is not None and self._sequential(after, value.offset, answered=mark.answered > 0):
            return False
        self._unsure = self._unsure or f"{self.location} client"
        if not self._queue:
            self._diagnostic(
                "resp.unpaired",
                "a reply to no command seen (lost client bytes)",
                1,
                value.offset,
            )
            return True
        return False

    def _sequential(self, after: _Command, offset: int, *, answered: bool) -> bool:
        """The reply at server ``offset`` answers ``after``, the first command seen after
        lost client bytes (the last waiting), when TCP shows a sequential exchange (the
        picture HTTP/1 pairing trusts, :mod:`agentshark.http.h1_pairing`): the client sent
        ``after`` having received every server byte before this reply and none of it, after
        the lost commands were ``answered`` (a reply to them seen, or server bytes lost
        where their replies were: a sequential client waits for its reply), nothing after
        ``after`` is waiting yet, and the server sent the reply having received ``after``
        and no byte past it. Not on a connection that pipelines across segments, nor when
        ``after`` was sent subscribed (a push may be among the replies)."""
        return (
            answered
            and not self._pipelined
            and not after.subscribed
            and self._queue[-1] is after
            and after.acked == offset
            and self._acked == after.end
        )

    def _is_push(self, value: RespValue) -> bool:
        if value.kind == ">":
            first = value.value[0][1] if value.value else None
            head = self._queue[0].name if self._queue else ""
            # RESP3 sends (un)subscribe confirmations as pushes too: those answer the command
            return not (
                head in _PER_CHANNEL
                and first
                in (
                    b"subscribe",
                    b"psubscribe",
                    b"ssubscribe",
                    b"unsubscribe",
                    b"punsubscribe",
                    b"sunsubscribe",
                )
            )
        return (
            self._subscribed
            and value.kind == "*"
            and bool(value.value)
            and isinstance(value.value[0][1], bytes)
            and value.value[0][1] in _PUSH_KINDS
        )

    def _push(self, value: RespValue, ts: float) -> Operation:
        items = [plain(k, v) for k, v in value.value or []]
        name = items[0].upper() if items and isinstance(items[0], str) else "PUSH"
        channel = items[-2] if len(items) >= 3 and isinstance(items[-2], str) else None
        op: dict[str, Any] = {
            "command": name,
            "statement": channel,
            "parameters": items[1:],
            "started": ts,
            "response_started": ts,
            "ended": ts,
            "details": {"push": value.kind == ">"},
            "diagnostics": [],
            "role": "pubsub.deliver",
            "values": [[items]],
            "result": name.lower(),
            "messages": push_messages(value.value or []),
        }
        return self._done(op, complete=True, kind="push")

    def _done(self, op: dict[str, Any], *, complete: bool, kind: str = "command") -> Operation:
        if self._unsure and kind == "command" and complete:
            complete = False
            op["diagnostics"].append(
                Diagnostic(
                    code="resp.gap_pairing",
                    message=f"bytes lost in a capture gap ({self._unsure}) leave it unproven "
                    "which command the reply paired with here answers (RESP pairs by order, "
                    "and the count of lost commands or replies is not known)",
                    location=self.location,
                )
            )
        index = self._count
        self._count += 1
        return Operation(
            protocol=PROTOCOL,
            kind=kind,
            index=index,
            command=op["command"],
            statement=op["statement"],
            parameters=op["parameters"],
            started=op["started"],
            request_ended=op["started"],
            response_started=op.get("response_started"),
            ended=op.get("ended"),
            request_complete=True,
            response_complete=complete,
            result=op.get("result"),
            rows=op.get("rows"),
            error=op.get("error"),
            role=op["role"],
            values=op["values"] or None,
            values_cut=bool(op.get("values_cut")),
            details=op["details"],
            messages=op.get("messages") or [],
            diagnostics=op["diagnostics"],
        )


def _secret_positions(name: str, args: list[bytes]) -> list[int]:
    """Indexes in ``args`` of passwords: AUTH's last argument, HELLO's ``AUTH user pass``."""
    if name == "AUTH" and len(args) >= 2:
        return [len(args) - 1]
    if name == "HELLO":
        for n, arg in enumerate(args):
            if arg.upper() == b"AUTH" and n + 2 < len(args):
                return [n + 2]
    return []


def _summary(value: RespValue) -> str:
    kind, v = value.kind, value.value
    if v is None:
        return "nil"
    if kind == "+":
        return text(v) if isinstance(text(v), str) else "simple string"
    if kind in ":#,(":
        return str(v) if kind != "(" else v.decode("latin-1")
    if kind in "$=":
        return f"bulk {len(v)} bytes"
    names = {"*": "array", "%": "map", "~": "set", ">": "push"}
    return f"{names.get(kind, kind)} {len(v)}"
