"""API families recognized but not parsed yet are named from the request path, never silent
and never faked as calls: every Gemini and Bedrock model call of the corpus is either claimed
by a parsed family (Gemini, Bedrock, Anthropic on Bedrock) or named (Gemini Interactions,
Bedrock CountTokens)."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from agentshark.apis.model import Call
from agentshark.apis.registry import known_apis, unparsed_api
from agentshark.model import Exchange
from agentshark.output.census import Census
from agentshark.pipeline import Options, run
from tests.helpers import CORPUS, http_exchange

MODEL_PATHS = (":generateContent", ":streamGenerateContent", "/converse", "/invoke")


def _exchange(method: str, url: str, *headers: tuple[str, str]) -> Exchange:
    return http_exchange(
        method=method,
        url=url,
        target=url.split("/", 3)[-1],
        request_body=b"",
        request_headers=list(headers),
        response_pieces=[],
    )


@pytest.mark.parametrize(
    ("method", "url", "headers", "want"),
    [
        (
            "POST",
            "https://generativelanguage.googleapis.com/v1beta/interactions",
            (),
            ("gemini.interactions", "Gemini Interactions API"),
        ),
        (
            "GET",
            "https://generativelanguage.googleapis.com/v1beta/interactions/v1_abc",
            (),
            ("gemini.interactions", "Gemini Interactions API"),
        ),
        # parsed now: generateContent is a call, never "not parsed"
        (
            "POST",
            "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.0-flash:generateContent",
            (),
            None,
        ),
        (
            "POST",
            "https://bedrock-runtime.us-east-1.amazonaws.com/model/"
            "arn%3Aaws%3Abedrock%3Aus-east-1%3A1%3Ainference-profile%2Fus.x-v1%3A0/count-tokens",
            (),
            ("bedrock.count_tokens", "Bedrock CountTokens"),
        ),
        # parsed now (apis/bedrock): no longer named
        (
            "POST",
            "https://bedrock-runtime.eu-central-1.amazonaws.com/model/amazon.nova-pro-v1%3A0/"
            "invoke-with-response-stream",
            (),
            None,
        ),
        (  # parsed now: a WebSocket session's calls (agentshark.apis.openai.realtime)
            "GET",
            "wss://api.openai.com/v1/realtime?model=gpt-realtime",
            (("Upgrade", "websocket"), ("Connection", "Upgrade")),
            None,
        ),
        (
            "POST",
            "https://api.openai.com/v1/realtime/calls",
            (),
            ("openai.realtime", "OpenAI Realtime WebRTC call"),
        ),
        # not these: a plain GET of a realtime page, a model listing, a chat call
        ("GET", "https://example.com/v1/realtime", (), None),
        ("GET", "https://generativelanguage.googleapis.com/v1beta/models", (), None),
        ("POST", "https://api.openai.com/v1/chat/completions", (), None),
    ],
)
def test_unparsed_api_by_path(
    method: str, url: str, headers: tuple[tuple[str, str], ...], want: tuple[str, str] | None
) -> None:
    assert unparsed_api(_exchange(method, url, *headers)) == want


def test_known_apis_hold_both_kinds_once() -> None:
    known = known_apis()
    assert len(known) == len(set(known))
    assert {"openai.chat", "anthropic.messages", "mcp", "a2a"} <= set(known)
    assert {"gemini.generate_content", "bedrock.converse", "bedrock.invoke"} <= set(known)
    assert "gemini.interactions" in known
    assert {"openai.realtime", "gemini.live"} <= set(known)  # the WebSocket session families


def test_no_gemini_or_bedrock_call_of_the_corpus_is_silent() -> None:
    seen: Counter[str] = Counter()
    for line in (CORPUS / "manifest.jsonl").read_text().splitlines():
        entry = json.loads(line)
        if entry["api_family"] not in ("gemini", "bedrock-converse", "bedrock-invoke"):
            continue
        census = Census(1)
        items = list(census.watch(run([str(CORPUS / entry["file"])], Options(calls=True))))
        claimed = {i.exchange_id for i in items if isinstance(i, Call)}
        named = {e for group in census.not_parsed() for e in group["exchanges"]}
        assert not claimed & named  # a parsed call is never also "not parsed"
        for item in items:
            if not isinstance(item, Exchange) or item.request is None:
                continue
            if any(p in item.request.url for p in MODEL_PATHS):
                where = "claimed" if item.id in claimed else "named" if item.id in named else ""
                assert where, f"{entry['file']} {item.id} {item.request.url} is silent"
                seen[where] += 1
    # Gemini and Bedrock (Anthropic on Bedrock too) are parsed: every such exchange of the
    # corpus is claimed (728 when this was written); the named ones are tested above
    assert seen["claimed"] > 700, seen
