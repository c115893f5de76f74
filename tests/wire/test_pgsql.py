"""The PostgreSQL decoder on conversations built from the protocol's message formats: fed
three ways, with errors in both protocols, pipelined Executes, a lost byte range, secrets."""

from __future__ import annotations

import pytest

from agentshark.wire.events import TlsSwitch
from agentshark.wire.pgsql import PgSession, looks_like_startup
from tests.wire import pg_messages as m

SECRET = "hunter2-never-kept"


def login() -> list[m.Step]:
    return [
        (0, m.startup(user="agent", database="notes", application_name="t")),
        (1, m.auth(3)),
        (0, m.password(SECRET)),
        (1, m.auth(0) + m.parameter_status("server_version", "15.18") + m.ready()),
    ]


def conversation() -> list[m.Step]:
    return [
        *login(),
        (0, m.query("SELECT body FROM notes")),
        (1, m.row_description("body") + m.data_row(b"a") + m.data_row(None)),
        (1, m.command_complete("SELECT 2") + m.ready()),
        (0, m.query("SELECT * FROM nope")),
        (1, m.error("42P01", 'relation "nope" does not exist') + m.ready()),
        # extended: two statements in one batch (pipelined), then one that fails to parse
        (0, m.parse("INSERT INTO notes VALUES ($1, $2)", oids=[25, 23]) + m.bind([b"x", b"7"])),
        (0, m.describe_portal() + m.execute() + m.bind([b"y", None]) + m.execute() + m.sync()),
        (1, m.parse_complete() + m.bind_complete() + m.no_data()),
        (1, m.command_complete("INSERT 0 1") + m.bind_complete()),
        (1, m.command_complete("INSERT 0 1") + m.ready()),
        (0, m.parse("SELEC 1") + m.bind([]) + m.execute() + m.sync()),
        (1, m.error("42601", 'syntax error at or near "SELEC"') + m.ready()),
    ]


def decoder() -> PgSession:
    return PgSession("c1")


@pytest.mark.parametrize("chunk", [None, 1, 7])
def test_same_operations_however_the_bytes_are_cut(chunk: int | None) -> None:
    whole, _ = m.feed(decoder, conversation())
    cut, _ = m.feed(decoder, conversation(), chunk=chunk)
    assert m.facts(cut) == m.facts(whole)


def test_operations_of_a_conversation() -> None:
    ops, dec = m.feed(decoder, conversation())
    assert [o.kind for o in ops] == ["startup", "query", "query", "execute", "execute", "execute"]
    start, select, missing, first, second, bad = ops
    assert start.details["parameters"] == {
        "user": "agent",
        "database": "notes",
        "application_name": "t",
    }
    assert start.details["authentication"] == "cleartext"
    assert start.details["password_messages"] == 1
    assert SECRET not in repr(ops) and SECRET not in repr(dec.diagnostics)
    assert (select.statement, select.result, select.rows) == (
        "SELECT body FROM notes",
        "SELECT 2",
        2,
    )
    assert select.columns == ["body"] and select.values == [["a"], [None]]
    assert missing.error is not None and missing.error["code"] == "42P01"
    assert missing.result is None and missing.response_complete
    assert first.statement == second.statement == "INSERT INTO notes VALUES ($1, $2)"
    assert first.parameters == ["x", "7"] and second.parameters == ["y", None]
    assert first.result == second.result == "INSERT 0 1"
    assert bad.statement == "SELEC 1" and bad.error is not None and bad.error["code"] == "42601"
    assert all(o.request_complete and o.response_complete for o in ops)
    assert [o.index for o in ops] == list(range(6))
    assert dec.diagnostics == []


def test_batch_after_an_error_is_reported_not_executed() -> None:
    steps = [
        *login(),
        (0, m.parse("SELECT 1/0") + m.bind([]) + m.execute()),
        (0, m.parse("SELECT 2") + m.bind([]) + m.execute() + m.sync()),
        (1, m.parse_complete() + m.bind_complete() + m.error("22012", "division by zero")),
        (1, m.ready()),
    ]
    ops, _ = m.feed(decoder, steps)
    failed, skipped = ops[1:]
    assert failed.error is not None and failed.error["code"] == "22012"
    assert skipped.statement == "SELECT 2" and skipped.details.get("skipped") is True
    assert skipped.result is None and skipped.error is None


def test_binary_parameters_are_kept_raw() -> None:
    steps = [
        *login(),
        (0, m.parse("SELECT $1::int", oids=[23]) + m.bind([b"\0\0\0\x2a"], formats=[1])),
        (0, m.execute() + m.sync()),
        (1, m.parse_complete() + m.bind_complete() + m.command_complete("SELECT 0") + m.ready()),
    ]
    ops, _ = m.feed(decoder, steps)
    assert ops[1].parameters == [
        {"format": "binary", "base64": "AAAAKg==", "type_oid": 23, "value": 42}
    ]


