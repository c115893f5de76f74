"""AMQP 0-9-1 (RabbitMQ; https://www.rabbitmq.com/resources/specs/amqp0-9-1.pdf): both
directions of a connection -> :class:`~agentshark.wire.events.Operation` values.

Every method frame is part of one operation (``command``: the method's name,
``basic.publish``); kind ``request`` when the client sent it first, ``push`` when the
server did (connection.start/tune, basic.deliver, basic.return, a server's channel.close or
basic.cancel). A synchronous method waits for its reply on its channel (§2.3.5.2: replies
come in order on a channel, and a peer sends no other synchronous request meanwhile): the
reply is the operation's response (``result``: the reply's name; its arguments in
``details["reply"]``), a get-ok with its content. A method sent ``no-wait`` and the
asynchronous ones (basic.publish, basic.deliver, basic.ack/nack/reject from the client,
basic.recover-async, connection.blocked...) have no reply by design: they end with their
own last frame, complete when it was seen whole. A content method (publish, deliver,
get-ok, return) ends with its content: the header's body size says when the body frames are
all there (§4.2.6).

Publisher confirms (https://www.rabbitmq.com/docs/confirms#publisher-confirms): after
confirm.select, the broker numbers a channel's publishes from 1 and acks or nacks them by
that number (``multiple``: every number up to it; 0 with multiple: all). Such a publish
waits for its confirm, which is its response (``result`` ``basic.ack``/``basic.nack``,
``details["publish_seq"]``); a nack is its error.

Errors: a connection.close or channel.close with a reply code other than 200 carries it as
the close's ``error`` (``code``, ``message``: the reply text, ``class_id``/``method_id``
and ``method``: the method that failed), and as the error of the request it answers (the
pending request of that method). Whatever else was waiting on the closed channel ends
incomplete with a Diagnostic.

Messages (:mod:`agentshark.wire.amqp_messages`): a publish, deliver, get-ok or return
carries one :class:`~agentshark.wire.events.QueueMessage` (``destination``: the exchange of
a publish, the consumer's queue of a delivery when its basic.consume was seen, the queue of
a basic.get); a client's ack/nack/reject one naming the delivery by channel and tag.
``role``: ``queue.publish``, ``queue.deliver`` (deliver, get-ok), ``queue.ack``,
``queue.nack``, ``queue.reject``.

Secrets: the SASL response of connection.start-ok and secure-ok (PLAIN and AMQPLAIN carry
the password) and update-secret's new secret are never kept; ``details["secret_arguments"]``
counts them. Heartbeat frames carry nothing and make no operation. A bad frame-end or an
impossible frame size ends the direction, and every operation that ends after it is
incomplete. After a capture gap the framing resumes at the next frame that chains
(:mod:`agentshark.wire.amqp_frames`), and :meth:`AmqpSession._loss` settles what the lost
frames may have held: a content cut, a reply a request waited for, a confirm, a publish a
confirm channel counts; the evidence for what follows is the spec's own: replies by channel
and method name, so an operation begun after the gap pairs as if nothing happened. A reply to
no request seen is an incomplete operation of its own; a method that does not parse is a
Diagnostic and the frames after it are still read.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from agentshark.errors import Diagnostic
from agentshark.wire.amqp_frames import (
    FRAME_BODY,
    FRAME_HEADER,
    FRAME_METHOD,
    METHODS,
    PROTOCOL_HEADER,
    SECRET_ARGUMENTS,
    AmqpError,
    Frame,
    FrameReader,
    Method,
    content_header,
    method_frame,
)
from agentshark.wire.amqp_messages import message, settlement
from agentshark.wire.events import Json, Operation, QueueMessage

PROTOCOL = "amqp"
ROLES = {  # by the action of the operation's message
    "publish": "queue.publish",
    "deliver": "queue.deliver",
    "ack": "queue.ack",
    "nack": "queue.nack",
    "reject": "queue.reject",
}
_CLOSES = frozenset(("connection.close", "channel.close"))
_CLOSE_OKS = frozenset(("connection.close-ok", "channel.close-ok"))
_REPLIES = frozenset(r for m in METHODS.values() for r in m.replies)
_ACTIONS = {"basic.publish": "publish", "basic.deliver": "deliver", "basic.return": "return"}


def sniff_amqp(client: bytes, server: bytes, port: int) -> bool | None:
    """The client's first bytes are AMQP 0-9-1's protocol header (§4.2.2)."""
    if len(client) < len(PROTOCOL_HEADER):
        return None if PROTOCOL_HEADER.startswith(client) and client else False
    return client.startswith(PROTOCOL_HEADER)


@dataclass(slots=True)
class _Op:
    command: str
    kind: str
    channel: int
    started: float
    args: dict[str, Json]
    order: int  # its place among the operations begun
    waiting: tuple[str, ...] = ()
    request_ended: float | None = None
    response_started: float | None = None
    ended: float | None = None
    request_complete: bool = False
    response_complete: bool = False
    result: str | None = None
    error: dict[str, Json] | None = None
    details: dict[str, Json] = field(default_factory=dict)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    action: str | None = None  # the QueueMessage it carries, once its content is known
    msg_args: dict[str, Json] = field(default_factory=dict)
    props: dict[str, Json] | None = None
    body: bytes | None = None
    destination: str | None = None
    unpaired: bool = False  # a reply whose request is not in the capture
    unsure: bool = False  # what answered it may have been lost in a gap


@dataclass(slots=True)
class _Content:
    """A content method's header and body frames, as they come (§4.2.6)."""

    op: _Op
    response: bool  # the op's response carries it (get-ok), not its request
    size: int | None = None  # the header's body size, once the header came
    props: dict[str, Json] = field(default_factory=dict)
    chunks: list[bytes] = field(default_factory=list)
    got: int = 0


