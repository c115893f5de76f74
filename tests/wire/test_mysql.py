"""The MySQL decoder on conversations built from the protocol's packet formats: fed three
ways, EOF and DEPRECATE_EOF result sets, prepared statements, errors, gaps inside a packet
and at a boundary (resynchronized), compression, TLS, secrets never kept."""

from __future__ import annotations

import struct

import pytest

from agentshark.wire.mysql import MySession, sniff_mysql
from agentshark.wire.mysql_parse import CLIENT_COMPRESS, CLIENT_DEPRECATE_EOF
from tests.wire import mysql_messages as m
from tests.wire.pg_messages import Step, facts, feed

SECRET = b"hunter2-never-kept"


def decoder() -> MySession:
    return MySession("c1")


def connect(caps: int) -> list[Step]:
    return [(1, m.greeting()), (0, m.login(caps, "agent", SECRET)), (1, m.ok(2))]


def conversation(*, eofs: bool) -> list[Step]:
    caps = m.BASE_CAPS | (0 if eofs else CLIENT_DEPRECATE_EOF)
    return [
        *connect(caps),
        (0, m.query("SELECT body FROM notes")),
        (1, m.result_set(1, ["body"], [("a",), (None,)], eofs=eofs)),
        (0, m.query("SELECT * FROM nope")),
        (1, m.err(1, 1146, "42S02", "Table 'notes.nope' doesn't exist")),
        (0, m.query("INSERT INTO notes VALUES ('x')")),
        (1, m.ok(1, affected=1, insert_id=7)),
        (0, m.query("SELECT 1 AS one; SELECT 2 AS two")),
        (1, m.result_set(1, ["one"], [("1",)], eofs=eofs, status=2 | 8)),
        (1, m.result_set(4 + eofs, ["two"], [("2",)], eofs=eofs)),
        (0, m.command(0x16, b"SELECT name FROM items WHERE id = ? AND qty > ?")),
        (1, m.prepare_ok(5, 2, [("name", 0xFD)], eofs=eofs)),
        (0, m.execute(5, [(0x08, struct.pack("<q", 2)), (0x03, None)])),
        (1, m.binary_result(1, [("name", 0xFD)], [m.lstr("desk")])),
        (
            0,
            m.execute(5, [(0x08, struct.pack("<q", 3)), (0x03, struct.pack("<i", -1))], bind=False),
        ),
        (1, m.binary_result(1, [("name", 0xFD)], [])),
        (0, m.command(0x19, struct.pack("<I", 5))),  # STMT_CLOSE: no answer, no operation
        (0, m.command(0x0E)),
        (1, m.ok(1)),
        (0, m.command(0x02, b"other")),
        (1, m.ok(1)),
        (0, m.command(0x01)),
    ]


@pytest.mark.parametrize("eofs", [True, False], ids=["eof", "deprecate_eof"])
@pytest.mark.parametrize("chunk", [1, 7])
def test_same_operations_however_the_bytes_are_cut(chunk: int, eofs: bool) -> None:
    whole, _ = feed(decoder, conversation(eofs=eofs))
    cut, _ = feed(decoder, conversation(eofs=eofs), chunk=chunk)
    assert facts(cut) == facts(whole)


