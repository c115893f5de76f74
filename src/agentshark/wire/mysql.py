"""MySQL client/server protocol (MySQL, MariaDB): both directions of a connection ->
:class:`~agentshark.wire.events.Operation` values, in the shape PostgreSQL's have.

https://dev.mysql.com/doc/dev/mysql-server/latest/PAGE_PROTOCOL.html. Operations:
``startup`` (the server's Handshake v10, the client's HandshakeResponse41, any auth switch
or more data, to the OK or ERR that ends authentication), ``ssl_request`` (the client asks
for TLS: no answer, TLS follows at once), ``query`` (COM_QUERY: its text result sets or
OKs; a multi-statement string or a CALL gives several, each in ``details["results"]``),
``prepare`` (COM_STMT_PREPARE to its PREPARE_OK and the definitions after it), ``execute``
(COM_STMT_EXECUTE, with the statement its prepare named and the parameters decoded by the
types the client bound; binary rows counted), ``fetch`` (COM_STMT_FETCH), ``quit``
(COM_QUIT: no answer; complete when the server closes with a FIN), and ``command`` for the
rest (PING, INIT_DB, STATISTICS, RESET_CONNECTION... by ``command``). COM_STMT_CLOSE and
COM_STMT_SEND_LONG_DATA have no answer and make no operation: the long data is given to
the parameter of the next execute.

Pairing is by order: a classic-protocol client sends one command and reads its whole answer
before the next, so the server's packets answer the oldest command waiting, and a command
sent while an older one waits ends the older one, not answered whole. Where the end of a
result set's column definitions is (an EOF packet, or none with ``CLIENT_DEPRECATE_EOF``)
is read from the packets: an EOF is 5 bytes, an OK-shaped end of rows never less than 7.

Secrets: the server's scramble, the client's auth response and every later auth packet are
counted (``details["password_messages"]``), never kept.

TLS: an SSLRequest (a HandshakeResponse cut after its first 32 bytes, ``CLIENT_SSL`` set)
turns the connection into TLS from the next byte of each direction:
:meth:`MySession.take_tls` says where, and the connection layer decrypts the rest with the
key log and reads the session inside with a new decoder (the HandshakeResponse first, with
sequence id 2). Compression (``CLIENT_COMPRESS``): zlib-compressed packets after the OK of
authentication, inflated by :class:`~agentshark.wire.mysql_frames.MyReader`;
``CLIENT_ZSTD_COMPRESSION`` is not read (one Diagnostic says so).
"""

from __future__ import annotations

from collections import deque

from agentshark.errors import Diagnostic
from agentshark.wire.events import Json, Operation, TlsSwitch
from agentshark.wire.mysql_answers import AnswerReader, Pending, Statement
from agentshark.wire.mysql_frames import MyPacket, MyReader
from agentshark.wire.mysql_parse import (
    CLIENT_COMPRESS,
    CLIENT_PROTOCOL_41,
    CLIENT_QUERY_ATTRIBUTES,
    CLIENT_SSL,
    CLIENT_ZSTD_COMPRESSION,
    COMMAND_NAMES,
    BadPacketError,
    Reader,
    binary_value,
    capability_names,
    error_packet,
    greeting,
    handshake_response,
)
from agentshark.wire.pgsql_parse import command_verb, value_json

PROTOCOL = "mysql"

# what answers each command (the rest: an OK or an ERR)
_ANSWERS = {
    0x01: "none",  # QUIT
    0x03: "results",  # QUERY
    0x04: "field_list",  # FIELD_LIST: column definitions to an EOF
    0x09: "string",  # STATISTICS: one string packet
    0x0A: "results",  # PROCESS_INFO
    0x12: "stream",  # BINLOG_DUMP
    0x16: "prepare",
    0x17: "results",  # STMT_EXECUTE
    0x1C: "rows",  # STMT_FETCH
    0x1E: "stream",  # BINLOG_DUMP_GTID
}
_KINDS = {0x01: "quit", 0x03: "query", 0x16: "prepare", 0x17: "execute", 0x1C: "fetch"}


