"""MCP stdio transcripts -> lines -> exchanges: the three layouts, pairing, bad lines, fuzz."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentshark.errors import Diagnostic
from agentshark.model import Exchange
from agentshark.sources.stdio import StdioLine, read_stdio, sniff_stdio, stdio_exchanges
from tests.helpers import CAPTURES, CORPUS

TIME = CAPTURES / "mcp_stdio_time"
REPLAYS = CORPUS / "block__goose/crates/goose/tests/mcp_replays"
GOOSE = sorted(REPLAYS.iterdir()) if REPLAYS.is_dir() else []
DOCUMENTS = Path(__file__).resolve().parent.parent / "data" / "documents"
URL = "stdio://mcp-server"


def lines_of(data: bytes, name: str = "t.jsonl", direction: str | None = None) -> list[Any]:
    return list(read_stdio(data, name, direction=direction))


def pair(lines: list[StdioLine]) -> list[Exchange | Diagnostic]:
    ids = itertools.count(1)
    return list(
        stdio_exchanges(
            lines, source=2, connection="stdio-1", url=URL, next_id=lambda: f"s{next(ids)}"
        )
    )


def only_lines(items: list[Any]) -> list[StdioLine]:
    assert all(isinstance(i, StdioLine) for i in items), [
        i for i in items if isinstance(i, Diagnostic)
    ]
    return items


def exchanges(items: list[Exchange | Diagnostic]) -> list[Exchange]:
    return [i for i in items if isinstance(i, Exchange)]


def diagnostics(items: list[Any]) -> list[Diagnostic]:
    return [i for i in items if isinstance(i, Diagnostic)]


def msg(x: Exchange, side: str) -> Any:
    message = x.request if side == "request" else x.response
    assert message is not None
    return orjson.loads(message.body.data())


def rpc(**fields: Any) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", **fields})


def line(direction: str, data: bytes, n: int, ts: float | None = None) -> StdioLine:
    return StdioLine(direction=direction, data=data, ts=ts, where=f"t line {n}")


def summary(x: Exchange) -> tuple[Any, ...]:
    """What pairing decided: method, id, the request's direction, and the answer's kind."""
    req = msg(x, "request")
    answer = (
        None if x.response is None else ("error" if "error" in msg(x, "response") else "result")
    )
    return (x.request and x.request.method, req.get("id"), x.extras["direction"], answer)


# --- the merged transcript against the capture's truth -----------------------------------------


def test_merged_transcript_matches_truth() -> None:
    data = (TIME / "transcript.jsonl").read_bytes()
    assert sniff_stdio(data) == "stdio-merged"
    out = pair(only_lines(lines_of(data, "transcript.jsonl")))
    assert diagnostics(out) == []
    xs = exchanges(out)
    assert [x.id for x in xs] == [f"s{i}" for i in range(1, len(xs) + 1)]
    truth = orjson.loads((TIME / "truth.json").read_bytes())["jsonrpc"]

    calls = [x for x in xs if x.extras["kind"] == "request"]
    assert [(x.request and x.request.method, msg(x, "request")["id"]) for x in calls] == [
        (c["method"], c["id"]) for c in truth["calls"]
    ]
    for x, call in zip(calls, truth["calls"], strict=True):
        assert x.complete and x.response is not None
        response = msg(x, "response")
        assert response["id"] == call["id"]
        if call["outcome"] == "jsonrpc_error":
            assert response["error"]["code"] == call["error_code"]
            assert response["error"]["message"] == call["error_message"]
        else:
            assert call["outcome"] == "result" and "result" in response
            if "is_error" in call:
                assert response["result"].get("isError", False) is call["is_error"]
    assert sum("error" in msg(x, "response") for x in calls) == truth["counts"]["errors_received"]

    notes = [x for x in xs if x.extras["kind"] == "notification"]
    assert [x.request and x.request.method for x in notes] == truth["notifications_sent"]
    assert all(x.extras["direction"] == "c2s" and x.response is None for x in notes)
    assert len(truth["notifications_received"]) == 0


def test_merged_transcript_keeps_bytes_and_times() -> None:
    data = (TIME / "transcript.jsonl").read_bytes()
    records = [orjson.loads(r) for r in data.splitlines()]
    lines = only_lines(lines_of(data, "transcript.jsonl"))
    assert [(ln.direction, ln.data, ln.ts) for ln in lines] == [
        (r["dir"], r["line"].encode(), r["t"]) for r in records
    ]
    assert all(len(ln.data) + 1 == r["bytes"] for ln, r in zip(lines, records, strict=True))
    x = exchanges(pair(lines))[0]
    assert x.transport == "stdio" and x.source == 2 and x.connection == "stdio-1"
    req, resp = x.request, x.response
    assert req is not None and resp is not None
    assert (req.target, req.url, req.version, req.headers) == ("", URL, "stdio", [])
    assert req.body.pieces == [(records[0]["t"], records[0]["line"].encode())]
    assert req.body.size == len(records[0]["line"].encode())
    assert req.started == req.ended == records[0]["t"]
    assert (resp.status, resp.reason, resp.version, resp.headers) == (0, "", "stdio", [])
    assert resp.started == resp.ended == records[1]["t"]
    assert resp.body.data() == records[1]["line"].encode() and resp.complete
    assert x.extras == {
        "kind": "request",
        "direction": "c2s",
        "request_line": "transcript.jsonl line 1",
        "response_line": "transcript.jsonl line 2",
    }


def test_merged_record_without_line_is_reserialized() -> None:
    record = {"seq": 1, "t": 5, "dir": "c2s", "json": {"jsonrpc": "2.0", "id": 1, "method": "ping"}}
    (ln,) = only_lines(lines_of(orjson.dumps(record)))
    assert orjson.loads(ln.data) == record["json"] and ln.ts == 5.0


def test_one_direction_files_give_the_same_pairs() -> None:
    merged = exchanges(pair(only_lines(lines_of((TIME / "transcript.jsonl").read_bytes()))))
    c2s, s2c = ((TIME / f"{d}.jsonl").read_bytes() for d in ("c2s", "s2c"))
    assert sniff_stdio(c2s) == sniff_stdio(s2c) == "stdio-jsonrpc"
    lines = only_lines(lines_of(c2s, "c2s.jsonl", "c2s") + lines_of(s2c, "s2c.jsonl", "s2c"))
    assert {ln.direction for ln in lines[:10]} == {"c2s"} and all(ln.ts is None for ln in lines)
    split = exchanges(pair(lines))
    assert [summary(x) for x in split] == [summary(x) for x in merged]
    assert [x.complete for x in split] == [x.complete for x in merged]
    x = split[0]
    assert x.request is not None and x.response is not None
    assert x.request.started is None and x.response.ended is None
    assert x.request.body.pieces[0][0] == 0.0


def test_one_direction_file_needs_a_direction() -> None:
    data = (TIME / "c2s.jsonl").read_bytes()
    with pytest.raises(ValueError, match="direction='c2s'"):
        read_stdio(data, "c2s.jsonl")
    with pytest.raises(ValueError, match="expected 'c2s' or 's2c'"):
        read_stdio(data, "c2s.jsonl", direction="stdin")
    with pytest.raises(ValueError, match="names each line's direction"):
        read_stdio((TIME / "transcript.jsonl").read_bytes(), "t.jsonl", direction="c2s")


# --- goose replays ------------------------------------------------------------------------------


@pytest.mark.parametrize("path", GOOSE, ids=lambda p: p.name[:30])
def test_goose_replay(path: Path) -> None:
    data = path.read_bytes()
    assert sniff_stdio(data) == "stdio-goose"
    lines = only_lines(lines_of(data, path.name))
    out = pair(lines)
    xs = exchanges(out)
    requests = [x for x in xs if x.extras["kind"] == "request"]
    assert requests and all(x.complete for x in requests)
    assert all(msg(x, "request")["id"] == msg(x, "response")["id"] for x in requests)
    assert {x.extras["direction"] for x in xs} <= {"c2s", "s2c"}
    # exchanges come in the order of their request lines
    firsts = [int(str(x.extras["request_line"]).rsplit(" ", 1)[1]) for x in xs]
    assert firsts == sorted(firsts)
    stderr = [d for d in diagnostics(out) if d.code == "stdio.stderr"]
    count = sum(ln.direction == "stderr" for ln in lines)
    assert len(stderr) == (1 if count else 0)
    assert all(d.severity == "info" for d in stderr)
    assert all(d.message.startswith(f"{count} stderr line(s)") for d in stderr)
    assert [d for d in diagnostics(out) if d.code != "stdio.stderr"] == []


def test_goose_everything_server() -> None:
    (path,) = [p for p in GOOSE if "server-everything" in p.name]
    out = pair(only_lines(lines_of(path.read_bytes(), path.name)))
    xs = exchanges(out)
    (sampling,) = [x for x in xs if x.request and x.request.method == "sampling/createMessage"]
    assert sampling.extras["direction"] == "s2c" and sampling.complete
    assert msg(sampling, "response")["result"]["model"] == "mock"
    # id 0 is used by both sides: the client's initialize and the server's sampling request
    (init,) = [x for x in xs if x.request and x.request.method == "initialize"]
    assert msg(init, "request")["id"] == msg(sampling, "request")["id"] == 0
    assert "protocolVersion" in msg(init, "response")["result"]
    # the tool call that triggered sampling is answered after the sampling round trip
    trigger = next(x for x in xs if "trigger-sampling" in str(msg(x, "request").get("params")))
    assert trigger.complete and xs.index(trigger) < xs.index(sampling)
    progress = [x for x in xs if x.request and x.request.method == "notifications/progress"]
    assert len(progress) == 5 and all(x.extras["kind"] == "notification" for x in progress)
    assert all(x.extras["direction"] == "s2c" and x.response is None for x in progress)
    (stderr,) = diagnostics(out)
    assert "Starting default (STDIO) server..." in stderr.message


def test_goose_line_forms() -> None:
    data = b"STDERR:\nSTDIN:" + rpc(id=1, method="ping") + b"\nSTDOUT: " + rpc(id=1, result={})
    lines = only_lines(lines_of(data))
    assert [(ln.direction, ln.data[:1]) for ln in lines] == [
        ("stderr", b""),
        ("c2s", b"{"),
        ("s2c", b"{"),
    ]


# --- sniffing -----------------------------------------------------------------------------------


def test_sniff_other_inputs() -> None:
    assert sniff_stdio((DOCUMENTS / "chat_and_ws.har").read_bytes()) is None
    assert (
        sniff_stdio(orjson.dumps(orjson.loads((DOCUMENTS / "chat_and_ws.har").read_bytes())))
        is None
    )
    assert sniff_stdio((DOCUMENTS / "openai_gzip.yaml").read_bytes()) is None
    assert sniff_stdio((DOCUMENTS / "cassette.json").read_bytes()) is None
    assert sniff_stdio((TIME / "truth.json").read_bytes()) is None
    chunks = b'{"id":"c1","choices":[{"delta":{"content":"Hi"}}]}\n{"id":"c1","choices":[]}\n'
    assert sniff_stdio(chunks) is None
    assert sniff_stdio(bytes(range(256)) * 4) is None
    assert sniff_stdio(b"") is None and sniff_stdio(b"\n \r\n") is None
    assert sniff_stdio(b"STDIN is where it starts\n") is None


def test_sniff_tolerates_a_bad_first_line() -> None:
    good = rpc(id=1, method="ping") + b"\n"
    assert sniff_stdio(b"{garbled\n" + good * 3) == "stdio-jsonrpc"
    assert sniff_stdio(b"{garbled\n" + good) == "stdio-jsonrpc"  # all lines but one
    assert sniff_stdio(b"{garbled\n" * 2 + good) is None  # neither most nor all but one
    assert sniff_stdio(b"{garbled\n" * 2 + good * 2) is None
    assert sniff_stdio(b"\xef\xbb\xbf" + good) == "stdio-jsonrpc"
    assert sniff_stdio(b"[" + rpc(id=1, method="a") + b"]\n") == "stdio-jsonrpc"


def test_unknown_input_is_one_diagnostic() -> None:
    (d,) = lines_of(b"hello\nworld\n", "notes.txt")
    assert (
        isinstance(d, Diagnostic) and d.code == "stdio.unknown_format" and d.location == "notes.txt"
    )


# --- bad lines and line endings -----------------------------------------------------------------


def test_malformed_lines_are_diagnosed_and_reading_continues() -> None:
    good = rpc(id=1, method="ping")
    data = b"\n".join(
        [
            good,
            b"{not json",
            b'{"jsonrpc":"1.0","id":2,"method":"x"}',
            b"[]",
            b'{"jsonrpc":"2.0","id":3}',
            b"  ",
            rpc(id=4, method="tools/list"),
        ]
    )
    out = lines_of(data, "c.jsonl", "c2s")
    assert [type(o).__name__ for o in out] == ["StdioLine"] + ["Diagnostic"] * 4 + ["StdioLine"]
    bad = diagnostics(out)
    assert [d.location for d in bad] == [f"c.jsonl line {n}" for n in (2, 3, 4, 5)]
    assert all(d.code == "stdio.bad_line" and d.severity == "warning" for d in bad)
    assert "is not JSON" in bad[0].message and "expected a JSON-RPC 2.0 message" in bad[0].message
    assert "not a JSON-RPC 2.0 message" in bad[1].message
    assert out[-1].where == "c.jsonl line 7"


def test_malformed_merged_records() -> None:
    ok = {"seq": 1, "t": 1.5, "dir": "c2s", "line": rpc(id=1, method="ping").decode()}
    rows = [
        ok,
        ok,
        ok,
        {**ok, "dir": "up"},
        {**ok, "t": "noon"},
        {"seq": 3, "t": 2.0, "dir": "s2c"},
        [1, 2],
        {**ok, "line": "not json"},
        {**ok, "dir": "stderr", "line": "plain log"},
    ]
    data = b"\n".join(orjson.dumps(r) for r in rows) + b"\nSTDIN: x\n"
    out = lines_of(data, "m.jsonl")
    assert [o.code if isinstance(o, Diagnostic) else o.direction for o in out] == [
        *["c2s"] * 3,
        *["stdio.bad_line"] * 5,
        "stderr",
        "stdio.bad_line",
    ]
    messages = [d.message for d in diagnostics(out)]
    assert "\"dir\" 'up'" in messages[0] and "\"t\" 'noon'" in messages[1]
    assert 'neither "line"' in messages[2] and "JSON array" in messages[3]


def test_unknown_goose_prefix() -> None:
    data = b"STDIN: " + rpc(id=1, method="ping") + b"\nSTDOUT: " + rpc(id=1, result={}) + b"\n"
    data += b"STDIN: " + rpc(id=2, method="ping") + b"\nLOG: hello\nSTDOUT: " + rpc(id=2, result={})
    out = lines_of(data, "g")
    (d,) = diagnostics(out)
    assert d.location == "g line 4" and "STDIN:, STDOUT: or STDERR:" in d.message
    assert len(out) == 5 and all(x.complete for x in exchanges(pair(only_lines(out[:3] + out[4:]))))


def test_crlf_and_missing_final_newline() -> None:
    lf = b"\n".join([rpc(id=1, method="ping"), b"", rpc(method="notifications/x")]) + b"\n"
    crlf = lf.replace(b"\n", b"\r\n")
    unterminated = crlf.removesuffix(b"\r\n")
    expected = only_lines(lines_of(lf, "f", "c2s"))
    assert [ln.where for ln in expected] == ["f line 1", "f line 3"]
    for variant in (crlf, unterminated, b"\xef\xbb\xbf" + lf):
        assert only_lines(lines_of(variant, "f", "c2s")) == expected


def test_very_long_line() -> None:
    big = rpc(id=1, method="tools/call", params={"text": "x" * 5_000_000})
    (ln,) = only_lines(lines_of(big + b"\n", "big", "c2s"))
    assert ln.data == big


# --- pairing ------------------------------------------------------------------------------------


def test_orphan_response_and_unanswered_request() -> None:
    lines = [
        line("s2c", rpc(id=9, result={}), 1, 1.0),
        line("c2s", rpc(id=1, method="tools/list"), 2, 2.0),
        line("c2s", rpc(id=2, method="ping"), 3, 3.0),
        line("s2c", rpc(id=2, result={}), 4, 4.0),
    ]
    out = pair(lines)
    assert [type(o).__name__ for o in out] == ["Exchange", "Diagnostic", "Exchange", "Exchange"]
    orphan, d, unanswered, ping = out
    assert isinstance(orphan, Exchange) and isinstance(d, Diagnostic)
    assert orphan.request is None and orphan.response is not None and not orphan.complete
    assert orphan.extras == {
        "kind": "orphan_response",
        "direction": "c2s",
        "response_line": "t line 1",
    }
    assert (d.code, d.severity, d.location) == ("stdio.orphan_response", "warning", "t line 1")
    assert "answers id 9" in d.message
    # the unanswered request holds back the answered one, then both come in request order
    assert isinstance(unanswered, Exchange) and isinstance(ping, Exchange)
    assert unanswered.response is None and not unanswered.complete
    assert unanswered.request is not None and unanswered.request.complete
    assert "response_line" not in unanswered.extras
    assert ping.complete and [orphan.id, unanswered.id, ping.id] == ["s1", "s2", "s3"]


def test_exchanges_are_yielded_as_soon_as_the_earliest_is_answered() -> None:
    ids = itertools.count(1)
    gen = stdio_exchanges(
        iter_lines := iter(
            [
                line("c2s", rpc(id=1, method="a"), 1),
                line("c2s", rpc(id=2, method="b"), 2),
                line("s2c", rpc(id=2, result={}), 3),
                line("s2c", rpc(id=1, result={}), 4),
                line("c2s", rpc(id=3, method="c"), 5),
            ]
        ),
        source=0,
        connection="c",
        url=URL,
        next_id=lambda: f"s{next(ids)}",
    )
    first = next(gen)
    # "a" could only come out once line 4 (its answer) was read
    assert isinstance(first, Exchange) and first.request and first.request.method == "a"
    assert next(iter_lines).where == "t line 5"


def test_ids_compare_as_json_values() -> None:
    out = pair(
        [
            line("c2s", rpc(id=1, method="a"), 1),
            line("c2s", rpc(id="1", method="b"), 2),
            line("s2c", rpc(id="1", result={"for": "b"}), 3),
            line("s2c", rpc(id=1, error={"code": -1, "message": "for a"}), 4),
        ]
    )
    a, b = exchanges(out)
    assert msg(a, "response")["error"]["message"] == "for a"
    assert msg(b, "response")["result"] == {"for": "b"}
    assert diagnostics(out) == []


def test_a_response_in_the_same_direction_does_not_answer() -> None:
    out = pair([line("c2s", rpc(id=1, method="a"), 1), line("c2s", rpc(id=1, result={}), 2)])
    assert [o.code for o in diagnostics(out)] == ["stdio.orphan_response"]
    assert all(not x.complete for x in exchanges(out))


def test_batches() -> None:
    batch = (
        b"[" + rpc(id=1, method="a") + b"," + rpc(method="n") + b"," + rpc(id=2, method="b") + b"]"
    )
    answer = b"[" + rpc(id=2, result={}) + b"," + rpc(id=1, result={}) + b"]"
    out = pair(
        [line("c2s", batch, 1), line("s2c", rpc(id=5, method="x"), 2), line("s2c", answer, 3)]
    )
    x, server_request = exchanges(out)
    assert x.extras["kind"] == "batch" and x.request is not None and x.request.method == "a"
    assert x.complete and x.response is not None and x.response.body.data() == answer
    assert not server_request.complete and diagnostics(out) == []
    twice = b"[" + rpc(id=1, method="a") + b"," + rpc(id=1, method="b") + b"]"
    (t,) = exchanges(pair([line("c2s", twice, 1), line("s2c", rpc(id=1, result={}), 2)]))
    assert t.complete
    notes = b"[" + rpc(method="n1") + b"," + rpc(method="n2") + b"]"
    (n,) = pair([line("c2s", notes, 1)])
    assert isinstance(n, Exchange) and n.extras["kind"] == "batch" and n.response is None


def test_bad_and_duplicate_ids() -> None:
    out = pair(
        [
            line("c2s", rpc(id=None, method="a"), 1),
            line("c2s", rpc(id=7, method="b"), 2),
            line("c2s", rpc(id=7, method="c"), 3),
            line("s2c", rpc(id=7, result={"n": 1}), 4),
            line("s2c", rpc(id=7, result={"n": 2}), 5),
        ]
    )
    a, b, c = exchanges(out)
    assert [d.code for d in a.diagnostics] == ["stdio.bad_id"] and a.response is None
    assert [d.code for d in c.diagnostics] == ["stdio.duplicate_id"]
    assert msg(b, "response")["result"] == {"n": 1} and msg(c, "response")["result"] == {"n": 2}


def test_stray_lines_given_to_pairing() -> None:
    out = pair(
        [
            line("up", rpc(id=1, method="a"), 1),
            line("c2s", b"nope", 2),
            line("stderr", b"x" * 300, 3),
        ]
    )
    codes = [d.code for d in diagnostics(out)]
    assert codes == ["stdio.bad_line", "stdio.bad_line", "stdio.stderr"]
    stderr = diagnostics(out)[-1]
    assert stderr.location == "t line 3" and "x" * 200 + "..." in stderr.message


# --- fuzz ---------------------------------------------------------------------------------------

_ids = st.one_of(st.integers(0, 2), st.sampled_from(["1", "a"]), st.none(), st.booleans())
_messages = st.one_of(
    st.builds(
        lambda i, m: {"jsonrpc": "2.0", "id": i, "method": m}, _ids, st.sampled_from(["a", "b"])
    ),
    st.builds(lambda m: {"jsonrpc": "2.0", "method": m}, st.sampled_from(["n"])),
    st.builds(lambda i: {"jsonrpc": "2.0", "id": i, "result": {}}, _ids),
    st.builds(lambda i: {"jsonrpc": "2.0", "id": i, "error": {"code": 1}}, _ids),
)
_payloads = st.one_of(
    _messages.map(orjson.dumps),
    st.lists(_messages, max_size=3).map(orjson.dumps),
    st.binary(max_size=40),
)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400))
def test_fuzz_read_stdio(data: bytes) -> None:
    for variant in (data, b"STDIN: " + data, b'{"dir":"c2s","line":' + data):
        fmt = sniff_stdio(variant)
        direction = "c2s" if fmt in (None, "stdio-jsonrpc") else None
        out = lines_of(variant, "f", direction)
        assert all(isinstance(o, StdioLine | Diagnostic) for o in out)
        lines = [o for o in out if isinstance(o, StdioLine)]
        assert all(isinstance(o, Exchange | Diagnostic) for o in pair(lines))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["c2s", "s2c", "stderr", "?"]), _payloads), max_size=12))
def test_fuzz_pairing(items: list[tuple[str, bytes]]) -> None:
    lines = [line(d, p, n) for n, (d, p) in enumerate(items, 1)]
    out = pair(lines)
    assert all(isinstance(o, Exchange | Diagnostic) for o in out)
    xs = exchanges(out)
    assert [x.id for x in xs] == [f"s{i}" for i in range(1, len(xs) + 1)]
    asked = [x.extras["request_line"] for x in xs if x.request is not None]
    assert len(asked) == len(set(asked))  # one exchange per request line
    answered = [x.extras["response_line"] for x in xs if "response_line" in x.extras]
    assert len(answered) == len(set(answered))  # an answer is used once


def test_a_line_not_utf8_is_read_with_a_diagnostic() -> None:
    spoiled = rpc(id=1, method="tools/call", params={"name": "x@"}).replace(b"@", b"\xff")
    out = lines_of(spoiled + b"\n" + rpc(id=2, method="ping") + b"\n", "c2s.jsonl", "c2s")
    said, first, second = out
    assert isinstance(said, Diagnostic) and said.code == "stdio.invalid_utf8"
    offset = spoiled.index(b"\xff")
    assert said.location == "c2s.jsonl line 1" and f"at byte {offset}" in said.message
    assert isinstance(first, StdioLine) and first.data == spoiled  # the bytes as written
    assert isinstance(second, StdioLine)