@pytest.mark.parametrize("eofs", [True, False], ids=["eof", "deprecate_eof"])
def test_operations_of_a_conversation(eofs: bool) -> None:
    ops, dec = feed(decoder, conversation(eofs=eofs))
    assert [o.kind for o in ops] == [
        *("startup", "query", "query", "query", "query", "prepare", "execute", "execute"),
        *("command", "command", "quit"),
    ]
    start, select, missing, insert, multi, prep, first, second, ping, init_db, quit_ = ops
    assert start.details["parameters"] == {"user": "agent", "database": "notes"}
    assert start.details["server"]["server_version"] == "8.0.36"
    assert start.details["password_messages"] == 1 and start.result == "OK"
    assert SECRET.decode() not in repr(ops) and "scramble" not in repr(ops)
    assert (select.statement, select.result, select.rows, select.columns) == (
        "SELECT body FROM notes",
        "RESULTSET",
        2,
        ["body"],
    )
    assert select.values == [["a"], [None]]
    assert missing.error == {
        "code": "42S02",
        "number": 1146,
        "message": "Table 'notes.nope' doesn't exist",
    }
    assert (insert.result, insert.details["affected_rows"], insert.details["last_insert_id"]) == (
        "OK",
        1,
        7,
    )
    assert multi.rows == 2 and multi.columns == ["two"]
    assert multi.details["results"] == [
        {"rows": 1, "columns": ["one"]},
        {"rows": 1, "columns": ["two"]},
    ]
    assert prep.details["statement_id"] == 5 and prep.details["parameter_count"] == 2
    assert prep.columns == ["name"] and prep.rows is None
    assert first.statement == second.statement == prep.statement
    assert first.parameters == [
        {"format": "binary", "type": "LONGLONG", "base64": "AgAAAAAAAAA=", "value": 2},
        None,
    ]
    assert [p["value"] for p in second.parameters] == [3, -1]  # the types bound before
    assert (first.rows, first.values, second.rows) == (1, [["desk"]], 0)
    assert (ping.command, ping.result) == ("PING", "OK")
    assert (init_db.command, init_db.details["use_database"]) == ("INIT_DB", "other")
    assert quit_.response_complete  # the server closed with a FIN, its only answer
    assert all(o.request_complete and o.response_complete for o in ops)
    assert [o.index for o in ops] == list(range(len(ops)))
    assert dec.diagnostics == []


def test_a_login_refused() -> None:
    ops, _ = feed(
        decoder,
        [
            (1, m.greeting()),
            (0, m.login(m.BASE_CAPS, "agent", SECRET)),
            (1, m.err(2, 1045, "28000", "Access denied for user 'agent'")),
        ],
    )
    assert len(ops) == 1 and ops[0].kind == "startup" and ops[0].response_complete
    assert ops[0].error is not None and ops[0].error["number"] == 1045


def test_auth_switch_is_counted_not_kept() -> None:
    ops, _ = feed(
        decoder,
        [
            (1, m.greeting()),
            (0, m.login(m.BASE_CAPS, "agent", SECRET)),
            (1, m.packet(2, b"\xfecaching_sha2_password\0" + m.SCRAMBLE + b"\0")),
            (0, m.packet(3, SECRET)),
            (1, m.packet(4, b"\x01\x03") + m.ok(5)),
        ],
    )
    (start,) = ops
    assert start.details["auth_switch"] == "caching_sha2_password"
    assert start.details["fast_auth"] == "ok"
    assert start.details["password_messages"] == 2
    assert SECRET.decode() not in repr(start) and start.response_complete


def test_a_gap_inside_a_row_leaves_that_query_incomplete() -> None:
    steps = [*connect(m.BASE_CAPS), (0, m.query("SELECT body FROM notes"))]
    answer = m.result_set(1, ["body"], [("a" * 100,), ("b",)], eofs=True)
    dec = decoder()
    out = []
    for d, data in steps:
        out += dec.feed(d, data, 1.0)
    cut = answer.index(b"a" * 100) + 10
    out += dec.feed(1, answer[:cut], 2.0)
    out += dec.gap(1, 20, 2.1)
    out += dec.feed(1, answer[cut + 20 :], 2.2)
    out += dec.feed(0, m.command(0x0E), 3.0)
    out += dec.feed(1, m.ok(1), 3.1)
    out += dec.close()
    select, ping = out[1], out[2]
    assert select.statement == "SELECT body FROM notes"
    assert not select.response_complete  # never complete and different
    assert ping.command == "PING" and ping.response_complete


