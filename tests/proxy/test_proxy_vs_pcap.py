"""The proxy's recording against a loopback capture of the same run
(``tests/data/captures/proxy_sdk_run``, made by ``scripts/make_proxy_captures.py``: the real
openai, anthropic and google-genai SDKs through ``agentshark proxy`` to local HTTPS
upstreams, tcpdump on ``lo`` at the same time).

Three readings of one run: ``recording.har`` (the proxy's ``-w``), ``capture.pcap`` (the
proxy's TLS connections to the upstreams, decrypted with its ``--keylog``) and
``client.pcap`` (the SDKs' plain HTTP to the proxy). Their calls must be the same calls:
messages, tool calls, usage, finish reasons, ids, models, streams and chunk counts. The
fields that differ, and why, are listed below exactly: a field that differs and is not
listed fails, and so does a listed one that no longer differs.

Oracles besides the pcaps: what each SDK returned to its caller (``run.json``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import agentshark
from tests.helpers import ROOT

RUN = ROOT / "tests" / "data" / "captures" / "proxy_sdk_run"

# Call fields that differ between the HAR and the upstream capture, and why.
CALL_DIFFERS_UPSTREAM = {
    # The proxy stamps a message when mitmproxy reads it, the capture when the packet passed
    # lo: the request's start is the client's request reaching the proxy (before the proxy
    # connected upstream), the response's times are the proxy's reads. Chunk counts agree.
    "timing": "the proxy's clock vs packet times",
    # The openai SDK closes its stream at `data: [DONE]` (call2): the client went away before
    # the proxy read the upstream's chunked terminator, so mitmproxy ended the flow in an
    # error ("Client disconnected") with no end of the response: no evidence it was whole.
    # The upstream's capture has the terminator. (The client's capture agrees with the HAR.)
    "complete": "a client that hung up before the proxy saw the response's end",
}
# ... and between the HAR and the client's capture.
CALL_DIFFERS_CLIENT = {
    "timing": "the proxy's clock vs packet times (the client's side of the proxy)",
    # The provider is named from the URL: the HAR holds the request the proxy sent upstream
    # (https://127.0.0.1:PORT/v1/...), the client's capture the one the SDK sent
    # (http://127.0.0.1:PORT/openai/v1/...), whose route prefix names it.
    "provider": "the URL upstream vs the URL with the route's prefix",
}
# Exchange fields: the same reasons, and what a HAR has no place for.
EXCHANGE_DIFFERS = {
    "connection": "named per source: p1... (the proxy's client connections) vs c1...",
    "stream": "an HTTP/1 exchange's place on its connection: a capture knows it, a HAR not",
    "tls": "the upstream session's TLS (version, cipher, client random): not in a HAR",
    "request": "times (and for the client: the URL, target and Host the proxy rewrote)",
    "response": "times, transfer_bytes (a HAR body has no chunked framing), complete",
    "diagnostics": "mitm.flow_error of the flow whose client hung up",
    "complete": "the same flow",
}
REQUEST_DIFFERS = {"started", "ended"}
REQUEST_DIFFERS_CLIENT = {"started", "ended", "url", "target", "headers"}
RESPONSE_DIFFERS = {"first_byte", "ended", "transfer_bytes", "complete"}
RESPONSE_DIFFERS_CLIENT = {"first_byte", "ended", "transfer_bytes"}


def _report(*paths: Path, keylogs: tuple[Path, ...] = ()) -> dict[str, Any]:
    report = agentshark.analyze(list(paths), keylogs=keylogs, redact=False)
    data: dict[str, Any] = report.to_json()
    return data


@pytest.fixture(scope="module")
def readings() -> dict[str, dict[str, Any]]:
    return {
        "har": _report(RUN / "recording.har"),
        "upstream": _report(RUN / "capture.pcap", keylogs=(RUN / "keylog.txt",)),
        "client": _report(RUN / "client.pcap"),
    }


def _differing(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> set[str]:
    assert len(a) == len(b)
    return {
        k for x, y in zip(a, b, strict=True) for k in x.keys() | y.keys() if x.get(k) != y.get(k)
    }


def _unknown(timing: dict[str, Any]) -> set[str]:
    """The times a call's timing does not know (its end aside: the cut call has none)."""
    return {k for k, v in timing.items() if v is None} - {"ended"}


def _without(call: dict[str, Any], fields: set[str]) -> dict[str, Any]:
    return {k: v for k, v in call.items() if k not in fields}


def test_the_run_is_all_there(readings: dict[str, dict[str, Any]]) -> None:
    run = json.loads((RUN / "run.json").read_text())
    assert run["proxy_exit"] == 0 and all(run["capture_complete"].values())
    for reading in readings.values():
        assert [c["api"] for c in reading["calls"]] == [
            *["openai.chat"] * 3,
            *["openai.responses"] * 2,
            *["anthropic.messages"] * 3,
            *["gemini.generate_content"] * 3,
        ]
        assert len(reading["exchanges"]) == 11
        assert not [d for s in reading["sources"] for d in s["diagnostics"]]


@pytest.mark.parametrize(
    ("other", "differs"),
    [("upstream", CALL_DIFFERS_UPSTREAM), ("client", CALL_DIFFERS_CLIENT)],
)
def test_the_har_and_the_capture_give_the_same_calls(
    readings: dict[str, dict[str, Any]], other: str, differs: dict[str, str]
) -> None:
    har, pcap = readings["har"]["calls"], readings[other]["calls"]
    assert _differing(har, pcap) == set(differs)
    for a, b in zip(har, pcap, strict=True):
        assert _without(a, set(differs)) == _without(b, set(differs))
        # the timing's structure is the same: chunk counts, and which times are known
        assert a["timing"].get("chunks") == b["timing"].get("chunks")
        assert _unknown(a["timing"]) == _unknown(b["timing"])


