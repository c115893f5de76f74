"""PostgreSQL wire protocol v3 (https://www.postgresql.org/docs/current/protocol-flow.html):
both directions of a connection -> :class:`~agentshark.wire.events.Operation` values.

Operations: ``startup`` (StartupMessage to the first ReadyForQuery, or the error that refused
it), ``ssl_request``/``gssenc_request`` (answered by one byte), ``cancel`` (CancelRequest: no
answer by design), ``query`` (a simple Query to its ReadyForQuery: every CommandComplete tag
of a multi-statement string is in ``details["tags"]``), ``execute`` (one extended-query
Execute, with the statement of the Parse and the parameters of the Bind its portal came
from), ``parse`` (a Parse that failed with no Execute after it), ``function_call`` and
``notification`` (a NotificationResponse: a NOTIFY pushed to a LISTENing client; a push has
no request of its own: its request side is the channel (``statement``) and the payload
(``parameters``), as the one message carried them).

Pairing is by order (the server answers the client's messages in the order sent, §55.2.3):
the client's messages that expect an answer are queued; each server message answers the
head of the queue. After an ErrorResponse in an extended-query batch the server skips to
the Sync: the queued Executes before it are reported not executed (``details["skipped"]``).
After a capture gap that loses messages at a boundary (framing resumes at the next one,
:mod:`agentshark.wire.pgsql_frames`), order alone no longer proves which request an answer
belongs to: every operation ended from then on is incomplete (``pg.gap_pairing``) until a
sync point: a request that begins a batch, sent by the client in a segment acknowledging
every server byte seen, which ended with a ReadyForQuery (or where the server's framing
resumed after lost bytes); what still waited before it ends incomplete
(``pg.gap_unanswered``), and the first answer after it must fit the request it pairs with.
Lost client bytes also forget the prepared statements and portals (a Parse or Close may be
among them). A one-byte gap where the answer to an SSLRequest was due is read from the
client's next bytes: a TLS ClientHello (``S``) or a StartupMessage (``N``).

Secrets: a PasswordMessage/SASL/GSS response (``p``) is counted, never kept; a cancel key
(BackendKeyData, CancelRequest) is never kept.

TLS: an SSLRequest answered ``S`` turns the connection into TLS from the next byte of each
direction (https://www.postgresql.org/docs/current/protocol-flow.html#PROTOCOL-FLOW-SSL):
:meth:`PgSession.take_tls` then says where, with the bytes already fed past it, and the
connection layer decrypts the rest with the key log and reads the PostgreSQL session inside
(its StartupMessage first). A GSSENCRequest answered ``G`` (GSSAPI encryption) cannot be
decrypted: one info Diagnostic says so. An ``N`` goes on in cleartext.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from agentshark.errors import Diagnostic
from agentshark.wire.events import Json, Operation, TlsSwitch
from agentshark.wire.pgsql_frames import (
    ANSWER,
    CANCEL_REQUEST,
    GSSENC_REQUEST,
    SSL_REQUEST,
    UNTYPED,
    PgMessage,
    PgReader,
)
from agentshark.wire.pgsql_parse import (
    BadMessageError,
    Cursor,
    bind_message,
    command_verb,
    data_row,
    error_fields,
    parse_message,
    row_description,
    startup_parameters,
    typed_values,
)

PROTOCOL = "postgresql"
MAX_VALUES = 1000  # result rows kept per operation (their count is always exact)
MAX_VALUE_BYTES = 1 << 20  # bytes of result rows kept per operation
_AUTH = {0: "ok", 2: "kerberos", 3: "cleartext", 5: "md5", 7: "gss", 9: "sspi", 10: "sasl"}


def looks_like_startup(client: bytes) -> bool:
    """The client's first bytes are a v3 StartupMessage, SSLRequest, GSSENCRequest or
    CancelRequest (an Int32 length, then the protocol code)."""
    if len(client) < 8:
        return False
    size = int.from_bytes(client[:4])
    code = int.from_bytes(client[4:8])
    if code in (SSL_REQUEST, GSSENC_REQUEST):
        return size == 8
    if code == CANCEL_REQUEST:
        return size == 16
    return code >> 16 == 3 and 8 < size <= 10000 and (len(client) < size or client[size - 1] == 0)


@dataclass(slots=True)
class _Op:
    kind: str
    command: str | None
    statement: str | None
    started: float
    parameters: list[Json] = field(default_factory=list)
    request_complete: bool = True
    # the time of its last client message (the Execute after Parse and Bind, a password
    # message of the startup, COPY data); None: the message that made it
    request_ended: float | None = None
    response_started: float | None = None
    lost: bool = False  # a response message of it was damaged
    result: str | None = None
    rows: int | None = None
    columns: list[str] = field(default_factory=list)
    formats: list[int] = field(default_factory=list)
    error: dict[str, Json] | None = None
    values: list[list[Json]] = field(default_factory=list)
    value_bytes: int = 0
    values_cut: bool = False
    details: dict[str, Json] = field(default_factory=dict)
    diagnostics: list[Diagnostic] = field(default_factory=list)


@dataclass(slots=True)
class _Pending:
    """A client message that expects an answer: kind and the operation it is part of;
    ``acked``: how much of the server's stream the client had received when it sent the
    message that began its batch (-1: not known, or not the first of a batch)."""

    kind: str  # startup ssl query parse bind describe execute sync close function lost
    op: _Op | None = None
    acked: int = -1


class PgSession:
    """Both directions of one PostgreSQL connection; see the module docstring."""

    __slots__ = (
        "_acked",
        "_answer_gap",
        "_batch",
        "_count",
        "_encrypted",
        "_ended",
        "_forgot",
        "_last_ts",
        "_portals",
        "_probation",
        "_queue",
        "_readers",
        "_statements",
        "_switch",
        "_unpaired",
        "_unsure",
        "diagnostics",
        "location",
    )

    def __init__(self, location: str) -> None:
        self.location = location
        self._readers = (
            PgReader(client=True, location=f"{location} client"),
            PgReader(client=False, location=f"{location} server"),
        )
        self._queue: deque[_Pending] = deque()
        self._statements: dict[str, tuple[str, list[int]]] = {}  # name -> (query, type OIDs)
        self._portals: dict[str, tuple[str | None, list[Json]]] = {}  # -> (query, parameters)
        self._count = 0
        self._encrypted = False
        self._switch: TlsSwitch | None = None  # TLS from here on, until taken
        self._unpaired = False
        self._unsure: str | None = None  # the gap since which pairing is not proven
        self._acked = -1  # of the client segment being read
        self._answer_gap: float | None = None  # a one-byte server gap where an answer was due
        self._forgot = False  # statements and portals were forgotten at lost client bytes
        self._probation = False  # after a sync point: the next answer must fit the head
        self._batch = True  # the client's next message begins a batch (after a Sync/Query)
        self._ended: list[bool | None] = [None, None]
        self._last_ts = 0.0
        self.diagnostics: list[Diagnostic] = []

    # -- the decoder interface --------------------------------------------------------------

    def feed(self, direction: int, data: bytes, ts: float, acked: int = -1) -> list[Operation]:
        self._last_ts = ts
        if self._encrypted:
            return []
        self._acked = acked if direction == 0 else -1
        if self._answer_gap is not None:  # a lost SSLRequest answer, not told yet
            gap_ts, self._answer_gap = self._answer_gap, None
            if direction == 0:
                out = self._take(0, self._readers[0].feed(data, ts))
                told = self._lost_answer(1, gap_ts, wait=False)
                if told is None:  # what came does not tell: an ordinary gap, late
                    return out + self._take(1, self._readers[1].gap(1, gap_ts))
                return out + told
            out = self._take(1, self._readers[1].gap(1, gap_ts))
            return out + self._take(1, self._readers[1].feed(data, ts))
        return self._take(direction, self._readers[direction].feed(data, ts))

    def gap(self, direction: int, size: int, ts: float) -> list[Operation]:
        """Lost bytes. The client's may hold parts of a request still waiting that takes
        client messages after the one that made it (a password message of the startup, the
        data of a COPY FROM STDIN): those requests are not whole. (An execute or a query is
        whole once made: its Parse, Bind and Execute, or its Query, came before.)"""
        if self._encrypted:
            return []
        if direction == 1 and (inferred := self._lost_answer(size, ts, wait=True)) is not None:
            return inferred
        if direction == 0:
            for item in self._queue:
                op = item.op
                if op is None or not (
                    item.kind == "startup" or op.details.get("copy") in ("in", "both")
                ):
                    continue
                if op.request_complete:
                    op.request_complete = False
                    op.diagnostics.append(
                        Diagnostic(
                            code="pg.request_gap",
                            message=f"{size} client bytes were lost while this "
                            f"{op.kind} waited for its answer: its request may lack parts",
                        )
                    )
        return self._take(direction, self._readers[direction].gap(size, ts))

    def end(self, direction: int, ts: float, *, clean: bool) -> list[Operation]:
        self._ended[direction] = clean
        self._last_ts = ts
        return []

    def take_tls(self) -> TlsSwitch | None:
        """Where the connection turned into TLS, once (None before, and after it is taken)."""
        switch, self._switch = self._switch, None
        return switch

    def close(self) -> list[Operation]:
        """Every operation still waiting for its answer, incomplete (a cancel: complete
        when the server closed the connection with a FIN, its only answer)."""
        out: list[Operation] = []
        for reader in self._readers:
            self.diagnostics.extend(reader.close())
        while self._queue:
            item = self._queue.popleft()
            op = item.op
            if op is None or item.kind in ("parse", "lost"):  # a Parse: by its Execute
                continue
            if op.kind == "cancel":
                out.append(self._done(op, self._last_ts, complete=self._ended[1] is True))
                continue
            op.diagnostics.append(
                Diagnostic(
                    code="pg.unanswered",
                    message=f"no answer to this {op.kind} in the capture",
                    location=self.location,
                )
            )
            out.append(self._done(op, None, complete=False))
        return out

    # -- messages ---------------------------------------------------------------------------

    def _take(self, direction: int, items: list[PgMessage | Diagnostic]) -> list[Operation]:
        out: list[Operation] = []
        for item in items:
            if isinstance(item, Diagnostic):
                self.diagnostics.append(item)
                self._framing(direction, item, out)
                continue
            if self._encrypted:
                break
            try:
                if direction == 0:
                    self._client(item, out)
                else:
                    self._server(item, out)
            except BadMessageError as exc:
                self._bad(item, str(exc))
        return out

    # -- gaps and sync points --------------------------------------------------------------

    def _framing(self, direction: int, diag: Diagnostic, out: list[Operation]) -> None:
        """A framing Diagnostic of a direction: what it does to the pairing."""
        code = diag.code
        if code == "pg.framing" and direction == 0:
            self._unpaired = True
        elif code == "pg.gap" and direction == 0:
            # client messages lost: their answers come where this marker reaches the head
            self._queue.append(_Pending("lost"))
            self._batch = True
            # a Parse, Bind or Close may be among them: what was prepared is not known
            self._statements.clear()
            self._portals.clear()
            self._forgot = True
        elif (
            code == "pg.gap"
            and not self._unsure
            and (self._queue or self._readers[1].last not in ("Z", ""))
        ):
            self._unsure = diag.location  # answers lost: the next ones may be anyone's
        elif code == "pg.resync" and direction == 1 and self._unsure:
            # a client batch sent when the client had received every server byte up to
            # here: what the server sent before answered only the requests before it
            at = self._readers[1].resynced_at
            for n, item in enumerate(self._queue):
                if item.acked == at:
                    self._sync(n, out)
                    break

    def _sync(self, n: int, out: list[Operation]) -> None:
        """A sync point before the queue's ``n``-th item: the server owes nothing before
        it; what waited there lost its answer (or cannot be told to have had one)."""
        where = self._unsure or "a gap"
        for _ in range(n):
            item = self._queue.popleft()
            op = item.op
            if op is None or item.kind == "lost":
                continue
            op.diagnostics.append(
                Diagnostic(
                    code="pg.gap_unanswered",
                    message=f"its answer was lost in a capture gap ({where}): the server owed "
                    "nothing more for it when the client sent its next request",
                    location=self.location,
                )
            )
            out.append(self._done(op, None, complete=False, sure=True))
        self._unsure = None
        self._probation = True

    def _at_batch(self, out: list[Operation]) -> None:
        """The client begins a batch: a sync point when bytes were lost and the client sent
        it having received every byte the server sent, which ended with a ReadyForQuery."""
        server = self._readers[1]
        lost = self._unsure or any(i.kind == "lost" for i in self._queue)
        if (
            lost
            and self._acked >= 0
            and server.at_rest
            and server.last == "Z"
            and self._acked == server.offset
        ):
            self._sync(len(self._queue), out)

    def _lost_answer(self, size: int, ts: float, *, wait: bool) -> list[Operation] | None:
        """A gap of one byte where the server's answer to an SSLRequest was due: the
        client's next bytes say which it was (a TLS ClientHello: ``S``; a StartupMessage:
        ``N``). None: no such evidence, the gap is an ordinary one. With nothing after the
        request yet (TCP tells a gap when the client acknowledges past it, before that
        segment's own bytes), ``wait`` defers the answer to the client's next bytes."""
        client, server = self._readers
        if size != 1 or not server.answers or not server.at_rest:
            return None
        if not self._queue or self._queue[0].kind != "ssl":
            return None
        held = client.held()
        if not held and wait:
            self._answer_gap = ts
            return []
        if held[:1] == b"\x16" and held[1:2] == b"\x03" and held[5:6] == b"\x01":
            answer = b"S"
        elif looks_like_startup(held):
            answer = b"N"
        else:
            return None
        server.answers -= 1
        msg = PgMessage(type=ANSWER, body=answer, ts=ts, offset=server.offset, size=1)
        server.offset += 1
        op = self._queue[0].op
        if op is not None:
            what = "a TLS ClientHello" if answer == b"S" else "a StartupMessage"
            op.diagnostics.append(
                Diagnostic(
                    code="pg.answer_lost",
                    message=f"the server's one-byte answer was not captured; the client's "
                    f"next bytes are {what}, so it was {answer.decode()!r}",
                    location=f"{self.location} server byte {msg.offset}",
                )
            )
        out: list[Operation] = []
        self._answer(msg, out, inferred=True)
        return out

    def _bad(self, msg: PgMessage, why: str) -> None:
        self.diagnostics.append(
            Diagnostic(
                code="pg.malformed",
                message=f"a {msg.type or 'startup'!r} message that does not parse: {why}",
                location=f"{self.location} byte {msg.offset}",
            )
        )

    def _client(self, msg: PgMessage, out: list[Operation]) -> None:
        kind, body = msg.type, msg.body
        if kind == "p":
            self._password(msg.ts)
            return
        if self._batch and kind in _BATCH_STARTS:
            self._at_batch(out)
            self._batch = False
            mark = len(self._queue)
            self._client_message(msg, kind, body, out)
            if len(self._queue) > mark:
                self._queue[mark].acked = self._acked
            return
        self._client_message(msg, kind, body, out)

    def _client_message(
        self, msg: PgMessage, kind: str, body: bytes | None, out: list[Operation]
    ) -> None:
        if kind in ("S", "Q"):
            self._batch = True
        if body is None:  # damaged: what it asked is not known
            if kind in ("Q", "E", "F"):
                op = _Op(_CLIENT_KINDS[kind], None, None, msg.ts, request_complete=False)
                self._queue.append(_Pending(op.kind, op))
            elif kind in ("P", "B", "D", "S", "C"):
                self._queue.append(_Pending(_PENDING_KINDS[kind]))
            return
        if kind == UNTYPED:
            self._startup(msg, body, out)
        elif kind == "Q":
            sql = Cursor(body).cstring()
            op = _Op("query", command_verb(sql), sql, msg.ts)
            self._queue.append(_Pending("query", op))
        elif kind == "P":
            name, query, oids = parse_message(body)
            self._statements[name] = (query, oids)
            op = _Op("parse", command_verb(query), query, msg.ts)
            op.details["parameter_types"] = list(oids)
            self._queue.append(_Pending("parse", op))
        elif kind == "B":
            portal, statement, raw = bind_message(body)
            known = self._statements.get(statement)
            oids = known[1] if known is not None else []
            self._portals[portal] = (known[0] if known else None, typed_values(raw, oids))
            self._queue.append(_Pending("bind"))
        elif kind == "E":
            self._execute(msg, body)
        elif kind in ("D", "S", "C"):
            if kind == "C":
                self._close(body)
            self._queue.append(_Pending(_PENDING_KINDS[kind]))
        elif kind == "F":
            op = _Op("function_call", "FUNCTION_CALL", None, msg.ts)
            self._queue.append(_Pending("function", op))
        elif kind in ("d", "c", "f"):
            self._copy_in(kind, body, msg.ts)
        elif kind not in ("H", "X"):
            self._bad(msg, "not a client message type")

    def _startup(self, msg: PgMessage, body: bytes, out: list[Operation]) -> None:
        cur = Cursor(body)
        code = cur.number(4)
        if code in (SSL_REQUEST, GSSENC_REQUEST):
            kind = "ssl_request" if code == SSL_REQUEST else "gssenc_request"
            name = "SSLRequest" if code == SSL_REQUEST else "GSSENCRequest"
            self._queue.append(_Pending("ssl", _Op(kind, name, None, msg.ts)))
            self._readers[1].answers += 1
        elif code == CANCEL_REQUEST:
            op = _Op("cancel", "CANCEL", None, msg.ts)
            op.details["process_id"] = cur.number(4)  # the secret key after it is never kept
            self._queue.append(_Pending("cancel", op))
        else:
            op = _Op("startup", "STARTUP", None, msg.ts)
            op.details["protocol_version"] = f"{code >> 16}.{code & 0xFFFF}"
            op.details["parameters"] = dict(startup_parameters(cur))
            self._queue.append(_Pending("startup", op))

    def _execute(self, msg: PgMessage, body: bytes) -> None:
        cur = Cursor(body)
        portal = cur.cstring()
        max_rows = cur.number(4)
        query, params = self._portals.get(portal, (None, []))
        op = _Op("execute", command_verb(query) if query else None, query, msg.ts)
        op.parameters = params
        # the Parse/Bind before it are the start of this statement's request
        for item in reversed(self._queue):
            if item.kind in ("sync", "execute", "query"):
                break
            if item.op is not None:
                op.started = min(op.started, item.op.started)
        op.request_ended = msg.ts
        if max_rows:
            op.details["max_rows"] = max_rows
        if query is None and self._forgot:
            op.request_complete = False
            op.diagnostics.append(
                Diagnostic(
                    code="pg.gap_statement",
                    message=f"portal {portal!r} may have been bound in client bytes lost in a "
                    "capture gap: its statement and parameters are not known",
                    location=f"{self.location} client byte {msg.offset}",
                )
            )
        elif query is None:
            op.diagnostics.append(
                Diagnostic(
                    code="pg.unknown_statement",
                    message=f"portal {portal!r} was bound before the capture started: its "
                    "statement and parameters are not known",
                    location=f"{self.location} client byte {msg.offset}",
                    severity="info",
                )
            )
        self._queue.append(_Pending("execute", op))

    def _close(self, body: bytes) -> None:
        cur = Cursor(body)
        which, name = cur.byte(), cur.cstring()
        (self._statements if which == "S" else self._portals).pop(name, None)

    def _copy_in(self, kind: str, body: bytes, ts: float) -> None:
        op = self._target()
        if op is not None:
            op.request_ended = ts
            op.details["copy_in_bytes"] = int(op.details.get("copy_in_bytes", 0)) + len(body)
            if kind == "f":
                op.details["copy_failed"] = Cursor(body).cstring()

    def _password(self, ts: float) -> None:
        """A password, SASL or GSS response: a secret, counted only."""
        for item in self._queue:
            if item.kind == "startup" and item.op is not None:
                item.op.request_ended = ts
                count = int(item.op.details.get("password_messages", 0))
                item.op.details["password_messages"] = count + 1
                return

    # -- the server's answers ---------------------------------------------------------------

    def _target(self) -> _Op | None:
        """The operation the server's next result message belongs to."""
        for item in self._queue:
            if item.kind in ("execute", "query", "function", "startup"):
                return item.op
            if item.kind in ("sync", "lost"):
                return None
        return None

    def _server(self, msg: PgMessage, out: list[Operation]) -> None:
        handler = _SERVER.get(msg.type)
        if handler is None:
            self._bad(msg, "not a server message type")
            return
        if self._queue and self._queue[0].kind == "lost":
            # the answers of the lost client messages, or of later ones: not proven
            self._queue.popleft()
            self._unsure = self._unsure or f"{self.location} client"
        if self._probation and self._queue:
            self._probation = False
            fits = _OPENERS.get(self._queue[0].kind)
            if fits is not None and msg.type not in fits:  # the sync point was not one
                self._unsure = f"{self.location} server byte {msg.offset}"
        if not self._queue and msg.type not in ("A", "N", "S", "E"):
            if not self._unpaired:
                self._unpaired = True
                self.diagnostics.append(
                    Diagnostic(
                        code="pg.unpaired",
                        message=f"a {msg.type!r} message answers no request seen (the "
                        "capture starts mid-connection or lost client bytes)",
                        location=f"{self.location} server byte {msg.offset}",
                    )
                )
            return
        op = self._target()
        if op is not None and op.response_started is None:
            op.response_started = msg.ts
        handler(self, msg, out)

    def _answer(self, msg: PgMessage, out: list[Operation], *, inferred: bool = False) -> None:
        item = self._queue[0]
        if item.kind != "ssl" or item.op is None or msg.body is None:
            return
        self._queue.popleft()
        answer = msg.body.decode("latin-1")
        item.op.result = answer
        item.op.response_started = msg.ts
        whole = answer in ("S", "N", "G") and not inferred
        out.append(self._done(item.op, msg.ts, complete=whole))
        client, server = self._readers
        if answer == "S":
            self._encrypted = True
            offsets = (client.offset, server.offset)
            self._switch = TlsSwitch(offsets, (client.take_rest(), server.take_rest()))
        elif answer == "G":
            self._encrypted = True
            self.diagnostics.append(
                Diagnostic(
                    code="pg.encrypted",
                    message=f"the server accepted {item.op.command} ({answer!r}): the rest of "
                    "the connection is GSSAPI-encrypted, which no key log can decrypt",
                    location=f"{self.location} server byte {msg.offset}",
                    severity="info",
                )
            )
        else:  # still cleartext: what the client sent after its request can be read now
            out.extend(self._take(0, client.resume(msg.ts)))

    def _auth(self, msg: PgMessage, out: list[Operation]) -> None:
        op = self._target()
        if op is None or op.kind != "startup" or msg.body is None:
            return
        code = Cursor(msg.body).number(4)
        if code in _AUTH and "authentication" not in op.details and code != 0:
            op.details["authentication"] = _AUTH[code]
            if code == 10:
                cur = Cursor(msg.body[4:])
                op.details["sasl_mechanisms"] = list(iter(cur.cstring, ""))
        if code == 0:
            op.details["authenticated"] = True

    def _status(self, msg: PgMessage, out: list[Operation]) -> None:
        if msg.body is None:
            return
        cur = Cursor(msg.body)
        name, value = cur.cstring(), cur.cstring()
        op = self._target()
        if op is not None:
            params = op.details.setdefault("server_parameters", {})
            assert isinstance(params, dict)
            params[name] = value

    def _key(self, msg: PgMessage, out: list[Operation]) -> None:
        op = self._target()
        if op is not None and msg.body is not None:
            op.details["process_id"] = Cursor(msg.body).number(4)  # the key is never kept

    def _ready(self, msg: PgMessage, out: list[Operation]) -> None:
        status = msg.body.decode("latin-1") if msg.body else None
        while self._queue:
            item = self._queue.popleft()
            op = item.op
            if item.kind in ("execute", "function") and op is not None:
                op.details["skipped"] = True  # not executed: an earlier message failed
                out.append(self._done(op, msg.ts, complete=not op.lost))
            elif item.kind in ("sync", "query", "startup"):
                if op is not None:
                    op.details["transaction_status"] = status
                    out.append(self._done(op, msg.ts, complete=not op.lost))
                return

    def _rows(self, msg: PgMessage, out: list[Operation]) -> None:
        head = self._queue[0]
        if head.kind == "describe":
            self._queue.popleft()
            op = self._target()  # the Execute the Describe is for
        else:
            op = self._target()
        if op is None:
            return
        if msg.body is None:
            op.lost = True
            return
        op.columns, op.formats = row_description(msg.body)

    def _no_data(self, msg: PgMessage, out: list[Operation]) -> None:
        if self._queue[0].kind == "describe":
            self._queue.popleft()

    def _parameters(self, msg: PgMessage, out: list[Operation]) -> None:
        pass  # ParameterDescription: the types are the Parse's; the Describe ends later

    def _complete_one(self, msg: PgMessage, out: list[Operation]) -> None:
        """ParseComplete, BindComplete, CloseComplete: the head Parse/Bind/Close is done."""
        expected = {"1": "parse", "2": "bind", "3": "close"}[msg.type]
        if self._queue[0].kind == expected:
            self._queue.popleft()
        elif not self._unsure:
            self._bad(
                msg,
                f"it answers a {expected}, the oldest request waiting is a {self._queue[0].kind}",
            )

    def _data(self, msg: PgMessage, out: list[Operation]) -> None:
        op = self._target()
        if op is None:
            return
        op.rows = (op.rows or 0) + 1
        if msg.body is None:
            op.lost = op.lost or not msg.too_large
            op.values_cut = True
            return
        if len(op.values) < MAX_VALUES and op.value_bytes + len(msg.body) <= MAX_VALUE_BYTES:
            op.values.append(data_row(msg.body, op.formats))
            op.value_bytes += len(msg.body)
        else:
            op.values_cut = True

    def _command_complete(self, msg: PgMessage, out: list[Operation]) -> None:
        op = self._target()
        if op is None:
            return
        tag = Cursor(msg.body).cstring() if msg.body is not None else None
        if msg.body is None:
            op.lost = True
        if msg.type == "I":
            tag = "EMPTY"
        elif msg.type == "s":
            tag = "SUSPENDED"
        if op.kind == "query":
            tags = op.details.setdefault("tags", [])
            assert isinstance(tags, list)
            tags.append(tag)
            op.result = tag
            return
        op.result = tag
        self._finish_head(op, msg.ts, out)

    def _finish_head(self, op: _Op, ts: float, out: list[Operation]) -> None:
        """The operation got its terminator: it leaves the queue (with what answered
        before it: a Parse, a Bind, a Describe of its own)."""
        while self._queue:
            item = self._queue.popleft()
            if item.op is op:
                break
        out.append(self._done(op, ts, complete=not op.lost))

    def _error(self, msg: PgMessage, out: list[Operation]) -> None:
        fields = error_fields(msg.body) if msg.body is not None else {"message": None}
        head = self._queue[0] if self._queue else None
        if head is None:
            self.diagnostics.append(
                Diagnostic(
                    code="pg.server_error",
                    message=f"the server sent an error outside any request: "
                    f"{fields.get('code')} {fields.get('message')}",
                    location=f"{self.location} server byte {msg.offset}",
                )
            )
            return
        if head.kind in ("query", "startup", "ssl") and head.op is not None:
            head.op.error = fields
            head.op.lost = head.op.lost or msg.body is None
            if head.kind == "startup":  # the connection is refused: no ReadyForQuery
                self._queue.popleft()
                out.append(self._done(head.op, msg.ts, complete=msg.body is not None))
            return
        # extended query: the error ends the statement it belongs to; the server skips the
        # rest of the batch up to the Sync (§55.2.3)
        op = self._target()
        if op is None and head.kind == "parse" and head.op is not None:
            op = head.op  # a Parse that failed with no Execute after it
        if op is None:
            self.diagnostics.append(
                Diagnostic(
                    code="pg.server_error",
                    message=f"error {fields.get('code')} {fields.get('message')}",
                    location=f"{self.location} server byte {msg.offset}",
                )
            )
            return
        op.error = fields
        op.lost = op.lost or msg.body is None
        self._finish_head(op, msg.ts, out)

    def _notice(self, msg: PgMessage, out: list[Operation]) -> None:
        if msg.body is None:
            return
        fields = error_fields(msg.body)
        op = self._target()
        if op is not None:
            notices = op.details.setdefault("notices", [])
            assert isinstance(notices, list)
            notices.append(fields)

    def _notification(self, msg: PgMessage, out: list[Operation]) -> None:
        if msg.body is None:
            return
        cur = Cursor(msg.body)
        pid, channel, payload = cur.number(4), cur.cstring(), cur.cstring()
        op = _Op("notification", "NOTIFY", channel, msg.ts, parameters=[payload])
        op.details["process_id"] = pid
        op.response_started = msg.ts
        out.append(self._done(op, msg.ts, complete=True))

    def _copy(self, msg: PgMessage, out: list[Operation]) -> None:
        op = self._target()
        if op is None:
            return
        if msg.type in ("G", "H", "W"):
            op.details["copy"] = {"G": "in", "H": "out", "W": "both"}[msg.type]
        elif msg.type == "d":
            op.details["copy_out_bytes"] = int(op.details.get("copy_out_bytes", 0)) + (
                len(msg.body) if msg.body is not None else 0
            )

    def _function_result(self, msg: PgMessage, out: list[Operation]) -> None:
        op = self._target()
        if op is not None and op.kind == "function_call":
            op.result = "FUNCTION_RESULT"

    def _negotiate(self, msg: PgMessage, out: list[Operation]) -> None:
        op = self._target()
        if op is not None and msg.body is not None:
            op.details["negotiated_minor_version"] = Cursor(msg.body).number(4)

    # -- operations out ---------------------------------------------------------------------

    def _done(
        self, op: _Op, ended: float | None, *, complete: bool, sure: bool = False
    ) -> Operation:
        if self._unsure and not sure and op.kind not in ("notification", "cancel"):
            complete = False
            op.diagnostics.append(
                Diagnostic(
                    code="pg.gap_pairing",
                    message=f"bytes lost in a capture gap ({self._unsure}) leave it unproven "
                    "which request the answers here belong to (pairing is sure again at "
                    "the next sync point: a request sent after a ReadyForQuery the client "
                    "had received)",
                    location=self.location,
                )
            )
        index = self._count
        self._count += 1
        return Operation(
            protocol=PROTOCOL,
            kind=op.kind,
            index=index,
            command=op.command,
            statement=op.statement,
            parameters=op.parameters,
            started=op.started,
            request_ended=op.request_ended if op.request_ended is not None else op.started,
            response_started=op.response_started,
            ended=ended,
            request_complete=op.request_complete,
            response_complete=complete,
            result=op.result,
            rows=op.rows if op.rows is not None else (0 if op.columns else None),
            columns=op.columns,
            error=op.error,
            values=op.values or None,
            values_cut=op.values_cut,
            details=op.details,
            diagnostics=op.diagnostics,
        )


_CLIENT_KINDS = {"Q": "query", "E": "execute", "F": "function_call"}
_BATCH_STARTS = frozenset("QPBF")  # a client message that begins a batch after a gap
# what the server's first answer to a request of each kind can be (a sync point's check)
_OPENERS = {
    "parse": frozenset("1E"),
    "bind": frozenset("2E"),
    "describe": frozenset("tTnE"),
    "execute": frozenset("DCIsEGHWN"),
    "query": frozenset("TCIEGHWNDS"),
    "sync": frozenset("ZE"),
    "close": frozenset("3E"),
    "function": frozenset("VE"),
}
_PENDING_KINDS = {"P": "parse", "B": "bind", "D": "describe", "S": "sync", "C": "close"}
_SERVER = {
    ANSWER: PgSession._answer,
    "R": PgSession._auth,
    "S": PgSession._status,
    "K": PgSession._key,
    "Z": PgSession._ready,
    "T": PgSession._rows,
    "n": PgSession._no_data,
    "t": PgSession._parameters,
    "1": PgSession._complete_one,
    "2": PgSession._complete_one,
    "3": PgSession._complete_one,
    "D": PgSession._data,
    "C": PgSession._command_complete,
    "I": PgSession._command_complete,
    "s": PgSession._command_complete,
    "E": PgSession._error,
    "N": PgSession._notice,
    "A": PgSession._notification,
    "G": PgSession._copy,
    "H": PgSession._copy,
    "W": PgSession._copy,
    "d": PgSession._copy,
    "c": PgSession._copy,
    "V": PgSession._function_result,
    "v": PgSession._negotiate,
}