def test_a_gap_at_a_boundary_resynchronizes_at_the_next_command() -> None:
    """Lost bytes between packets: the client's side finds its boundaries again on a segment
    of whole command packets, the server's on the answer to that command."""
    dec = decoder()
    out = []
    for d, data in connect(m.BASE_CAPS):
        out += dec.feed(d, data, 1.0)
    out += dec.feed(0, m.query("SELECT 1"), 2.0)
    out += dec.gap(1, 50, 2.1)  # the whole answer is lost
    out += dec.gap(0, 30, 2.2)  # and a command the client sent
    out += dec.feed(0, m.query("SELECT 2"), 3.0)
    out += dec.feed(1, m.result_set(1, ["x"], [("2",)], eofs=True), 3.1)
    out += dec.close()
    assert [o.statement for o in out[1:]] == ["SELECT 1", "SELECT 2"]
    lost, found = out[1:]
    assert not lost.response_complete
    assert found.response_complete and found.rows == 1 and found.values == [["2"]]
    codes = [d.code for d in dec.diagnostics]
    assert codes.count("mysql.gap") == 2 and codes.count("mysql.resync") == 2


def test_bytes_that_begin_no_answer_stay_dropped() -> None:
    """After a boundary gap the server's next bytes must begin a packet with sequence id 1
    that can start an answer: the tail of an old result set does not."""
    dec = decoder()
    out = []
    for d, data in connect(m.BASE_CAPS):
        out += dec.feed(d, data, 1.0)
    out += dec.feed(0, m.query("SELECT 1"), 2.0)
    out += dec.gap(1, 50, 2.1)
    out += dec.feed(1, m.packet(7, m.text_row("tail")) + m.eof(8), 2.2)
    out += dec.close()
    (_, select) = out
    assert not select.response_complete and select.rows is None
    assert "mysql.resync" not in [d.code for d in dec.diagnostics]


@pytest.mark.parametrize("deflate", [True, False], ids=["zlib", "stored"])
def test_compressed_packets_are_inflated(deflate: bool) -> None:
    caps = m.BASE_CAPS | CLIENT_COMPRESS
    steps: list[Step] = [
        *connect(caps),
        (0, m.compressed(m.query("SELECT body FROM notes"), 0, deflate=deflate)),
        (
            1,
            m.compressed(
                m.result_set(1, ["body"], [("a",), ("b",)], eofs=True), 1, deflate=deflate
            ),
        ),
        (0, m.compressed(m.command(0x0E), 0, deflate=deflate)),
        (1, m.compressed(m.ok(1), 1, deflate=deflate)),
    ]
    ops, dec = feed(decoder, steps)
    cut, _ = feed(decoder, steps, chunk=3)
    assert facts(cut) == facts(ops)
    assert [(o.statement, o.rows) for o in ops[1:]] == [("SELECT body FROM notes", 2), (None, None)]
    assert all(o.response_complete for o in ops) and dec.diagnostics == []


def test_a_compressed_packet_that_does_not_inflate_is_diagnosed() -> None:
    caps = m.BASE_CAPS | CLIENT_COMPRESS
    bad = b"\x05\x00\x00\x00\x10\x00\x00" + b"\x00junk"
    ops, dec = feed(decoder, [*connect(caps), (0, bad)])
    assert "mysql.compression" in [d.code for d in dec.diagnostics]
    assert all(o.kind == "startup" for o in ops)


def test_an_ssl_request_hands_the_connection_to_tls() -> None:
    dec = decoder()
    greeting = m.greeting()
    request = m.ssl_request(m.BASE_CAPS)
    hello = b"\x16\x03\x01\x00\x05hello"
    assert dec.feed(1, greeting, 1.0) == []
    ops = dec.feed(0, request + hello, 1.1)
    assert [(o.kind, o.result) for o in ops] == [("ssl_request", "TLS")]
    switch = dec.take_tls()
    assert switch is not None
    assert switch.offsets == (len(request), len(greeting))
    assert switch.rest == (hello, b"")
    assert dec.take_tls() is None and dec.feed(1, b"\x16\x03\x03", 1.2) == []
    # the decrypted session starts at the HandshakeResponse (sequence id 2)
    inner = decoder()
    out = inner.feed(0, m.login(m.BASE_CAPS, "agent", SECRET, seq=2), 2.0)
    out += inner.feed(1, m.ok(3), 2.1)
    assert [(o.kind, o.result) for o in out] == [("startup", "OK")]
    assert sniff_mysql(m.login(m.BASE_CAPS, "agent", SECRET, seq=2), b"", 33061) is True