@dataclass(slots=True)
class _Channel:
    pending: tuple[deque[_Op], deque[_Op]] = field(default_factory=lambda: (deque(), deque()))
    content: list[_Content | None] = field(default_factory=lambda: [None, None])
    confirm: bool = False
    seq: int = 0
    unconfirmed: dict[int, _Op] = field(default_factory=dict)
    seq_unknown: bool = False  # client frames were lost: publishes may be uncounted
    gapped: bool = False  # frames of it were lost
    consumers: dict[str, str] = field(default_factory=dict)  # consumer tag -> queue
    last_queue: str | None = None  # of the channel's last queue.declare-ok (§1.7.2.1)


class AmqpSession:
    """Both directions of one AMQP 0-9-1 connection; see the module docstring."""

    __slots__ = (
        "_begun", "_channels", "_count", "_gapped", "_lost", "_out", "_readers",
        "diagnostics", "location",
    )  # fmt: skip

    def __init__(self, location: str) -> None:
        self.location = location
        self._readers = (
            FrameReader(want_header=True, location=f"{location} client"),
            FrameReader(want_header=False, location=f"{location} server"),
        )
        self._channels: dict[int, _Channel] = {}
        self._count = 0
        self._begun = 0
        self._lost = False  # a direction was lost: what ends from now on is not sure
        self._gapped = False  # bytes were lost at a frame boundary (a channel may be new)
        self._out: list[Operation] = []
        self.diagnostics: list[Diagnostic] = []

    # -- the decoder's interface ------------------------------------------------------------

    def feed(self, direction: int, data: bytes, ts: float, acked: int = -1) -> list[Operation]:
        reader = self._readers[direction]
        if reader.lost:
            return []
        frames = reader.feed(data, ts)
        header, reader.header = reader.header, None
        if header is not None and (direction == 1 or header != PROTOCOL_HEADER):
            version = ".".join(str(b) for b in header[4:])
            self._diagnostic("amqp.version", f"protocol header AMQP {version}: " + (
                "the server refuses the client's version (§4.2.2)" if direction else
                "not 0-9-1; its frames are read as 0-9-1's"), direction, 0)  # fmt: skip
        for diag, skipped in reader.resynced:
            self.diagnostics.append(diag)
            if skipped:  # frames of the skipped bytes are lost too
                self._loss(direction, None, diag.location)
        reader.resynced.clear()
        for frame in frames:
            if frame.damaged:
                self._loss(direction, frame.channel, f"{self.location} byte {frame.offset}")
            else:
                self._frame(direction, frame, frame.ts)
        if reader.error is not None:
            self._lose(direction, "amqp.framing",
                       f"{reader.error}: nothing more of this direction is read")  # fmt: skip
        out, self._out = self._out, []
        return out

    def gap(self, direction: int, size: int, ts: float) -> list[Operation]:
        """Lost bytes: a frame damaged costs what it was part of on its channel; frames lost
        at a boundary cost what waited on every channel (see :meth:`_loss`)."""
        for item in self._readers[direction].gap(size):
            if isinstance(item, Diagnostic):
                self.diagnostics.append(item)
                self._loss(direction, None, item.location)
            elif item.damaged:
                self._loss(direction, item.channel, f"{self.location} byte {item.offset}")
        out, self._out = self._out, []
        return out

    def _loss(self, direction: int, number: int | None, where: str | None) -> None:
        """Frames of ``direction`` lost on channel ``number`` (None: on any channel). A
        content they were part of is cut; a request of the other side waiting for their
        reply ends incomplete (the reply may be among them); a confirm channel's confirms
        (server frames) are no longer sure, its publish count (client frames) no longer
        known. Operations that begin after the loss pair as before: by channel and method."""
        channels = self._channels.items() if number is None else [(number, self._channel(number))]
        why = f"bytes of this connection were lost ({where})"
        self._gapped = True
        for n, ch in list(channels):
            ch.gapped = True
            content = ch.content[direction]
            if content is not None:
                ch.content[direction] = None
                content.op.diagnostics.append(Diagnostic(
                    code="amqp.gap_content", message=f"{why} while its content came",
                    location=f"{self.location} channel {n}"))  # fmt: skip
                if content.size is not None:
                    content.op.props = content.props
                self._emit(content.op)
            waiting = ch.pending[1 - direction]
            for op in list(waiting):
                waiting.remove(op)
                op.diagnostics.append(Diagnostic(
                    code="amqp.gap_reply", message=f"{why} while it waited: its reply may "
                    "be among them", location=f"{self.location} channel {n}"))  # fmt: skip
                self._emit(op)
            if direction == 1:
                for op in ch.unconfirmed.values():
                    op.unsure = True
            elif ch.confirm:
                ch.seq_unknown = True

    def end(self, direction: int, ts: float, *, clean: bool) -> list[Operation]:
        return []

    def close(self) -> list[Operation]:
        """Every operation still open, incomplete, in the order they started."""
        for direction, reader in enumerate(self._readers):
            self.diagnostics.extend(reader.close())
            if reader.left and not reader.lost:
                self._diagnostic("amqp.truncated", f"the last {reader.left} bytes are a "
                                 "frame never finished", direction, reader.offset)  # fmt: skip
        left: list[_Op] = []
        for ch in self._channels.values():
            left.extend(self._drop(ch))
        for op in sorted(left, key=lambda o: o.order):
            self._emit(op)
        out, self._out = self._out, []
        return out

    # -- frames ---------------------------------------------------------------------------

    def _lose(self, direction: int, code: str, message: str) -> None:
        reader = self._readers[direction]
        reader.lost = True
        self._lost = True
        self._diagnostic(code, message, direction, reader.offset)

    def _diagnostic(self, code: str, message: str, direction: int, offset: int) -> None:
        side = "client" if direction == 0 else "server"
        self.diagnostics.append(
            Diagnostic(code=code, message=message, location=f"{self.location} {side} byte {offset}")
        )

    def _channel(self, number: int) -> _Channel:
        ch = self._channels.get(number)
        if ch is None:
            ch = self._channels[number] = _Channel(gapped=self._gapped)
        return ch

    def _frame(self, direction: int, frame: Frame, ts: float) -> None:
        ch = self._channel(frame.channel)
        if frame.type == FRAME_METHOD:
            try:
                method, args = method_frame(frame.payload)
            except AmqpError as exc:
                self._diagnostic("amqp.bad_method", f"channel {frame.channel}: {exc}",
                                 direction, frame.offset)  # fmt: skip
                return
            self._cut_content(ch, direction, frame, f"a {method.name}")
            self._method(direction, frame.channel, method, args, ts)
        elif frame.type in (FRAME_HEADER, FRAME_BODY):
            self._content(ch, direction, frame, ts)
        elif frame.type not in (4, 8):  # heartbeats (8; the spec's table says 4)
            self._diagnostic("amqp.unknown_frame", f"a frame of type {frame.type} on channel "
                             f"{frame.channel}: not an AMQP 0-9-1 frame type",
                             direction, frame.offset)  # fmt: skip

    def _cut_content(self, ch: _Channel, direction: int, frame: Frame, what: str) -> None:
        """A method where a content's frames were due: that content is cut short."""
        content = ch.content[direction]
        if content is None:
            return
        ch.content[direction] = None
        content.op.diagnostics.append(Diagnostic(
            code="amqp.content_cut",
            message=f"{what} came before the content of this {content.op.command} was whole "
                    f"({content.got} of {content.size} body bytes)",
            location=f"{self.location} channel {frame.channel} byte {frame.offset}",
        ))  # fmt: skip
        if content.size is not None:
            content.op.props = content.props
        self._finish(content.op, frame.channel, ch)

    def _content(self, ch: _Channel, direction: int, frame: Frame, ts: float) -> None:
        content = ch.content[direction]
        if content is None or (frame.type == FRAME_HEADER) != (content.size is None):
            name = "content header" if frame.type == FRAME_HEADER else "body"
            self._diagnostic("amqp.unexpected_frame", f"a {name} frame on channel "
                             f"{frame.channel} with no content method waiting for it",
                             direction, frame.offset)  # fmt: skip
            return
        if frame.type == FRAME_HEADER:
            try:
                _, content.size, content.props = content_header(frame.payload)
            except AmqpError as exc:
                content.op.diagnostics.append(Diagnostic(
                    code="amqp.bad_header", message=f"content header: {exc}",
                    location=f"{self.location} channel {frame.channel} byte {frame.offset}",
                ))  # fmt: skip
                ch.content[direction] = None
                self._finish(content.op, frame.channel, ch)
                return
        else:
            content.chunks.append(frame.payload)
            content.got += len(frame.payload)
        assert content.size is not None
        if content.got >= content.size:
            op = content.op
            ch.content[direction] = None
            op.props = content.props
            op.body = b"".join(content.chunks)
            if content.got > content.size:
                op.diagnostics.append(Diagnostic(
                    code="amqp.body_size",
                    message=f"{content.got} body bytes where the header said {content.size}",
                    location=f"{self.location} channel {frame.channel}",
                ))  # fmt: skip
            if content.response:
                op.ended = ts
                op.response_complete = True
            else:
                op.request_ended = op.ended = ts
                op.request_complete = op.response_complete = True  # nothing is owed
            self._finish(op, frame.channel, ch)

    # -- methods --------------------------------------------------------------------------

    def _method(
        self, direction: int, number: int, method: Method, args: dict[str, Json], ts: float
    ) -> None:
        ch = self._channel(number)
        name = method.name
        waiting = ch.pending[1 - direction]
        op = next((o for o in waiting if name in o.waiting), None)
        if op is not None:
            waiting.remove(op)
            self._reply(op, direction, number, method, args, ts)
            return
        tag = args.get("delivery_tag")
        uncounted = (
            direction == 1
            and ch.confirm
            and name in ("basic.ack", "basic.nack")
            and (ch.seq_unknown or (isinstance(tag, int) and tag > ch.seq))
        )
        if (
            direction == 1
            and name in ("basic.ack", "basic.nack")
            and not uncounted
            and self._confirm(ch, name, args, ts)
        ):
            return
        op = _Op(
            command=name,
            kind="request" if direction == 0 else "push",
            channel=number,
            started=ts,
            args=args,
            order=self._begun,
            request_ended=ts,
            request_complete=True,
        )
        self._begun += 1
        op.details["arguments"] = _kept(args, op)
        op.msg_args = args
        if name in _REPLIES:  # its request is not in the capture: the op is not whole
            op.unpaired = True
            op.diagnostics.append(Diagnostic(
                code="amqp.unpaired", message=f"a {name} answering no request seen (the "
                "capture starts mid-connection, or lost the other side's bytes)",
                location=f"{self.location} channel {number}"))  # fmt: skip
        if uncounted:  # the publishes it confirms cannot be counted
            op.unpaired = True
            op.diagnostics.append(Diagnostic(
                code="amqp.gap_confirm", message=f"a {name} on a confirm channel of a "
                "publish not seen whole (or not counted after lost client bytes): which "
                "publishes it confirms is not known",
                location=f"{self.location} channel {number}"))  # fmt: skip
        if name in _CLOSES:
            self._closing(ch, direction, number, op, args)
        if name == "confirm.select":
            ch.confirm = True
        elif name == "basic.consume" and args.get("no_wait"):
            ch.consumers[str(args.get("consumer_tag"))] = self._queue(ch, args)
        if method.content:
            op.action = _ACTIONS.get(name)
            op.request_complete = False
            op.request_ended = None
            ch.content[direction] = _Content(op=op, response=False)
            if name == "basic.publish":
                op.destination = _str(args.get("exchange"))
            elif name == "basic.deliver":
                op.destination = ch.consumers.get(str(args.get("consumer_tag")))
                if op.destination is None and ch.gapped:
                    op.unsure = True  # its basic.consume(-ok) may be among the lost bytes
            if name == "basic.return":
                op.error = {"code": args.get("reply_code"), "message": args.get("reply_text")}
            return
        if name in ("basic.ack", "basic.nack", "basic.reject") and direction == 0:
            op.action = name.removeprefix("basic.")
        if method.replies and not args.get("no_wait"):
            op.waiting = method.replies
            ch.pending[direction].append(op)
            return
        op.ended = ts
        op.response_complete = True  # nothing is owed
        self._finish(op, number, ch)

    def _reply(
        self, op: _Op, direction: int, number: int, method: Method, args: dict[str, Json],
        ts: float,
    ) -> None:  # fmt: skip
        ch = self._channel(number)
        op.response_started = op.ended = ts
        op.result = method.name
        reply = _kept(args, op)
        if reply:
            op.details["reply"] = reply
        name = method.name
        if name == "queue.declare-ok":
            ch.last_queue = _str(args.get("queue"))
        elif name == "basic.consume-ok":
            ch.consumers[str(args.get("consumer_tag"))] = self._queue(ch, op.args)
        elif name == "basic.get-ok":
            op.action = "deliver"
            op.msg_args = args
            op.destination = self._queue(ch, op.args)
            ch.content[direction] = _Content(op=op, response=True)
            return
        op.response_complete = True
        if name in _CLOSE_OKS:  # the channel (or every channel) starts afresh
            closed = [number] if name == "channel.close-ok" else list(self._channels)
            for left in [o for n in closed for o in self._drop(self._channels[n])]:
                self._finish(left, left.channel, None)
            for n in closed:
                self._channels.pop(n, None)
        self._finish(op, number, ch)

    def _closing(
        self, ch: _Channel, direction: int, number: int, op: _Op, args: dict[str, Json]
    ) -> None:
        """A close: its reply code is its error (200 is reply-success) and the error of the
        peer's pending request of the method it names."""
        code = args.get("reply_code")
        if code == 200:
            return
        key = (args.get("class_id"), args.get("method_id"))
        failed = METHODS.get(key) if isinstance(key[0], int) and isinstance(key[1], int) else None  # type: ignore[arg-type]
        op.error = {
            "code": code,
            "message": args.get("reply_text"),
            "class_id": key[0],
            "method_id": key[1],
            "method": failed.name if failed else None,
        }
        if failed is None:
            return
        chans = [ch] if number else list(self._channels.values())
        for c in chans:
            victim = next((o for o in c.pending[1 - direction] if o.command == failed.name), None)
            if victim is not None:
                c.pending[1 - direction].remove(victim)
                victim.response_started = victim.ended = op.started
                victim.response_complete = True
                victim.result = op.command
                victim.error = dict(op.error)
                self._finish(victim, victim.channel, c)
                return

    def _confirm(self, ch: _Channel, name: str, args: dict[str, Json], ts: float) -> bool:
        """A broker's basic.ack/nack of publishes on a confirm channel; False when it names
        none that is waiting (it is then an operation of its own)."""
        if not ch.confirm or not ch.unconfirmed:
            return False
        tag = args.get("delivery_tag")
        if not isinstance(tag, int):
            return False
        if args.get("multiple"):
            seqs = [s for s in ch.unconfirmed if s <= tag or tag == 0]
        else:
            seqs = [tag] if tag in ch.unconfirmed else []
        for seq in seqs:
            op = ch.unconfirmed.pop(seq)
            op.response_started = op.ended = ts
            op.response_complete = True
            op.result = name
            op.details["confirm"] = {"method": name, "delivery_tag": tag,
                                     "multiple": bool(args.get("multiple"))}  # fmt: skip
            if name == "basic.nack":
                op.error = {"code": None, "message": None, "method": name}
            self._emit(op)
        return bool(seqs)

    def _queue(self, ch: _Channel, args: dict[str, Json]) -> str:
        """A method's queue argument; empty names the channel's last declared queue."""
        queue = _str(args.get("queue")) or ""
        return queue or ch.last_queue or ""

    # -- ends -----------------------------------------------------------------------------

    def _finish(self, op: _Op, number: int, ch: _Channel | None) -> None:
        """An operation whose frames are all in (or never will be): out, unless it is a
        publish on a confirm channel whose confirm is still due."""
        if (
            ch is not None
            and op.command == "basic.publish"
            and ch.confirm
            and ch.seq_unknown
            and "publish_seq" not in op.details
        ):
            op.unsure = True
            op.diagnostics.append(Diagnostic(
                code="amqp.gap_confirm", message="publishes of this confirm channel were "
                "lost before it: its number, and so its confirm, is not known",
                location=f"{self.location} channel {number}"))  # fmt: skip
        elif (
            ch is not None
            and op.command == "basic.publish"
            and ch.confirm
            and op.request_complete
            and "publish_seq" not in op.details
        ):
            ch.seq += 1
            op.details["publish_seq"] = ch.seq
            op.response_complete = False
            op.ended = None
            ch.unconfirmed[ch.seq] = op
            return
        self._emit(op)

    def _drop(self, ch: _Channel) -> list[_Op]:
        """What a closed (or ended) channel still held: each op incomplete, diagnosed."""
        left = [*ch.pending[0], *ch.pending[1], *ch.unconfirmed.values()]
        left.extend(c.op for c in ch.content if c is not None)
        ch.pending[0].clear()
        ch.pending[1].clear()
        ch.unconfirmed.clear()
        ch.content[:] = [None, None]
        for op in left:
            op.response_complete = False
            owed = (
                "its confirm"
                if "publish_seq" in op.details
                else ("its content" if op.action and op.body is None else "its reply")
            )
            op.diagnostics.append(Diagnostic(
                code="amqp.unanswered",
                message=f"{op.command}: {owed} is not in the capture",
                location=f"{self.location} channel {op.channel}",
            ))  # fmt: skip
        return left

    def _emit(self, op: _Op) -> None:
        if op.unpaired:
            op.request_complete = op.response_complete = False
        if op.unsure and op.response_complete:
            op.response_complete = False
            op.diagnostics.append(Diagnostic(
                code="amqp.gap_unsure", message="bytes of this connection were lost before it "
                "ended: what pairs with it (its confirm, its consumer) may be among them",
                location=f"{self.location} channel {op.channel}"))  # fmt: skip
        if self._lost and op.response_complete:
            op.response_complete = False
            op.diagnostics.append(Diagnostic(
                code="amqp.after_loss",
                message="bytes of this connection were lost before this operation ended: "
                        "what it pairs with (and its place among the operations) is not sure",
                location=f"{self.location} channel {op.channel}",
            ))  # fmt: skip
        index = self._count
        self._count += 1
        messages: list[QueueMessage] = []
        if op.action in ("ack", "nack", "reject"):
            messages.append(settlement(op.action, channel=op.channel, args=op.args))
        elif op.action is not None:
            msg = message(op.action, channel=op.channel, args=op.msg_args, props=op.props,
                          body=op.body, destination=op.destination)  # fmt: skip
            messages.append(msg)
        parameters: list[Json] = []
        if op.command == "basic.publish" and messages and messages[0].size is not None:
            parameters.append(messages[0].payload)
        self._out.append(Operation(
            protocol=PROTOCOL,
            kind=op.kind,
            index=index,
            command=op.command,
            statement=_statement(op),
            parameters=parameters,
            started=op.started,
            request_ended=op.request_ended,
            response_started=op.response_started,
            ended=op.ended,
            request_complete=op.request_complete,
            response_complete=op.response_complete,
            result=op.result,
            error=op.error,
            role=ROLES.get(op.action or ""),
            details={"channel": op.channel, **op.details},
            messages=messages,
            diagnostics=op.diagnostics,
        ))  # fmt: skip


def _kept(args: dict[str, Json], op: _Op) -> dict[str, Json]:
    """A method's arguments as reported: the reserved ones dropped, secrets counted."""
    out: dict[str, Json] = {}
    for name, value in args.items():
        if name in SECRET_ARGUMENTS:
            op.details["secret_arguments"] = int(op.details.get("secret_arguments", 0)) + 1
        elif not name.startswith("reserved_"):
            out[name] = value
    return out


_SHOWN = ("exchange", "type", "queue", "routing_key", "source", "destination",
          "consumer_tag", "delivery_tag", "virtual_host", "reply_code", "reply_text")  # fmt: skip


def _statement(op: _Op) -> str:
    """The method and its naming arguments, ``basic.publish exchange=tasks routing_key=t``."""
    shown = [f"{k}={op.args[k]}" for k in _SHOWN if op.args.get(k) not in (None, "")]
    return " ".join([op.command, *shown])


def _str(value: Json) -> str | None:
    return value if isinstance(value, str) else None
