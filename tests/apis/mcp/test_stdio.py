"""MCP over stdio through the whole pipeline: the merged transcript and its two one-direction
files against the client's own record (truth.json), goose replays with sampling and
progress, and files of one direction without their partner."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest

from agentshark.apis.model import Call, ToolCallPart, ToolCallResponsePart
from agentshark.pipeline import Options, SourceReport
from agentshark.pipeline.stdio import interleave
from agentshark.sources.stdio import StdioLine
from tests.helpers import CAPTURES, CORPUS, Collected

STDIO = CAPTURES / "mcp_stdio_time"
GOOSE = CORPUS / "block__goose/crates/goose/tests/mcp_replays"
EVERYTHING = GOOSE / "npx-y@modelcontextprotocol_server-everything@2026.1.14"

needs_stdio = pytest.mark.skipif(not STDIO.exists(), reason="shared captures absent")
needs_goose = pytest.mark.skipif(not GOOSE.exists(), reason="shared corpus absent")


def calls_of(*paths: Path) -> tuple[list[Call], list[SourceReport]]:
    collected = Collected([str(p) for p in paths], Options(calls=True))
    return collected.calls, collected.sources


def check_truth(calls: list[Call], timed: bool) -> None:
    truth = json.loads((STDIO / "truth.json").read_text())
    requests = [c for c in calls if "jsonrpc_id" in c.ids]
    assert [int(c.ids["jsonrpc_id"]) for c in requests] == [
        t["id"] for t in truth["jsonrpc"]["calls"]
    ]
    for call, expected in zip(requests, truth["jsonrpc"]["calls"], strict=True):
        assert call.api == "mcp" and call.operation == expected["method"]
        assert call.complete and call.extras["mcp_transport"] == "stdio"
        assert (call.timing.started is not None) == timed
        if expected["outcome"] == "jsonrpc_error":
            assert call.error is not None
            assert call.error.code == str(expected["error_code"])
            assert call.error.message == expected["error_message"]
            continue
        assert call.error is None
        if expected["method"] == "initialize":
            assert call.ids["mcp_protocol_version"] == expected["protocol_version"]
            assert call.extras["server_info"] == expected["server_info"]
        if expected["method"] == "tools/list":
            assert [t["name"] for t in call.tool_definitions] == expected["tools"]
        if expected["method"] == "tools/call":
            (asked,) = call.input_messages[0].parts
            assert isinstance(asked, ToolCallPart)
            assert (asked.name, asked.arguments) == (expected["tool"], expected["arguments"])
            answer = call.output_messages[0].parts[0]
            assert isinstance(answer, ToolCallResponsePart)
            assert bool(answer.provider_details.get("is_error")) == expected["is_error"]
    notes = [c.operation for c in calls if "jsonrpc_id" not in c.ids]
    sent = truth["jsonrpc"]["notifications_sent"]
    assert notes == sent


@needs_stdio
def test_merged_transcript_matches_truth() -> None:
    calls, sources = calls_of(STDIO / "transcript.jsonl")
    check_truth(calls, timed=True)
    assert sources[0].format == "stdio" and sources[0].exchanges == len(calls)
    client = [
        json.loads(line) for line in (STDIO / "client_messages.jsonl").read_text().splitlines()
    ]
    started = {c.ids.get("jsonrpc_id"): c.timing.started for c in calls}
    # the tee's times are the wire's; the client logs its own a little before or after
    for record in client:
        msg = record["msg"]
        if record["dir"] == "send" and "id" in msg:
            assert abs(started[str(msg["id"])] - record["t"]) < 0.5


@needs_stdio
def test_one_file_per_direction_is_one_session() -> None:
    calls, sources = calls_of(STDIO / "c2s.jsonl", STDIO / "s2c.jsonl")
    check_truth(calls, timed=False)
    assert [s.format for s in sources] == ["stdio", "stdio"]
    assert {c.exchange_id for c in calls} and len({id(c) for c in calls}) == len(calls)
    directions = [d.message for s in sources for d in s.diagnostics if d.code == "stdio.direction"]
    assert len(directions) == 2 and "its file name" in directions[0]


@needs_stdio
def test_direction_from_content(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_bytes((STDIO / "s2c.jsonl").read_bytes())
    (tmp_path / "b.jsonl").write_bytes((STDIO / "c2s.jsonl").read_bytes())
    calls, sources = calls_of(tmp_path / "a.jsonl", tmp_path / "b.jsonl")
    check_truth(calls, timed=False)
    why = [d.message for s in sources for d in s.diagnostics if d.code == "stdio.direction"]
    assert "answers initialize" in why[0] and "sends initialize" in why[1]


@needs_stdio
def test_one_direction_alone_is_said() -> None:
    calls, sources = calls_of(STDIO / "c2s.jsonl")
    assert [d.code for d in sources[0].diagnostics] == ["stdio.direction", "stdio.one_direction"]
    requests = [c for c in calls if "jsonrpc_id" in c.ids]
    assert len(requests) == 9 and not any(c.complete for c in requests)
    assert {d.code for c in requests for d in c.diagnostics} == {"mcp.no_response"}


@needs_goose
def test_goose_replays_parse_completely() -> None:
    for path in sorted(GOOSE.iterdir()):
        calls, sources = calls_of(path)
        assert sources[0].format == "stdio"
        assert calls and all(c.api == "mcp" and c.complete for c in calls), path.name
        assert not [d for c in calls for d in c.diagnostics], path.name
        lines = [line for line in path.read_text().splitlines() if not line.startswith("STDERR")]
        requests = sum(1 for line in lines if '"method"' in line)
        assert len(calls) == requests, path.name


@needs_goose
def test_goose_sampling_and_progress() -> None:
    calls, _ = calls_of(EVERYTHING)
    sampling = [c for c in calls if c.operation == "sampling/createMessage"]
    assert len(sampling) == 1
    (call,) = sampling
    assert call.extras["direction"] == "server_to_client" and call.complete
    assert call.ids["jsonrpc_id"] == "0"
    assert call.extras["result"]["model"] == "mock"
    initialize = next(c for c in calls if c.operation == "initialize")
    assert initialize.ids["jsonrpc_id"] == "0"  # the same id, the other direction
    assert "direction" not in initialize.extras
    progress = [c for c in calls if c.operation == "notifications/progress"]
    assert len(progress) == 5
    assert all("progressToken" in c.request_params for c in progress)
    tool = next(c for c in calls if c.ids.get("mcp_progress_token") == "1")
    assert tool.operation == "tools/call"


def line(direction: str, message: dict[str, Any]) -> StdioLine:
    return StdioLine(direction=direction, data=orjson.dumps(message), ts=None, where="x")


def test_interleave_puts_answers_after_their_requests() -> None:
    c2s = [
        line("c2s", {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}),
        line("c2s", {"jsonrpc": "2.0", "id": 9, "result": {}}),  # answers the server's 9
        line("c2s", {"jsonrpc": "2.0", "id": 2, "method": "ping"}),
    ]
    s2c = [
        line("s2c", {"jsonrpc": "2.0", "id": 9, "method": "sampling/createMessage"}),
        line("s2c", {"jsonrpc": "2.0", "id": 1, "result": {}}),
        line("s2c", {"jsonrpc": "2.0", "id": 2, "result": {}}),
    ]
    order = [(x.direction, orjson.loads(x.data).get("method")) for x in interleave(c2s, s2c)]
    assert order == [
        ("c2s", "tools/call"),
        ("s2c", "sampling/createMessage"),
        ("c2s", None),
        ("c2s", "ping"),
        ("s2c", None),
        ("s2c", None),
    ]


# -- one bad line costs that line, not the file ------------------------------------------------


def _spoil(data: bytes, line_no: int, old: bytes, new: bytes) -> bytes:
    """``data`` with the first ``old`` of its line ``line_no`` (1-based) replaced by ``new``."""
    lines = data.split(b"\n")
    assert old in lines[line_no - 1], (line_no, old)
    lines[line_no - 1] = lines[line_no - 1].replace(old, new, 1)
    return b"\n".join(lines)


def _summary(calls: list[Call]) -> list[tuple[str | None, str | None, bool]]:
    return [(c.operation, c.ids.get("jsonrpc_id"), c.complete) for c in calls]


# (file or files, the line spoiled, text in it a 0xFF byte goes after)
_ONE_BYTE = [
    ("merged", (STDIO / "transcript.jsonl",), 8, b"Europe/Par"),
    ("one-direction", (STDIO / "c2s.jsonl", STDIO / "s2c.jsonl"), 5, b"Europe/Par"),
    ("goose", (EVERYTHING,), 9, b'"name":"'),
]


@needs_stdio
@needs_goose
@pytest.mark.parametrize(
    ("layout", "paths", "line_no", "after"), _ONE_BYTE, ids=[c[0] for c in _ONE_BYTE]
)
def test_a_byte_not_utf8_keeps_its_line(
    tmp_path: Path, layout: str, paths: tuple[Path, ...], line_no: int, after: bytes
) -> None:
    clean, _ = calls_of(*paths)
    spoiled = [tmp_path / p.name for p in paths]
    for src, dst in zip(paths, spoiled, strict=True):
        data = src.read_bytes()
        if src == paths[0]:
            data = _spoil(data, line_no, after, after + b"\xff")
        dst.write_bytes(data)
    calls, sources = calls_of(*spoiled)
    assert _summary(calls) == _summary(clean), layout
    (said,) = [d for s in sources for d in s.diagnostics if d.code == "stdio.invalid_utf8"]
    assert said.location == f"{spoiled[0]} line {line_no}"
    (call,) = [c for c in calls if "\ufffd" in orjson.dumps(c.input_messages[:1]).decode()]
    assert call.operation == "tools/call" and call.complete
    (asked,) = [p for p in call.input_messages[0].parts if isinstance(p, ToolCallPart)]
    assert "\ufffd" in orjson.dumps([asked.arguments, asked.name]).decode()
    # a merged record's "line" is text: the replaced line is UTF-8; the other layouts keep
    # the bytes as written, and the call says where its body is not UTF-8
    body = [d.code for d in call.diagnostics if d.code == "body.invalid_utf8"]
    assert body == ([] if layout == "merged" else ["body.invalid_utf8"])


@needs_stdio
@needs_goose
@pytest.mark.parametrize(
    ("layout", "paths", "line_no", "after"), _ONE_BYTE, ids=[c[0] for c in _ONE_BYTE]
)
def test_a_garbled_line_costs_that_line(
    tmp_path: Path, layout: str, paths: tuple[Path, ...], line_no: int, after: bytes
) -> None:
    clean, _ = calls_of(*paths)
    spoiled = [tmp_path / p.name for p in paths]
    for src, dst in zip(paths, spoiled, strict=True):
        lines = src.read_bytes().split(b"\n")
        if src == paths[0]:
            lines[line_no - 1] = lines[line_no - 1][: lines[line_no - 1].index(after)]
        dst.write_bytes(b"\n".join(lines))
    calls, sources = calls_of(*spoiled)
    (bad,) = [d for s in sources for d in s.diagnostics if d.code == "stdio.bad_line"]
    assert bad.location == f"{spoiled[0]} line {line_no}"
    lost = [c for c in _summary(clean) if c not in _summary(calls)]
    assert len(lost) == 1 and lost[0][0] == "tools/call", layout  # the request spoiled
    orphans = [d for s in sources for d in s.diagnostics if d.code == "stdio.orphan_response"]
    assert len(orphans) == 1  # its answer stays, an exchange with no request


@needs_goose
def test_a_bad_byte_at_the_very_start_keeps_the_file(tmp_path: Path) -> None:
    path = tmp_path / EVERYTHING.name
    path.write_bytes(_spoil(EVERYTHING.read_bytes(), 1, b'"initialize', b'"init\xff'))
    calls, sources = calls_of(path)
    clean, _ = calls_of(EVERYTHING)
    assert sources[0].format == "stdio" and len(calls) == len(clean)
    assert calls[0].operation == "init\ufffd" and calls[0].complete


@needs_stdio
def test_two_lines_one_garbled_is_still_a_transcript(tmp_path: Path) -> None:
    first, second = (STDIO / "transcript.jsonl").read_bytes().split(b"\n")[:2]
    path = tmp_path / "two.jsonl"
    path.write_bytes(first + b"\n" + second[: len(second) // 2] + b"\n")
    calls, sources = calls_of(path)
    assert sources[0].format == "stdio"
    assert _summary(calls) == [("initialize", "1", False)]
    assert [d.code for d in sources[0].diagnostics] == ["stdio.bad_line"]