def looks_like_greeting(server: bytes) -> bool | None:
    """The server's first packet is a Handshake v10: sequence id 0, protocol 10, then a
    version string of printable ASCII that starts with a digit. None: too short to tell."""
    if len(server) < 6:
        return None if len(server) < 4 or server[3] == 0 else False
    size = server[0] | server[1] << 8 | server[2] << 16
    if server[3] != 0 or server[4] != 10 or not 30 <= size <= 1024:
        return False
    end = server.find(b"\0", 5, 5 + 64)
    if end < 0:
        return None if len(server) < 5 + 64 else False
    version = server[5:end]
    return bool(version) and version[:1].isdigit() and all(32 < c < 127 for c in version)


def looks_like_login(client: bytes) -> bool:
    """The client's first packet is a HandshakeResponse41 or an SSLRequest: sequence id 1
    (2 after TLS), ``CLIENT_PROTOCOL_41`` set, a 23-byte zero filler (its last 4 bytes are
    MariaDB's extended capabilities when ``CLIENT_MYSQL`` is clear)."""
    if len(client) < 36 or client[3] not in (1, 2):
        return False
    size = client[0] | client[1] << 8 | client[2] << 16
    caps = int.from_bytes(client[4:8], "little")
    filler = client[13:36] if caps & 1 else client[13:32]
    return size >= 32 and bool(caps & CLIENT_PROTOCOL_41) and not any(filler)


def sniff_mysql(client: bytes, server: bytes, port: int) -> bool | None:
    """A server greeting, or (a connection decrypted after its SSLRequest, or one captured
    after the greeting) the client's HandshakeResponse41."""
    if server:
        found = looks_like_greeting(server)
        if found is not False:
            return found
        if port == 3306 and len(server) >= 7 and server[3] == 0 and server[4] == 0xFF:
            return True  # refused before the handshake (ERR, sequence id 0)
    if client and looks_like_login(client):
        return True
    return None if not server and len(client) < 36 else False


