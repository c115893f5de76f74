"""The server's answers to the commands of a MySQL connection: one packet at a time, into
the operation waiting for it (:class:`Pending`). :class:`AnswerReader` is the part of
:class:`~agentshark.wire.mysql.MySession` that reads them: OK/ERR/EOF packets, text and
binary result sets (several when the status says more follow), COM_STMT_PREPARE_OK with its
definitions (https://dev.mysql.com/doc/dev/mysql-server/latest/page_protocol_com_stmt_prepare.html),
COM_FIELD_LIST's definitions, COM_STATISTICS's string.

Where a result set's column definitions end is read from the packets: an EOF is 5 bytes, an
OK-shaped end of rows (CLIENT_DEPRECATE_EOF) never less than 7, a row never begins with
0xFE unless it is 16 MiB or more. A prepare's definitions are followed by EOFs unless the
handshake said CLIENT_DEPRECATE_EOF.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from agentshark.errors import Diagnostic
from agentshark.wire.events import Json, Operation
from agentshark.wire.mysql_frames import FULL, MyPacket
from agentshark.wire.mysql_parse import (
    CLIENT_DEPRECATE_EOF,
    CLIENT_OPTIONAL_RESULTSET_METADATA,
    MARIADB_CLIENT_EXTENDED_METADATA,
    SERVER_MORE_RESULTS_EXISTS,
    UNSIGNED_FLAG,
    BadPacketError,
    Reader,
    binary_row,
    column_definition,
    eof_packet,
    error_packet,
    ok_packet,
    text_row,
)

MAX_VALUES = 1000  # result rows kept per operation (their count is always exact)
MAX_VALUE_BYTES = 1 << 20  # bytes of result rows kept per operation
SERVER_STATUS_CURSOR_EXISTS = 0x0040


@dataclass(slots=True)
class Statement:
    """A prepared statement: its SQL, and what the server and the last execute said."""

    sql: str | None
    params: int
    columns: int
    types: list[tuple[int, int]] = field(default_factory=list)  # bound (type, flags)
    result_types: list[tuple[int, bool]] = field(default_factory=list)
    long_data: dict[int, bytes] = field(default_factory=dict)


@dataclass(slots=True)
class Pending:
    kind: str
    command: str | None
    statement: str | None
    started: float
    answer: str = "ok"  # what answers it (see _ANSWERS)
    phase: str = "head"
    parameters: list[Json] = field(default_factory=list)
    request_complete: bool = True
    request_ended: float | None = None
    response_started: float | None = None
    lost: bool = False  # a packet of its answer was lost or damaged
    result: str | None = None
    rows: int | None = None
    columns: list[str] = field(default_factory=list)
    types: list[tuple[int, bool]] = field(default_factory=list)
    binary: bool = False  # its rows are binary-protocol rows
    want: int = 0  # column definitions still to come (of the phase)
    error: dict[str, Json] | None = None
    values: list[list[Json]] = field(default_factory=list)
    value_bytes: int = 0
    values_cut: bool = False
    statement_id: int | None = None
    details: dict[str, Json] = field(default_factory=dict)
    diagnostics: list[Diagnostic] = field(default_factory=list)


class AnswerReader:
    """The server's side of :class:`~agentshark.wire.mysql.MySession` (a mixin: the session
    keeps the state, ends operations with ``_finish``)."""

    __slots__ = ()
    _caps: int
    _statements: dict[int, Statement]

    def _finish(self, op: Pending, packet: MyPacket, out: list[Operation]) -> None:
        raise NotImplementedError

    def _answer(self, op: Pending, packet: MyPacket, body: bytes, out: list[Operation]) -> None:
        """One packet of the answer to the oldest command waiting."""
        phase, head = op.phase, body[0]
        if phase in ("lost", "stream") or op.answer in ("stream", "unknown"):
            op.details["packets"] = int(op.details.get("packets", 0)) + 1
            return
        if head == 0xFF and phase in ("head", "rows", "eof", "infile"):
            op.error = error_packet(body)
            self._finish(op, packet, out)
            return
        if op.answer == "none":
            raise BadPacketError(f"COM_{op.command} has no answer")
        if op.answer == "string":
            op.result = body.decode("utf-8", "replace")
            self._finish(op, packet, out)
        elif op.answer in ("ok", "eof"):
            self._ok_answer(op, packet, body, out)
        elif op.answer == "prepare":
            self._prepare_answer(op, packet, body, out)
        elif op.answer == "field_list":
            if head == 0xFE and len(body) < 9:
                op.result = "EOF"
                self._finish(op, packet, out)
            else:
                op.columns.append(column_definition(body, self._extended)[0])
        else:
            self._results(op, packet, body, out)

    @property
    def _extended(self) -> bool:
        return bool(self._caps & MARIADB_CLIENT_EXTENDED_METADATA)

    def _ok_answer(self, op: Pending, packet: MyPacket, body: bytes, out: list[Operation]) -> None:
        head = body[0]
        if head == 0x00:
            op.details.update(ok_packet(body, self._caps))
            op.result = "OK"
        elif head == 0xFE and len(body) == 5:
            op.details.update(eof_packet(body))
            op.result = "EOF"
        elif head == 0xFE and op.command == "CHANGE_USER":
            op.details["auth_switch"] = Reader(body, 1).cstring() if len(body) > 1 else None
            return
        elif head == 0x01 and op.command == "CHANGE_USER":
            return  # AuthMoreData
        else:
            raise BadPacketError(f"{head:#04x} answers no COM_{op.command}")
        self._finish(op, packet, out)

    def _prepare_answer(
        self, op: Pending, packet: MyPacket, body: bytes, out: list[Operation]
    ) -> None:
        """COM_STMT_PREPARE_OK, the parameters' definitions and their EOF (none with
        CLIENT_DEPRECATE_EOF), the columns' and theirs."""
        phase = op.phase
        if phase == "head":
            if body[0] != 0x00:
                raise BadPacketError(f"{body[0]:#04x} begins no COM_STMT_PREPARE_OK")
            cur = Reader(body, 1)
            stmt_id, columns, params = cur.number(4), cur.number(2), cur.number(2)
            cur.number(1)
            if cur.left >= 2:
                op.details["warnings"] = cur.number(2)
            op.statement_id = stmt_id
            op.result = "PREPARE_OK"
            op.details.update(statement_id=stmt_id, parameter_count=params, column_count=columns)
            self._statements[stmt_id] = Statement(op.statement, params, columns)
            op.want = params
            op.phase = "params"
        elif head_is_eof(body) and phase in ("params_eof", "eof"):
            op.phase = "columns_start" if phase == "params_eof" else "end"
        elif phase in ("params", "columns") and op.want > 0:
            name, kind, flags = column_definition(body, self._extended)
            op.want -= 1
            if phase == "columns":
                op.columns.append(name)
                stmt = self._statements.get(op.statement_id or -1)
                if stmt is not None:
                    stmt.result_types.append((kind, bool(flags & UNSIGNED_FLAG)))
        else:
            raise BadPacketError(f"{body[0]:#04x} where the {phase} of a prepare was awaited")
        self._prepare_step(op, packet, out)

    def _prepare_step(self, op: Pending, packet: MyPacket, out: list[Operation]) -> None:
        eofs = not self._caps & CLIENT_DEPRECATE_EOF
        while True:
            if op.phase == "params" and op.want == 0:
                op.phase = (
                    "params_eof" if op.details["parameter_count"] and eofs else "columns_start"
                )
            elif op.phase == "columns_start":
                op.want = int(op.details["column_count"])
                op.phase = "columns"
            elif op.phase == "columns" and op.want == 0:
                op.phase = "eof" if op.details["column_count"] and eofs else "end"
            elif op.phase == "end":
                self._finish(op, packet, out)
                return
            else:
                return

    def _results(self, op: Pending, packet: MyPacket, body: bytes, out: list[Operation]) -> None:
        """A text or binary result set, or an OK; several when the status says more follow."""
        phase, head = op.phase, body[0]
        if phase == "head":
            if head == 0x00:
                self._one_result(op, packet, ok_packet(body, self._caps), out, ok=True)
            elif head == 0xFB and op.kind == "query":
                op.details["local_infile"] = body[1:].decode("utf-8", "replace")
                op.phase = "infile"
            else:
                cur = Reader(body)
                count = cur.lenenc() or 0
                optional = self._caps & CLIENT_OPTIONAL_RESULTSET_METADATA
                if optional and cur.left and not cur.number(1):
                    op.details["metadata_skipped"] = True
                    count = 0
                op.want = count
                op.columns, op.types = [], []
                op.rows = op.rows or 0
                op.phase = "columns" if count else "columns_end"
        elif phase == "columns":
            name, kind, flags = column_definition(body, self._extended)
            op.columns.append(name)
            op.types.append((kind, bool(flags & UNSIGNED_FLAG)))
            op.want -= 1
            if op.want == 0:
                op.phase = "columns_end"
            if op.statement_id is not None and op.want == 0:
                stmt = self._statements.get(op.statement_id)
                if stmt is not None:
                    stmt.result_types = list(op.types)
        elif phase == "columns_end" and head == 0xFE and len(body) == 5:
            status = eof_packet(body)["status_flags"]
            op.phase = "rows"
            if status & SERVER_STATUS_CURSOR_EXISTS:
                op.result = "CURSOR"
                op.details["cursor"] = True
                self._finish(op, packet, out)
        elif head == 0xFE and len(body) < FULL:  # the end of the rows
            end = eof_packet(body) if len(body) == 5 else ok_packet(body, self._caps)
            self._one_result(op, packet, end, out, ok=False)
        elif phase in ("rows", "columns_end"):
            op.phase = "rows"
            self._row(op, body)
        else:
            raise BadPacketError(f"{head:#04x} where the {phase} of an answer was awaited")

    def _one_result(
        self,
        op: Pending,
        packet: MyPacket,
        fields: dict[str, Json],
        out: list[Operation],
        *,
        ok: bool,
    ) -> None:
        status = int(fields.get("status_flags") or 0)
        results = op.details.setdefault("results", [])
        assert isinstance(results, list)
        before = sum(int(r.get("rows", 0)) for r in results)
        summary: dict[str, Json] = (
            {k: fields[k] for k in ("affected_rows", "last_insert_id") if k in fields}
            if ok
            else {"rows": (op.rows or 0) - before, "columns": list(op.columns)}
        )
        results.append(summary)
        for key in ("affected_rows", "last_insert_id", "warnings", "info", "status_flags"):
            if key in fields:
                op.details[key] = fields[key]
        op.result = "OK" if ok else "RESULTSET"
        if status & SERVER_MORE_RESULTS_EXISTS:
            op.phase = "head"
            return
        if len(results) == 1:
            op.details.pop("results")
        self._finish(op, packet, out)

    def _row(self, op: Pending, body: bytes) -> None:
        op.rows = (op.rows or 0) + 1
        if len(op.values) < MAX_VALUES and op.value_bytes + len(body) <= MAX_VALUE_BYTES:
            op.values.append(binary_row(body, op.types) if op.binary else text_row(body))
            op.value_bytes += len(body)
        else:
            op.values_cut = True


def head_is_eof(body: bytes) -> bool:
    return body[0] == 0xFE and len(body) == 5