def test_binary_parameter_of_a_type_not_read_stays_raw() -> None:
    steps = [
        *login(),
        (0, m.parse("SELECT $1::uuid", oids=[2950]) + m.bind([b"\x01" * 16], formats=[1])),
        (0, m.execute() + m.sync()),
        (1, m.parse_complete() + m.bind_complete() + m.command_complete("SELECT 0") + m.ready()),
    ]
    ops, _ = m.feed(decoder, steps)
    assert ops[1].parameters == [{"format": "binary", "base64": "AQEBAQEBAQEBAQEBAQEBAQ=="}]


def test_unanswered_statement_is_incomplete() -> None:
    ops, _ = m.feed(decoder, [*login(), (0, m.query("SELECT pg_sleep(60)"))])
    assert ops[-1].statement == "SELECT pg_sleep(60)"
    assert ops[-1].request_complete and not ops[-1].response_complete
    assert ops[-1].ended is None
    assert [d.code for d in ops[-1].diagnostics] == ["pg.unanswered"]


def test_gap_inside_a_data_row_costs_that_row_only() -> None:
    dec = decoder()
    for direction, data in [*login(), (0, m.query("SELECT body FROM notes"))]:
        dec.feed(direction, data, 1.0)
    row = m.data_row(b"x" * 40)
    assert dec.feed(1, m.row_description("body") + row[:10], 2.0) == []
    assert dec.gap(1, 20, 2.0) == []
    dec.feed(1, row[30:] + m.data_row(b"b"), 2.1)
    ops = dec.feed(1, m.command_complete("SELECT 2") + m.ready(), 2.2)
    assert len(ops) == 1
    assert ops[0].rows == 2 and ops[0].result == "SELECT 2"
    assert not ops[0].response_complete  # a row's bytes were lost
    assert dec.diagnostics == []


def test_gap_at_a_boundary_resyncs_but_the_pairing_is_not_proven() -> None:
    """Server bytes lost at a boundary while a query waited: framing finds the next message
    again, but whose answer it is cannot be told (the lost bytes may have held this query's
    answer), so the query ends incomplete; the next batch sent after a ReadyForQuery the
    client had received (its segment acknowledges every server byte) is a sync point."""
    dec = decoder()
    for direction, data in [*login(), (0, m.query("SELECT 1"))]:
        dec.feed(direction, data, 1.0)
    assert dec.gap(1, 30, 2.0) == []
    ops = dec.feed(1, m.command_complete("SELECT 1") + m.ready(), 2.1)
    assert [o.statement for o in ops] == ["SELECT 1"] and not ops[0].response_complete
    assert [d.code for d in ops[0].diagnostics] == ["pg.gap_pairing"]
    assert [d.code for d in dec.diagnostics] == ["pg.gap", "pg.resync"]
    server = dec._readers[1].offset
    dec.feed(0, m.query("SELECT 2"), 3.0, acked=server)
    ops = dec.feed(1, m.command_complete("SELECT 1") + m.ready(), 3.1)
    assert [(o.statement, o.response_complete, o.diagnostics) for o in ops] == [
        ("SELECT 2", True, [])
    ]


def test_request_ends_at_its_last_client_message() -> None:
    """An execute's request ends with its Execute (its Parse came in an earlier segment, as
    psycopg's pipeline sends them), a startup's with its password message."""
    dec = decoder()
    out = []
    for direction, data, ts in [
        (0, m.startup(user="agent", database="notes"), 1.0),
        (1, m.auth(3), 1.1),
        (0, m.password(SECRET), 1.2),
        (1, m.auth(0) + m.ready(), 1.3),
        (0, m.parse("SELECT $1::int", oids=[23]), 2.0),
        (0, m.bind([b"7"]) + m.execute(), 2.5),
        (0, m.sync(), 2.6),
        (1, m.parse_complete() + m.bind_complete() + m.command_complete("SELECT 1"), 2.7),
        (1, m.ready(), 2.8),
    ]:
        out += dec.feed(direction, data, ts)
    out += dec.close()
    assert [(o.kind, o.started, o.request_ended) for o in out] == [
        ("startup", 1.0, 1.2),
        ("execute", 2.0, 2.5),
    ]