def test_a_payload_past_16_mib_is_joined_from_its_parts() -> None:
    """A row of 16 MiB and more comes as a 0xFFFFFF-byte packet and the rest (sequence ids
    4 and 5): one row, counted, too large to keep."""
    big = "x" * (0xFFFFFF + 10)
    dec = decoder()
    out = []
    for d, data in connect(m.BASE_CAPS):
        out += dec.feed(d, data, 1.0)
    out += dec.feed(0, m.query("SELECT v"), 2.0)
    head = m.packet(1, b"\x01") + m.packet(2, m.column("v")) + m.eof(3)
    row = m.packet(4, m.text_row(big))
    assert row[3] == 4 and row[4 + 0xFFFFFF + 3] == 5
    out += dec.feed(1, head + row + m.eof(6), 2.1)
    assert out[1].rows == 1 and out[1].response_complete
    assert out[1].values_cut and out[1].values is None
    assert dec.diagnostics == []


def test_sniffing() -> None:
    assert sniff_mysql(b"", m.greeting(), 3306) is True
    assert sniff_mysql(b"", m.greeting()[:3], 3306) is None
    assert sniff_mysql(b"", b"SSH-2.0-OpenSSH_9.2\r\n", 22) is False
    assert sniff_mysql(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n" * 2, b"", 80) is False
    assert sniff_mysql(b"", m.err(0, 1130, "HY000", "Host is not allowed"), 3306) is True


def test_a_capture_started_after_the_handshake() -> None:
    ops, dec = feed(
        decoder, [(0, m.query("SELECT 1")), (1, m.result_set(1, ["1"], [("1",)], eofs=False))]
    )
    assert [(o.statement, o.rows, o.response_complete) for o in ops] == [("SELECT 1", 1, True)]
    assert [d.code for d in dec.diagnostics] == ["mysql.no_handshake"]


def test_an_execute_of_a_statement_prepared_before_the_capture() -> None:
    ops, _ = feed(
        decoder,
        [(0, m.execute(9, [(0x08, bytes(8))])), (1, m.ok(1, affected=1))],
    )
    (op,) = ops
    assert op.statement is None and op.parameters == [] and op.response_complete
    assert not op.request_complete  # the statement it names is not known
    assert [d.code for d in op.diagnostics] == ["mysql.unknown_statement"]


def test_empty_packets_are_diagnosed() -> None:
    """A payload of 0 bytes where a command or an answer was due (the fuzz campaign's first
    findings: an IndexError each)."""
    ops, dec = feed(
        decoder,
        [
            *connect(m.BASE_CAPS),
            (0, m.packet(0, b"")),
            (0, m.query("SELECT 1")),
            (1, m.packet(1, b"")),
        ],
    )
    assert [d.code for d in dec.diagnostics] == ["mysql.malformed"]
    select = ops[1]
    assert select.statement == "SELECT 1" and not select.response_complete
    assert [d.code for d in select.diagnostics] == ["mysql.malformed", "mysql.unanswered"]


def test_a_header_alone_after_a_gap_is_no_command() -> None:
    """After a boundary gap, a segment of a packet header with nothing after it does not
    resynchronize the client's side (a fuzz finding: an IndexError)."""
    dec = decoder()
    for d, data in connect(m.BASE_CAPS):
        dec.feed(d, data, 1.0)
    dec.gap(0, 10, 2.0)
    assert dec.feed(0, b"\x05\x00\x00\x00", 2.1) == []
    assert [d.code for d in dec.diagnostics] == ["mysql.gap"]