def test_the_only_call_the_har_says_incomplete_is_the_one_whose_client_hung_up(
    readings: dict[str, dict[str, Any]],
) -> None:
    har, up, client = (readings[n] for n in ("har", "upstream", "client"))
    cut = [c for c in har["calls"] if not c["complete"]]
    assert [c["id"] for c in cut] == ["call2"]
    (exchange,) = [e for e in har["exchanges"] if e["id"] == cut[0]["exchange_id"]]
    assert [d["message"] for d in exchange["diagnostics"]] == [
        "flow 2 ended in an error: Client disconnected."
    ]
    assert [c["id"] for c in up["calls"] if not c["complete"]] == []
    assert [c["id"] for c in client["calls"] if not c["complete"]] == ["call2"]
    # every body byte was recorded all the same: the stream's text and its [DONE]
    (wire,) = [e for e in up["exchanges"] if e["id"] == exchange["id"]]
    assert exchange["response"]["body_bytes"] == wire["response"]["body_bytes"]
    assert cut[0]["finish_reasons"] == ["stop"]


@pytest.mark.parametrize(
    ("other", "request_differs", "response_differs"),
    [
        ("upstream", REQUEST_DIFFERS, RESPONSE_DIFFERS),
        ("client", REQUEST_DIFFERS_CLIENT, RESPONSE_DIFFERS_CLIENT),
    ],
)
def test_the_exchanges_differ_only_where_said(
    readings: dict[str, dict[str, Any]],
    other: str,
    request_differs: set[str],
    response_differs: set[str],
) -> None:
    har, pcap = readings["har"]["exchanges"], readings[other]["exchanges"]
    # the client's side has no TLS, and its capture too says the cut response incomplete
    expected = set(EXCHANGE_DIFFERS) - ({"tls", "complete"} if other == "client" else set())
    assert _differing(har, pcap) == expected
    assert _differing([e["request"] for e in har], [e["request"] for e in pcap]) == request_differs
    assert (
        _differing([e["response"] for e in har], [e["response"] for e in pcap]) == response_differs
    )
    for a, b in zip(har, pcap, strict=True):
        assert a["response"]["body_bytes"] == b["response"]["body_bytes"]
        assert a["response"]["headers"] == b["response"]["headers"]
        if other == "upstream":  # what the proxy sent upstream, header for header
            assert a["request"]["headers"] == b["request"]["headers"]
            assert b["tls"]["version"] == "TLS 1.3"


def test_the_calls_hold_what_the_sdks_returned(readings: dict[str, dict[str, Any]]) -> None:
    sdks = json.loads((RUN / "run.json").read_text())["sdks"]
    calls = readings["har"]["calls"]
    oa, an, ge = sdks["openai"], sdks["anthropic"], sdks["gemini"]
    chat, chat_stream, tools, responses, responses_stream = calls[:5]
    assert (chat["response_id"], _text(chat)) == (oa["chat"]["id"], oa["chat"]["text"])
    assert [chat["usage"]["input_tokens"], chat["usage"]["output_tokens"]] == oa["chat"]["usage"]
    assert chat["finish_reasons"] == [oa["chat"]["finish_reason"]]
    assert _text(chat_stream) == oa["chat_stream"]["text"]
    assert tools["finish_reasons"] == [oa["tools"]["finish_reason"]]
    assert _tool_calls(tools) == [oa["tools"]["tool_call"]]
    assert (responses["response_id"], _text(responses)) == (
        oa["responses"]["id"],
        oa["responses"]["text"],
    )
    assert responses_stream["response_id"] == oa["responses_stream"]["id"]
    message, stream, used = calls[5:8]
    assert (message["response_id"], _text(message)) == (an["message"]["id"], an["message"]["text"])
    assert message["finish_reasons"] == [an["message"]["stop_reason"]]
    assert [message["usage"]["input_tokens"], message["usage"]["output_tokens"]] == an["message"][
        "usage"
    ]
    assert (stream["response_id"], _text(stream)) == (an["stream"]["id"], an["stream"]["text"])
    assert stream["finish_reasons"] == [an["stream"]["stop_reason"]]
    assert used["finish_reasons"] == [an["tools"]["stop_reason"]]
    assert _tool_calls(used) == [an["tools"]["tool_use"]]
    first, second, streamed = calls[8:]
    assert [_tool_calls(first, ids=False), _tool_calls(second, ids=False)] == [
        g["function_calls"] for g in ge["generate"]
    ]
    assert _tool_calls(streamed, ids=False) == ge["stream"]["function_calls"]
    assert streamed["stream"] and streamed["timing"]["chunks"] == ge["stream"]["chunks"]


def _text(call: dict[str, Any]) -> str:
    return "".join(
        p.get("content", "")
        for m in call["output_messages"]
        for p in m["parts"]
        if p["type"] == "text"
    )


def _tool_calls(call: dict[str, Any], *, ids: bool = True) -> list[list[Any]]:
    parts = [p for m in call["output_messages"] for p in m["parts"] if p["type"] == "tool_call"]
    return [
        [p["id"], p["name"], p["arguments"]] if ids else [p["name"], p["arguments"]] for p in parts
    ]