def test_client_bytes_lost_after_a_whole_execute_leave_it_complete() -> None:
    """Client bytes lost while an execute waits (its Parse, Bind and Execute all came): the
    lost bytes belong to later requests, not to it; a startup waiting for its password
    exchange is another matter (the password message may be among them)."""
    dec = decoder()
    for direction, data in login():
        dec.feed(direction, data, 1.0)
    dec.feed(0, m.parse("SELECT 1") + m.bind([]) + m.execute() + m.sync(), 2.0, acked=0)
    assert dec.gap(0, 40, 2.1) == []
    ops = dec.feed(1, m.parse_complete() + m.bind_complete() + m.command_complete("SELECT 1"), 2.2)
    ops += dec.feed(1, m.ready(), 2.3) + dec.close()
    first = ops[0]
    assert (first.statement, first.request_complete) == ("SELECT 1", True)
    assert "pg.request_gap" not in [d.code for d in first.diagnostics]

    dec = decoder()
    dec.feed(0, m.startup(user="agent", database="notes"), 1.0)
    dec.feed(1, m.auth(10, b"SCRAM-SHA-256\x00\x00"), 1.1)
    assert dec.gap(0, 55, 1.2) == []
    ops = dec.feed(1, m.error("28P01", "password authentication failed"), 1.3) + dec.close()
    assert [(o.kind, o.request_complete) for o in ops] == [("startup", False)]
    assert "pg.request_gap" in [d.code for d in ops[0].diagnostics]


def test_tls_accepted_hands_the_connection_to_tls() -> None:
    """``S``: TLS from the next byte of each direction; the switch is given once."""
    dec = PgSession("test")
    ops = dec.feed(0, m.ssl_request(), 1.0) + dec.feed(1, b"S", 1.1)
    assert [(o.kind, o.result, o.response_complete) for o in ops] == [("ssl_request", "S", True)]
    assert dec.take_tls() == TlsSwitch((8, 1), (b"", b""))
    assert dec.take_tls() is None
    assert dec.feed(0, b"\x16\x03\x01\x00\x05hello", 1.2) == []  # TLS: not ours to read
    assert dec.diagnostics == []


def test_bytes_past_the_switch_go_to_tls() -> None:
    """What came after the SSLRequest before the answer, and after the ``S`` in its own
    segment, is TLS's, byte for byte."""
    dec = PgSession("test")
    hello = b"\x16\x03\x01\x00\x05hello"
    dec.feed(0, m.ssl_request() + hello[:4], 1.0)
    dec.feed(0, hello[4:], 1.05)
    dec.feed(1, b"S\x16\x03\x03", 1.1)
    assert dec.take_tls() == TlsSwitch((8, 1), (hello, b"\x16\x03\x03"))


def test_gssapi_encryption_is_said_undecryptable() -> None:
    steps: list[m.Step] = [(0, m.ssl_request()), (1, b"G")]
    ops, dec = m.feed(decoder, steps)
    assert [(o.kind, o.result) for o in ops] == [("ssl_request", "G")]
    assert [d.code for d in dec.diagnostics] == ["pg.encrypted"]
    assert isinstance(dec, PgSession) and dec.take_tls() is None


def test_startup_sent_before_the_answer_is_read_after_an_n() -> None:
    steps: list[m.Step] = [(0, m.ssl_request() + login()[0][1]), (1, b"N"), *login()[1:]]
    ops, dec = m.feed(decoder, steps)
    assert [(o.kind, o.result) for o in ops] == [("ssl_request", "N"), ("startup", None)]
    assert dec.diagnostics == []


def test_tls_refused_then_startup() -> None:
    steps: list[m.Step] = [(0, m.ssl_request()), (1, b"N"), *login()]
    ops, dec = m.feed(decoder, steps)
    assert [(o.kind, o.result) for o in ops] == [("ssl_request", "N"), ("startup", None)]
    assert dec.diagnostics == []


def test_cancel_request_keeps_the_pid_not_the_key() -> None:
    ops, _ = m.feed(decoder, [(0, m.cancel_request(4242, 0x5EC2E7))])
    assert [(o.kind, o.details) for o in ops] == [("cancel", {"process_id": 4242})]
    assert ops[0].response_complete  # the server closed the connection with a FIN: its answer


def test_startup_refused() -> None:
    steps: list[m.Step] = [
        (0, m.startup(user="agent")),
        (1, m.auth(5, b"salt")),
        (0, m.password("md5" + "0" * 32)),
        (1, m.error("28P01", 'password authentication failed for user "agent"', "FATAL")),
    ]
    ops, _ = m.feed(decoder, steps)
    assert len(ops) == 1
    assert ops[0].error is not None and ops[0].error["code"] == "28P01"
    assert ops[0].details["authentication"] == "md5" and ops[0].response_complete


def test_not_postgresql_framing_is_a_diagnostic() -> None:
    ops, dec = m.feed(decoder, [*login(), (1, b"Z\xff\xff\xff\xff")])
    assert [o.kind for o in ops] == ["startup"]
    assert [d.code for d in dec.diagnostics] == ["pg.framing"]


def test_sniffing() -> None:
    assert looks_like_startup(m.startup(user="a"))
    assert looks_like_startup(m.ssl_request())
    assert looks_like_startup(m.cancel_request(1, 2))
    assert not looks_like_startup(b"GET / HTTP/1.1\r\n")
    assert not looks_like_startup(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03")
    assert not looks_like_startup(b"\x00\x00\x00\x08\x00\x00\x00\x01")
