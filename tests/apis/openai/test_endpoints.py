"""The legacy Completions stream on a recorded cassette: chunks that are not JSON objects,
and events after ``[DONE]``, are skipped with a diagnostic, never silently."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
import yaml

from agentshark.apis.model import Call, TextPart
from agentshark.apis.registry import recognize
from agentshark.model import Body, Exchange
from agentshark.sources.vcr import read_vcr
from tests.helpers import CORPUS

STREAM = (
    CORPUS / "traceloop__openllmetry/packages/opentelemetry-instrumentation-langchain/tests/"
    "cassettes/test_llms/test_trace_propagation_stream[OpenAI].yaml"
)

pytestmark = pytest.mark.skipif(not STREAM.exists(), reason=f"no corpus at {CORPUS}")


def recorded(path: Path) -> Exchange:
    doc = yaml.safe_load(path.read_text())
    ids = (f"e{i}" for i in itertools.count())
    (x,) = [x for x in read_vcr(doc, path.name, 0, lambda: next(ids)) if isinstance(x, Exchange)]
    return x


def with_events(x: Exchange, before_done: bytes, after_done: bytes = b"") -> tuple[Exchange, int]:
    """``x`` with SSE events put before its ``[DONE]`` and after it; and where they start."""
    assert x.response is not None
    data = x.response.body.data()
    at = data.index(b"data: [DONE]")
    spoiled = data[:at] + before_done + data[at:] + after_done
    x.response.body = Body(pieces=[(1.0, spoiled)], content_decoded=x.response.body.content_decoded)
    return x, at


def call_of(x: Exchange) -> Call:
    call = recognize(x, "c1")
    assert call is not None
    return call


def text(call: Call) -> str:
    return "".join(
        p.content for m in call.output_messages for p in m.parts if isinstance(p, TextPart)
    )


def test_completions_chunks_that_are_not_objects_are_said() -> None:
    clean = call_of(recorded(STREAM))
    assert clean.api == "openai.completions" and clean.stream and clean.complete
    assert text(clean) and not clean.diagnostics
    late = (
        b'data: {"id":"cmpl-x","object":"text_completion",'
        b'"choices":[{"index":0,"text":"late"}]}\n\n'
    )
    x, at = with_events(
        recorded(STREAM), b"data: [1, 2]\n\n" + b'data: "text"\n\n' + b"data: {cut\n\n", late * 2
    )
    call = call_of(x)
    assert text(call) == text(clean) and call.complete  # the late text is not used
    assert call.finish_reasons == clean.finish_reasons
    codes = [d.code for d in call.diagnostics]
    assert codes == ["openai_completions.bad_chunk"] * 3 + ["openai_completions.after_done"]
    first, second, third, after = call.diagnostics
    assert first.location == f"{x.id} response body byte {at}"
    assert "is JSON but not an object" in first.message and "[1, 2]" in first.message
    assert second.location == f"{x.id} response body byte {at + len(b'data: [1, 2]') + 2}"
    assert "is not JSON" in third.message
    assert after.message.startswith("2 event(s) after [DONE]") and after.severity == "info"
