"""Every corpus document through detection and the HAR / VCR / WebSocket message log / xAI
cassette readers.

For each ``../shared/corpus/manifest.jsonl`` entry that is not a packet capture: a HAR file
or cassette reads without an exception into the manifest's ``n_exchanges`` exchanges (or the
count listed, with its reason, in ``corpus_exceptions``); anything else is refused with an
``InputError`` (usually ``UnsupportedFormatError``) whose message names the file.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest

from agentshark.errors import Diagnostic, InputError
from agentshark.model import Exchange, header
from agentshark.sources.detect import SNIFF_BYTES, classify_document, sniff_format
from agentshark.sources.har import read_har
from agentshark.sources.vcr import read_vcr
from agentshark.sources.wslog import read_message_log
from agentshark.sources.xai_cassette import read_xai_cassette
from tests.helpers import CORPUS
from tests.sources.corpus_exceptions import DIFFERENCES

MANIFEST = CORPUS / "manifest.jsonl"


def _manifest() -> list[dict[str, Any]]:
    if not MANIFEST.exists():
        return []
    return [json.loads(line) for line in MANIFEST.read_text().splitlines() if line.strip()]


ENTRIES = _manifest()
pytestmark = pytest.mark.skipif(not ENTRIES, reason=f"no corpus at {CORPUS}")

TRANSPORTS = {"http/1.0", "http/1.1", "h2", "h3"}


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["file"] for e in ENTRIES])
def test_corpus_document(entry: dict[str, Any]) -> None:
    file = entry["file"]
    data = (CORPUS / file).read_bytes()
    if sniff_format(data[:SNIFF_BYTES]) in ("pcap", "pcapng"):
        assert entry["format"] == "pcap"  # read by the packet sources, not here
        assert file not in DIFFERENCES
        return
    try:
        kind, doc = classify_document(data, file)
    except InputError as e:  # UnsupportedFormatError included
        assert str(e).startswith(f"{file} "), "the message must name the file"
        assert file not in DIFFERENCES
        return

    ids = itertools.count()
    reader = {
        "har": read_har,
        "vcr": read_vcr,
        "wslog": read_message_log,
        "xai": read_xai_cassette,
    }[kind]
    out = list(reader(doc, file, 0, lambda: f"e{next(ids)}"))
    if kind == "xai":
        _check_xai(doc, out, entry)
        return
    if kind == "wslog":  # one WebSocket exchange; the manifest counts its messages
        sessions = [o for o in out if isinstance(o, Exchange) and o.messages is not None]
        assert len(sessions) == 1 and sessions[0].messages is not None
        items = [x for x in doc["interactions"] if isinstance(x, dict)]
        assert len(sessions[0].messages) == sum(x.get("kind") == "message" for x in items)
        assert len(items) <= entry["n_exchanges"] + 1  # the manifest leaves the close out
        assert not [o for o in out if isinstance(o, Diagnostic)]
        return
    exchanges = [o for o in out if isinstance(o, Exchange)]
    skipped = [o for o in out if isinstance(o, Diagnostic)]
    expected = entry["n_exchanges"]
    if file in DIFFERENCES:
        assert expected != DIFFERENCES[file].n_exchanges, (
            "listed in corpus_exceptions but no longer differs from the manifest: remove it"
        )
        expected = DIFFERENCES[file].n_exchanges
    assert len(exchanges) == expected, [d.message for d in skipped]
    if file not in DIFFERENCES:
        assert skipped == []
    for x in exchanges:
        _check_exchange(x, kind)


def _check_xai(
    doc: dict[str, Any], out: list[Exchange | Diagnostic], entry: dict[str, Any]
) -> None:
    """One gRPC exchange per chat interaction; a Collections API item is an info diagnostic."""
    items = doc["interactions"]
    assert len(items) == entry["n_exchanges"]
    chat = [x for x in items if "collections_method" not in x]
    exchanges = [o for o in out if isinstance(o, Exchange)]
    assert len(exchanges) == len(chat)
    notes = [o for o in out if isinstance(o, Diagnostic)]
    assert [d.code for d in notes] == ["xai.collections_method"] * (len(items) - len(chat))
    for x, item in zip(exchanges, chat, strict=True):
        assert x.request is not None and x.response is not None and x.complete
        stream = "request_stream" in item
        assert x.request.target == "/xai_api.Chat/" + (
            "GetCompletionChunk" if stream else "GetCompletion"
        )
        assert (
            x.request.body.data()[5:]
            == item["request_stream" if stream else "request_sample"]["raw"]
        )
        assert x.request.started is None and x.response.status == 200


def _check_exchange(x: Exchange, kind: str) -> None:
    assert x.transport in TRANSPORTS
    assert x.request is not None and x.request.complete
    assert x.request.url.startswith(("http://", "https://", "ws://", "wss://"))
    assert x.request.target.startswith("/")
    for name, value in x.request.headers:
        assert isinstance(name, str) and isinstance(value, str)
    if x.response is None:
        assert kind == "har" and [d.code for d in x.diagnostics] == ["har.no_response"]
        return
    assert 100 <= x.response.status <= 999
    body = x.response.body
    assert body.size == len(body.data())
    if kind == "vcr":
        assert x.request.started is None and x.response.ended is None
        reserialized = x.extras.get("reserialized_body", [])
        if isinstance(reserialized, list) and "response" in reserialized:
            assert body.content_decoded is True  # pydantic-ai parsed_body, re-serialized
        else:  # byte-exact: still encoded or not, the decoder must sniff
            coding = (header(x.response.headers, "content-encoding") or "identity").lower()
            assert body.content_decoded is (None if coding.strip() != "identity" else False)
    else:
        assert x.request.started is not None and body.content_decoded is True


def test_differences_name_corpus_documents() -> None:
    files = {e["file"] for e in ENTRIES}
    for file, difference in DIFFERENCES.items():
        assert file in files, f"{file} is not in the manifest"
        assert len(difference.reason) > 20, f"{file}: say why the manifest is wrong"