class MySession(AnswerReader):
    """Both directions of one MySQL connection; see the module docstring."""

    __slots__ = (
        "_caps",
        "_count",
        "_encrypted",
        "_ended",
        "_last_ts",
        "_login",
        "_queue",
        "_readers",
        "_statements",
        "_switch",
        "_unpaired",
        "diagnostics",
        "location",
    )

    def __init__(self, location: str) -> None:
        self.location = location
        self._readers = (
            MyReader(client=True, location=f"{location} client"),
            MyReader(client=False, location=f"{location} server"),
        )
        self._queue: deque[Pending] = deque()
        self._login: Pending | None = None  # the connection phase, until its OK or ERR
        self._caps = 0  # the capabilities both sides have (0: no handshake seen)
        self._statements: dict[int, Statement] = {}
        self._count = 0
        self._encrypted = False
        self._switch: TlsSwitch | None = None
        self._unpaired = False
        self._ended: list[bool | None] = [None, None]
        self._last_ts = 0.0
        self.diagnostics: list[Diagnostic] = []

    # -- the decoder interface --------------------------------------------------------------

    def feed(self, direction: int, data: bytes, ts: float, acked: int = -1) -> list[Operation]:
        """(``acked``: not used; MySQL resynchronizes by sequence ids.)"""
        self._last_ts = ts
        if self._encrypted:
            return []
        return self._take(direction, self._readers[direction].feed(data, ts))

    def gap(self, direction: int, size: int, ts: float) -> list[Operation]:
        """Lost bytes. The client's may hold parts of a command still waiting (its SQL, its
        parameters): that request is not whole."""
        if self._encrypted:
            return []
        if direction == 0:
            for op in self._waiting():
                if op.request_complete:
                    op.request_complete = False
                    op.diagnostics.append(
                        Diagnostic(
                            code="mysql.request_gap",
                            message=f"{size} client bytes were lost while this {op.kind} "
                            "waited for its answer: its request may lack parts",
                        )
                    )
        out = self._take(direction, self._readers[direction].gap(size, ts))
        if direction == 1 and self._readers[1].lost:
            for op in self._waiting():
                op.lost = True
        return out

    def end(self, direction: int, ts: float, *, clean: bool) -> list[Operation]:
        self._ended[direction] = clean
        self._last_ts = ts
        return []

    def take_tls(self) -> TlsSwitch | None:
        """Where the connection turned into TLS, once (None before, and after it is taken)."""
        switch, self._switch = self._switch, None
        return switch

    def close(self) -> list[Operation]:
        """Every operation still waiting, incomplete (a COM_QUIT: complete when the server
        closed the connection with a FIN, its only answer)."""
        out: list[Operation] = []
        for op in self._waiting():
            if op.answer == "none":
                out.append(self._done(op, self._last_ts, complete=self._ended[1] is True))
                continue
            if self._prepared_whole(op):
                out.append(self._done(op, op.response_started, complete=True))
                continue
            op.diagnostics.append(
                Diagnostic(
                    code="mysql.unanswered",
                    message=f"no whole answer to this {op.kind} in the capture",
                    location=self.location,
                )
            )
            out.append(self._done(op, None, complete=False))
        self._queue.clear()
        self._login = None
        return out

    def _waiting(self) -> list[Pending]:
        ops = [self._login] if self._login is not None else []
        return ops + list(self._queue)

    # -- packets ----------------------------------------------------------------------------

    def _take(self, direction: int, items: list[MyPacket | Diagnostic]) -> list[Operation]:
        out: list[Operation] = []
        for item in items:
            if isinstance(item, Diagnostic):
                self.diagnostics.append(item)
                continue
            if self._encrypted:
                break
            try:
                if direction == 0:
                    self._client(item, out)
                else:
                    self._server(item, out)
            except BadPacketError as exc:
                self._bad(item, direction, str(exc))
        return out

    def _bad(self, packet: MyPacket, direction: int, why: str) -> None:
        side = "client" if direction == 0 else "server"
        note = Diagnostic(
            code="mysql.malformed",
            message=f"a packet (sequence id {packet.seq}) that does not parse: {why}",
            location=f"{self.location} {side} byte {packet.offset}",
        )
        head = self._head() if direction == 1 else None
        if head is not None:  # what the rest of its answer is cannot be told
            head.lost = True
            head.phase = "lost"
            head.diagnostics.append(note)
        else:
            self.diagnostics.append(note)

    def _head(self) -> Pending | None:
        if self._login is not None:
            return self._login
        return self._queue[0] if self._queue else None

    # -- the client -------------------------------------------------------------------------

    def _client(self, packet: MyPacket, out: list[Operation]) -> None:
        body = packet.body
        if self._login is not None or (not self._count and not self._queue and packet.seq):
            self._client_login(packet, out)
            return
        if packet.seq != 0:  # LOCAL INFILE data, a CHANGE_USER's auth packets
            head = self._queue[0] if self._queue else None
            if head is not None and head.phase == "infile":
                head.details["infile_bytes"] = int(head.details.get("infile_bytes", 0)) + (
                    packet.size
                )
                if packet.size == 0:
                    head.phase = "head"
            elif head is not None and head.command == "CHANGE_USER":
                self._count_auth(head)
            return
        if body is not None and not body:
            raise BadPacketError("an empty packet where a command was due")
        self._readers[1].rearm()
        if not self._count and not self._queue and self._caps == 0:
            self.diagnostics.append(
                Diagnostic(
                    code="mysql.no_handshake",
                    message="the capture starts after the connection's handshake: its "
                    "capabilities are not known, the protocol-4.1 forms are assumed",
                    location=f"{self.location} client byte {packet.offset}",
                    severity="info",
                )
            )
            self._caps = CLIENT_PROTOCOL_41
        self._end_waiting(packet, out)
        if body is None:  # damaged: what it asked is not known
            op = Pending("command", None, None, packet.ts, request_complete=False)
            op.answer = "unknown"
            op.request_ended = packet.ts
            self._queue.append(op)
            return
        self._command(packet, body, out)

    def _end_waiting(self, packet: MyPacket, out: list[Operation]) -> None:
        """A new command: what still waits was answered as far as it will be."""
        while self._queue:
            op = self._queue.popleft()
            if op.answer == "none" or self._prepared_whole(op):
                out.append(self._done(op, op.response_started or packet.ts, complete=True))
                continue
            if not op.lost:
                op.diagnostics.append(
                    Diagnostic(
                        code="mysql.unanswered",
                        message=f"the client sent its next command before the answer to "
                        f"this {op.kind} ended",
                        location=f"{self.location} client byte {packet.offset}",
                    )
                )
            out.append(self._done(op, None, complete=False))

    def _prepared_whole(self, op: Pending) -> bool:
        """A prepare whose definitions all came, waiting only on the EOF that ends them
        (there is none with CLIENT_DEPRECATE_EOF, which no handshake said)."""
        if op.kind != "prepare" or op.lost:
            return False
        return op.phase == "eof" or (op.phase == "params_eof" and not op.details["column_count"])

    def _command(self, packet: MyPacket, body: bytes, out: list[Operation]) -> None:
        code = body[0]
        name = COMMAND_NAMES.get(code, f"COMMAND_{code:#04x}")
        cur = Reader(body, 1)
        if code == 0x19:  # STMT_CLOSE
            self._statements.pop(cur.number(4), None)
            return
        if code == 0x18:  # STMT_SEND_LONG_DATA
            stmt = self._statements.get(cur.number(4))
            param = cur.number(2)
            if stmt is not None:
                stmt.long_data[param] = stmt.long_data.get(param, b"") + cur.rest()
            return
        op = Pending(_KINDS.get(code, "command"), name, None, packet.ts)
        op.answer = _ANSWERS.get(code, "ok")
        op.request_ended = packet.ts
        if code == 0x03:
            op.statement = self._query_text(cur, op)
            op.command = command_verb(op.statement) or name
        elif code == 0x16:
            op.statement = cur.rest().decode("utf-8", "replace")
            op.command = command_verb(op.statement) or name
        elif code == 0x17:
            self._execute(cur, op, packet)
        elif code == 0x1C:
            stmt_id = cur.number(4)
            stmt = self._statements.get(stmt_id)
            op.statement = stmt.sql if stmt is not None else None
            op.details["max_rows"] = cur.number(4)
            op.phase = "rows"
            op.binary = True
            op.types = list(stmt.result_types) if stmt is not None else []
        elif code in (0x02, 0x05, 0x06):  # INIT_DB, CREATE_DB, DROP_DB: a schema's name
            op.statement = cur.rest().decode("utf-8", "replace")
            if code == 0x02:
                op.details["use_database"] = op.statement
        elif code == 0x11:  # CHANGE_USER: the user, then auth data never kept
            op.details["user"] = cur.cstring()
            self._count_auth(op)
        elif code == 0x1B:
            op.details["option"] = cur.number(2)
            op.answer = "eof"
        elif code == 0x0D:
            op.answer = "eof"
        elif code not in COMMAND_NAMES:
            op.answer = "unknown"
            op.diagnostics.append(
                Diagnostic(
                    code="mysql.unknown_command",
                    message=f"command byte {code:#04x} is none the protocol defines: its "
                    "answer is not read",
                    location=f"{self.location} client byte {packet.offset}",
                )
            )
        if op.answer == "stream":
            op.diagnostics.append(
                Diagnostic(
                    code="mysql.replication",
                    message=f"COM_{name} starts a replication stream: its binlog events are "
                    "counted, not read",
                    location=f"{self.location} client byte {packet.offset}",
                    severity="info",
                )
            )
        self._queue.append(op)

    def _query_text(self, cur: Reader, op: Pending) -> str:
        """COM_QUERY's SQL, after the query attributes when ``CLIENT_QUERY_ATTRIBUTES``."""
        if self._caps & CLIENT_QUERY_ATTRIBUTES:
            count = cur.lenenc() or 0
            cur.lenenc()  # parameter set count: always 1
            if count:
                op.details["query_attributes"] = self._bound_values(cur, count, None, True)
        return cur.rest().decode("utf-8", "replace")

    def _execute(self, cur: Reader, op: Pending, packet: MyPacket) -> None:
        stmt_id = cur.number(4)
        flags = cur.number(1)
        cur.number(4)  # iteration count: always 1
        op.statement_id = stmt_id
        op.binary = True
        stmt = self._statements.get(stmt_id)
        if flags:
            op.details["cursor_flags"] = flags
        if stmt is None:  # what the request asks cannot be read whole
            op.request_complete = False
            op.diagnostics.append(
                Diagnostic(
                    code="mysql.unknown_statement",
                    message=f"statement {stmt_id} was prepared out of the capture's sight "
                    "(before it started, or its answer was lost): its SQL and its parameters "
                    "are not known",
                    location=f"{self.location} client byte {packet.offset}",
                    severity="info",
                )
            )
            return
        op.statement = stmt.sql
        op.command = command_verb(stmt.sql or "") or op.command
        count = stmt.params
        if self._caps & CLIENT_QUERY_ATTRIBUTES and flags & 0x08:  # PARAMETER_COUNT_AVAILABLE
            count = cur.lenenc() or 0
        try:
            if count:
                op.parameters = self._bound_values(cur, count, stmt, False)
        except BadPacketError as exc:
            op.request_complete = False
            op.diagnostics.append(
                Diagnostic(
                    code="mysql.parameters",
                    message=f"the parameters of this execute are not read: {exc}",
                    location=f"{self.location} client byte {packet.offset}",
                )
            )
        stmt.long_data.clear()

    def _bound_values(
        self, cur: Reader, count: int, stmt: Statement | None, named: bool
    ) -> list[Json]:
        """The NULL bitmap, the types when newly bound (and names, for query attributes),
        then each value by its type; a parameter sent as long data takes that."""
        nulls = cur.take((count + 7) // 8)
        types: list[tuple[int, int]] = stmt.types if stmt is not None else []
        names: list[str] = []
        if cur.number(1):  # new-params-bound flag
            types = []
            for _ in range(count):
                types.append((cur.number(1), cur.number(1)))
                if named or self._caps & CLIENT_QUERY_ATTRIBUTES:
                    names.append(cur.lenenc_text())
            if stmt is not None:
                stmt.types = types
        if len(types) != count:
            raise BadPacketError(
                f"{count} parameters and no types bound for them (they were bound by an "
                "execute before the capture started)"
            )
        long_data = stmt.long_data if stmt is not None else {}
        values: list[Json] = []
        for n, (kind, flags) in enumerate(types):
            if nulls[n >> 3] >> (n & 7) & 1:
                values.append(None)
            elif n in long_data:
                values.append(value_json(long_data[n], 0))
            else:
                values.append(binary_value(cur, kind, bool(flags & 0x80)))
        if named:
            return [{"name": k, "value": v} for k, v in zip(names, values, strict=False)]
        return values

    def _client_login(self, packet: MyPacket, out: list[Operation]) -> None:
        """The client's packets of the connection phase."""
        op = self._login
        body = packet.body
        if op is None:  # no greeting seen (the TLS part of a connection, or cut before)
            op = self._login = Pending("startup", "CONNECT", None, packet.ts)
            if packet.seq == 1:  # not after an SSLRequest: the greeting was not captured
                op.lost = True
                op.diagnostics.append(
                    Diagnostic(
                        code="mysql.no_greeting",
                        message="the server's greeting was not captured: its version and "
                        "capabilities are not known",
                        location=f"{self.location} client byte {packet.offset}",
                        severity="info",
                    )
                )
        if body is None:
            op.request_complete = False
            return
        if "capabilities" in op.details.get("client", {}) or len(body) < 32:
            self._count_auth(op)
            op.request_ended = packet.ts
            return
        client = handshake_response(body)
        caps = client.pop("capabilities")
        server_caps = op.details.get("server_capabilities_value")
        self._caps = caps & server_caps if isinstance(server_caps, int) else caps
        client["capabilities"] = capability_names(caps)
        op.request_ended = packet.ts
        if "user" not in client:  # an SSLRequest
            self._ssl_request(packet, op, client, caps, out)
            return
        op.details["client"] = client
        op.details["parameters"] = {
            k: client[k] for k in ("user", "database") if client.get(k) is not None
        }
        if client.pop("auth_response_bytes", 0):
            self._count_auth(op)
        if self._caps & CLIENT_ZSTD_COMPRESSION and not self._caps & CLIENT_COMPRESS:
            self.diagnostics.append(
                Diagnostic(
                    code="mysql.zstd",
                    message="the connection is zstd-compressed (CLIENT_ZSTD_COMPRESSION), "
                    "which is not read: nothing after its authentication is decoded",
                    location=f"{self.location} client byte {packet.offset}",
                )
            )

    def _ssl_request(
        self,
        packet: MyPacket,
        op: Pending,
        client: dict[str, Json],
        caps: int,
        out: list[Operation],
    ) -> None:
        if not caps & CLIENT_SSL:
            raise BadPacketError("a 32-byte handshake response without CLIENT_SSL")
        self._login = None
        ssl = Pending("ssl_request", "SSLRequest", None, op.started)
        ssl.details = {**op.details, "client": client}
        ssl.details.pop("server_capabilities_value", None)
        ssl.request_ended = packet.ts
        ssl.response_started = op.response_started
        ssl.result = "TLS"
        out.append(self._done(ssl, packet.ts, complete=op.response_started is not None))
        self._encrypted = True
        client_reader, server_reader = self._readers
        client_reader.pause()
        server_reader.pause()
        offsets = (client_reader.boundary, server_reader.boundary)
        self._switch = TlsSwitch(offsets, (client_reader.take_rest(), server_reader.take_rest()))

    def _count_auth(self, op: Pending) -> None:
        op.details["password_messages"] = int(op.details.get("password_messages", 0)) + 1

    # -- the server -------------------------------------------------------------------------

    def _server(self, packet: MyPacket, out: list[Operation]) -> None:
        body = packet.body
        fresh = self._login is None and not self._count and not self._queue
        if fresh and packet.seq == 0 and (body is None or body[:1] in (b"\x0a", b"\xff")):
            self._login = Pending("startup", "CONNECT", None, packet.ts)
        op = self._head()
        if op is None:
            if not self._unpaired:
                self._unpaired = True
                self.diagnostics.append(
                    Diagnostic(
                        code="mysql.unpaired",
                        message=f"a packet (sequence id {packet.seq}) answers no command seen "
                        "(the capture starts mid-answer or lost client bytes)",
                        location=f"{self.location} server byte {packet.offset}",
                    )
                )
            return
        if op.response_started is None:
            op.response_started = packet.ts
        if body is None:
            self._damaged(op, packet)
            return
        if not body:
            raise BadPacketError("an empty packet where an answer was due")
        if op is self._login:
            self._server_login(op, packet, body, out)
        else:
            self._answer(op, packet, body, out)

    def _damaged(self, op: Pending, packet: MyPacket) -> None:
        if op.phase == "rows" and packet.too_large:  # only a row is that long
            op.rows = (op.rows or 0) + 1
            op.values_cut = True
            return
        op.lost = True
        if op.phase not in ("rows", "stream"):
            op.phase = "lost"  # where its answer goes on cannot be told

    def _server_login(
        self, op: Pending, packet: MyPacket, body: bytes, out: list[Operation]
    ) -> None:
        head = body[0]
        if head == 0x0A and "server" not in op.details:
            server = greeting(body)
            caps = server.pop("capabilities")
            server["capabilities"] = capability_names(caps)
            op.details["server"] = server
            op.details["server_capabilities_value"] = caps
            return
        if head == 0x00:
            op.result = "OK"
            op.details["authenticated"] = True
            self._login_done(op, packet, out)
            if self._caps & CLIENT_COMPRESS:
                for reader in self._readers:
                    reader.compress()
        elif head == 0xFF:
            op.error = error_packet(body)
            self._login_done(op, packet, out)
        elif head == 0xFE:  # AuthSwitchRequest: the plugin's name, then its data (not kept)
            op.details["auth_switch"] = Reader(body, 1).cstring() if len(body) > 1 else None
        elif head == 0x01:  # AuthMoreData
            if len(body) == 2 and body[1] in (3, 4):
                op.details["fast_auth"] = "ok" if body[1] == 3 else "full authentication"
            else:
                op.details["auth_more_data"] = int(op.details.get("auth_more_data", 0)) + 1
        else:
            raise BadPacketError(f"{head:#04x} is no packet of the connection phase")

    def _login_done(self, op: Pending, packet: MyPacket, out: list[Operation]) -> None:
        self._login = None
        op.details.pop("server_capabilities_value", None)
        if "client" not in op.details:  # no HandshakeResponse (lost, or none was sent)
            op.request_complete = False
            op.diagnostics.append(
                Diagnostic(
                    code="mysql.login_unseen",
                    message="no HandshakeResponse of this connection was captured: who "
                    "logged in, and how, is not known",
                    location=f"{self.location} server byte {packet.offset}",
                    severity="info",
                )
            )
        out.append(self._done(op, packet.ts, complete=not op.lost and op.request_complete))

    def _finish(self, op: Pending, packet: MyPacket, out: list[Operation]) -> None:
        if self._queue and self._queue[0] is op:
            self._queue.popleft()
        out.append(self._done(op, packet.ts, complete=not op.lost))

    # -- operations out ---------------------------------------------------------------------

    def _done(self, op: Pending, ended: float | None, *, complete: bool) -> Operation:
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
            rows=op.rows
            if op.rows is not None or op.kind == "prepare"
            else (0 if op.columns else None),
            columns=op.columns,
            error=op.error,
            values=op.values or None,
            values_cut=op.values_cut,
            details=op.details,
            diagnostics=op.diagnostics,
        )
