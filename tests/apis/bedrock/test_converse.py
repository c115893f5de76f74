"""Bedrock Converse, ConverseStream and InvokeModel: golden calls of corpus cassettes, and the
rules the goldens do not show (exceptions in a stream, cut streams, blocks of every kind).

Regenerate the goldens with ``python -m tests.apis.bedrock.test_converse``.
"""

from __future__ import annotations

import itertools
import json

import orjson
import pytest

from agentshark.apis.bedrock.wire import vendor_of
from agentshark.apis.model import (
    BlobPart,
    Call,
    GenericPart,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolCallResponsePart,
    UriPart,
)
from agentshark.apis.registry import recognize
from agentshark.model import Exchange
from agentshark.sources.detect import classify_document
from agentshark.sources.vcr import read_vcr
from tests.apis.bedrock import frames
from tests.helpers import CORPUS, ROOT

DATA = ROOT / "tests/data/apis/bedrock"
_BOTOCORE = (
    "open-telemetry__opentelemetry-python-contrib/instrumentation/"
    "opentelemetry-instrumentation-botocore/tests/cassettes/"
)
_TRACELOOP = "traceloop__openllmetry/packages/opentelemetry-instrumentation-bedrock/tests/"
_PYDANTIC = "pydantic__pydantic-ai/tests/models/cassettes/test_bedrock/"

# golden name -> (corpus file, exchange index)
GOLDENS: dict[str, tuple[str, int]] = {
    "converse_tool_loop_turn2": (
        "pydantic__pydantic-ai/tests/models/bedrock/cassettes/test_strict_tool_calls/"
        "test_bedrock_strict_tool_supported_model.yaml",
        1,
    ),
    "converse_guardrail": (
        _TRACELOOP
        + "metrics/cassettes/test_bedrock_guardrails_metrics/test_titan_converse_guardrail.yaml",
        0,
    ),
    "converse_stream_tool_use": (
        _TRACELOOP
        + "traces/cassettes/test_anthropic/test_anthropic_converse_stream_with_tool_use.yaml",
        0,
    ),
    "converse_stream_redacted_reasoning": (
        _PYDANTIC + "test_bedrock_model_thinking_part_redacted_stream.yaml",
        0,
    ),
    "converse_error_400": (_PYDANTIC + "test_bedrock_error.yaml", 0),
    "invoke_nova": (_BOTOCORE + "test_invoke_model_with_content_tool_call[amazon.nova].yaml", 0),
    "invoke_titan": (_BOTOCORE + "test_invoke_model_with_content[amazon.titan].yaml", 0),
    "invoke_llama": (_BOTOCORE + "test_invoke_model_with_content[meta.llama].yaml", 0),
    "invoke_cohere_command_r": (
        _BOTOCORE + "test_invoke_model_with_content[cohere.command-r].yaml",
        0,
    ),
    "invoke_stream_nova": (
        _TRACELOOP + "traces/cassettes/test_nova/test_nova_invoke_stream.yaml",
        0,
    ),
    "invoke_stream_titan": (
        _TRACELOOP + "traces/cassettes/test_titan/test_titan_invoke_stream.yaml",
        0,
    ),
    "invoke_error_400": (_BOTOCORE + "test_invoke_model_with_invalid_model.yaml", 0),
}


def corpus_exchange(file: str, index: int) -> Exchange:
    _, doc = classify_document((CORPUS / file).read_bytes(), file)
    ids = itertools.count()
    exchanges = [
        x for x in read_vcr(doc, file, 0, lambda: f"e{next(ids)}") if isinstance(x, Exchange)
    ]
    return exchanges[index]


def golden_call(name: str) -> Call:
    call = recognize(corpus_exchange(*GOLDENS[name]), "c1")
    assert call is not None
    return call


def render(call: Call) -> bytes:
    return orjson.dumps(call.to_json(), option=orjson.OPT_INDENT_2) + b"\n"


@pytest.mark.skipif(not CORPUS.exists(), reason="no corpus")
@pytest.mark.parametrize("name", sorted(GOLDENS))
def test_golden_call(name: str) -> None:
    expected = DATA / f"{name}.call.json"
    assert expected.exists(), (
        f"run python -m tests.apis.bedrock.test_converse to write {expected.name}"
    )
    assert json.loads(render(golden_call(name))) == json.loads(expected.read_bytes())


def regenerate() -> None:
    DATA.mkdir(parents=True, exist_ok=True)
    for name in sorted(GOLDENS):
        path = DATA / f"{name}.call.json"
        path.write_bytes(render(golden_call(name)))
        print(f"wrote {path.relative_to(ROOT)}")


# -- what the goldens show, said as rules ---------------------------------------------------


@pytest.mark.skipif(not CORPUS.exists(), reason="no corpus")
def test_golden_facts() -> None:
    loop = golden_call("converse_tool_loop_turn2")
    assert (loop.api, loop.provider, loop.operation) == ("bedrock.converse", "aws.bedrock", "chat")
    assert loop.request_model == "us.anthropic.claude-sonnet-4-5-20250929-v1:0"  # URL-decoded
    calls = [p for m in loop.input_messages for p in m.parts if isinstance(p, ToolCallPart)]
    results = [
        p for m in loop.input_messages for p in m.parts if isinstance(p, ToolCallResponsePart)
    ]
    assert calls and [c.id for c in calls] == [r.id for r in results]
    guard = golden_call("converse_guardrail")
    assert guard.finish_reasons == ["guardrail_intervened"]
    assert "guardrail" in guard.extras["response"]["trace"]
    guarded = guard.input_messages[0].parts
    assert [p.provider_details["block_type"] for p in guarded if isinstance(p, TextPart)] == [
        "guardContent"
    ] * 2
    stream = golden_call("converse_stream_tool_use")
    tool = [p for p in stream.output_messages[0].parts if isinstance(p, ToolCallPart)]
    assert tool and tool[0].arguments_raw is not None and tool[0].arguments_error is None
    assert stream.stream and stream.complete and stream.usage is not None
    redacted = golden_call("converse_stream_redacted_reasoning").output_messages[0].parts
    reasoning = [p for p in redacted if isinstance(p, ReasoningPart)]
    assert len(reasoning) == 2 and redacted[:2] == reasoning
    assert all(p.content == "" and "redactedContent" in p.provider_details for p in reasoning)
    error = golden_call("converse_error_400")
    assert error.error is not None and error.error.status == 400 and error.complete
    assert error.error.message == "The provided model identifier is invalid."
    titan = golden_call("invoke_stream_titan")
    assert titan.api == "bedrock.invoke" and titan.operation == "text_completion"
    assert titan.complete and titan.finish_reasons == ["FINISH"] and titan.usage is not None


# -- streams ------------------------------------------------------------------------------------


def stream_call(
    events: list[bytes],
    *,
    complete: bool = True,
    path: str = "/model/amazon.nova-micro-v1%3A0/converse-stream",
) -> Call:
    x = frames.exchange(
        path,
        {"messages": [{"role": "user", "content": [{"text": "hi"}]}]},
        b"".join(events),
        content_type="application/vnd.amazon.eventstream",
        complete=complete,
    )
    call = recognize(x, "c1")
    assert call is not None
    return call


_START = frames.event("messageStart", {"role": "assistant"})


def _text(i: int, text: str) -> bytes:
    return frames.event("contentBlockDelta", {"contentBlockIndex": i, "delta": {"text": text}})


@pytest.mark.parametrize(
    ("name", "extra"),
    [
        ("throttlingException", {}),
        ("modelStreamErrorException", {"originalStatusCode": 500, "originalMessage": "boom"}),
        ("validationException", {}),
    ],
)
def test_exception_event_is_the_calls_error(name: str, extra: dict[str, object]) -> None:
    call = stream_call([_START, _text(0, "Hel"), frames.exception(name, "stop now", **extra)])
    assert call.error is not None
    assert (call.error.type, call.error.message, call.error.source) == (
        name,
        "stop now",
        "stream event 2",
    )
    assert call.error.code == ("500" if extra else None)
    assert call.output_messages[0].parts == [TextPart(content="Hel")]  # what arrived is kept
    assert call.complete  # the exception ends the stream: the call is whole, and failed
    assert call.finish_reasons == []


def test_stream_without_message_stop_is_incomplete() -> None:
    call = stream_call([_START, _text(0, "Hel")])
    assert not call.complete and call.error is None
    assert call.output_messages[0].finish_reason is None and call.finish_reasons == []


def test_stream_cut_by_the_capture_is_incomplete() -> None:
    stop = frames.event("messageStop", {"stopReason": "end_turn"})
    call = stream_call([_START, _text(0, "Hi"), stop], complete=False)
    assert not call.complete


def test_stream_blocks_of_every_kind() -> None:
    events = [
        _START,
        frames.event(
            "contentBlockDelta",
            {"contentBlockIndex": 0, "delta": {"reasoningContent": {"text": "think"}}},
        ),
        frames.event(
            "contentBlockDelta",
            {"contentBlockIndex": 0, "delta": {"reasoningContent": {"signature": "sig"}}},
        ),
        frames.event("contentBlockStop", {"contentBlockIndex": 0}),
        _text(1, "The answer"),
        frames.event(
            "contentBlockDelta", {"contentBlockIndex": 1, "delta": {"citation": {"title": "doc"}}}
        ),
        frames.event("contentBlockStop", {"contentBlockIndex": 1}),
        frames.event(
            "contentBlockStart",
            {"contentBlockIndex": 2, "start": {"toolUse": {"toolUseId": "t1", "name": "f"}}},
        ),
        frames.event(
            "contentBlockDelta", {"contentBlockIndex": 2, "delta": {"toolUse": {"input": '{"a":'}}}
        ),
        frames.event(
            "contentBlockDelta", {"contentBlockIndex": 2, "delta": {"toolUse": {"input": "1}"}}}
        ),
        frames.event("contentBlockStop", {"contentBlockIndex": 2}),
        frames.event("messageStop", {"stopReason": "tool_use"}),
        frames.event(
            "metadata",
            {
                "usage": {
                    "inputTokens": 3,
                    "outputTokens": 4,
                    "totalTokens": 9,
                    "cacheReadInputTokens": 2,
                },
                "metrics": {"latencyMs": 12},
            },
        ),
    ]
    call = stream_call(events)
    reasoning, text, tool = call.output_messages[0].parts
    assert reasoning == ReasoningPart(content="think", provider_details={"signature": "sig"})
    assert text == TextPart(
        content="The answer", provider_details={"citations": [{"title": "doc"}]}
    )
    assert tool == ToolCallPart(id="t1", name="f", arguments={"a": 1}, arguments_raw='{"a":1}')
    assert call.finish_reasons == ["tool_use"] and call.complete
    assert call.usage is not None and (call.usage.input_tokens, call.usage.total_tokens) == (5, 9)
    assert call.extras == {"response": {"metrics": {"latencyMs": 12}}}  # no padding "p"


def test_delta_that_does_not_fit_its_block_is_kept() -> None:
    events = [
        _START,
        frames.event(
            "contentBlockStart",
            {"contentBlockIndex": 0, "start": {"toolUse": {"toolUseId": "t", "name": "f"}}},
        ),
        _text(0, "stray"),
        frames.event("messageStop", {"stopReason": "tool_use"}),
    ]
    call = stream_call(events)
    assert [d.code for d in call.diagnostics] == ["bedrock.stream.delta_mismatch"]
    assert call.extras["response"]["unplaced_deltas"][0]["delta"] == {"text": "stray"}


# -- content blocks ---------------------------------------------------------------------------


def converse_call(request: object, response: object, status: int = 200) -> Call:
    x = frames.exchange("/model/m/converse", request, json.dumps(response).encode(), status=status)
    call = recognize(x, "c1")
    assert call is not None
    return call


def test_request_blocks_of_every_kind() -> None:
    content = [
        {"text": "look"},
        {"image": {"format": "png", "source": {"bytes": "iVBORw0K"}}},
        {
            "document": {
                "format": "pdf",
                "name": "doc",
                "source": {"s3Location": {"uri": "s3://b/k"}},
            }
        },
        {"video": {"format": "mp4", "source": {"bytes": "AAAA"}}},
        {
            "toolResult": {
                "toolUseId": "t1",
                "content": [{"json": {"ok": True}}],
                "status": "success",
            }
        },
        {"cachePoint": {"type": "default"}},
        {"somethingNew": {"x": 1}},
        {"text": "a", "image": {}},  # not a union: kept whole
    ]
    request = {
        "messages": [{"role": "user", "content": content}],
        "system": [{"text": "be brief"}, {"cachePoint": {"type": "default"}}],
        "toolConfig": {"tools": [{"toolSpec": {"name": "f"}}], "toolChoice": {"auto": {}}},
        "inferenceConfig": {"maxTokens": 5, "temperature": 0.1},
        "guardrailConfig": {"guardrailIdentifier": "g"},
        "unknownField": 1,
    }
    response = {
        "output": {"message": {"role": "assistant", "content": [{"text": "ok"}]}},
        "stopReason": "end_turn",
    }
    call = converse_call(request, response)
    parts = call.input_messages[0].parts
    assert parts[0] == TextPart(content="look")
    assert parts[1] == BlobPart(mime_type="image/png", modality="image", content="iVBORw0K")
    assert parts[2] == UriPart(
        uri="s3://b/k",
        mime_type="application/pdf",
        modality=None,
        provider_details={"name": "doc", "block_type": "document"},
    )
    assert isinstance(parts[3], BlobPart) and parts[3].modality == "video"
    assert parts[4] == ToolCallResponsePart(
        id="t1", response=[{"json": {"ok": True}}], provider_details={"status": "success"}
    )
    assert parts[5] == GenericPart(type="cachePoint", fields={"type": "default"})
    assert parts[6] == GenericPart(type="somethingNew", fields={"x": 1})
    assert parts[7] == GenericPart(type="content", fields={"value": {"text": "a", "image": {}}})
    assert call.system_instructions[0] == TextPart(content="be brief")
    assert call.tool_definitions == [{"toolSpec": {"name": "f"}}]
    assert call.request_params == {
        "toolChoice": {"auto": {}},
        "maxTokens": 5,
        "temperature": 0.1,
        "guardrailConfig": {"guardrailIdentifier": "g"},
    }
    assert call.extras["request"] == {"unknownField": 1}
    assert call.complete and call.finish_reasons == ["end_turn"]


@pytest.mark.parametrize(
    "stop",
    [
        "end_turn",
        "tool_use",
        "max_tokens",
        "stop_sequence",
        "guardrail_intervened",
        "content_filtered",
        "malformed_model_output",
        "malformed_tool_use",
        "model_context_window_exceeded",
        "new_reason",
    ],
)
def test_every_stop_reason_is_kept_as_sent(stop: str) -> None:
    response = {"output": {"message": {"role": "assistant", "content": []}}, "stopReason": stop}
    call = converse_call({"messages": []}, response)
    assert call.finish_reasons == [stop] and call.output_messages[0].finish_reason == stop


def test_reasoning_blocks_whole() -> None:
    content = [
        {"reasoningContent": {"reasoningText": {"text": "hm", "signature": "s1"}}},
        {"reasoningContent": {"redactedContent": "AAEC"}},
        {"citationsContent": {"content": [{"text": "cited"}], "citations": [{"title": "t"}]}},
    ]
    response = {
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": "end_turn",
    }
    parts = converse_call({"messages": []}, response).output_messages[0].parts
    assert parts[0] == ReasoningPart(content="hm", provider_details={"signature": "s1"})
    assert parts[1] == ReasoningPart(content="", provider_details={"redactedContent": "AAEC"})
    assert parts[2] == TextPart(
        content="cited",
        provider_details={"block_type": "citationsContent", "citations": [{"title": "t"}]},
    )


def test_error_type_from_the_header_and_message_from_either_case() -> None:
    x = frames.exchange(
        "/model/m/converse",
        {"messages": []},
        b'{"Message":"Too many requests"}',
        status=429,
        headers=[
            (
                "x-amzn-errortype",
                "ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/",
            )
        ],
    )
    call = recognize(x, "c1")
    assert call is not None and call.error is not None
    assert (call.error.status, call.error.type, call.error.message) == (
        429,
        "ThrottlingException",
        "Too many requests",
    )
    assert call.ids["provider_request_id"] == "req-1"


def test_not_json_response_is_a_diagnostic() -> None:
    x = frames.exchange("/model/m/converse", {"messages": []}, b"<html>oops</html>")
    call = recognize(x, "c1")
    assert call is not None and not call.complete
    assert [d.code for d in call.diagnostics] == ["bedrock.response_not_recognized"]


@pytest.mark.parametrize(
    ("model", "vendor"),
    [
        ("amazon.nova-micro-v1:0", "amazon"),
        ("us.anthropic.claude-3-7-sonnet-20250219-v1:0", "anthropic"),
        ("arn:aws:bedrock:us-east-1:1:inference-profile/us.meta.llama3-2-1b-instruct-v1:0", "meta"),
        ("arn:aws:bedrock:us-east-1::foundation-model/mistral.mistral-7b-instruct-v0:2", "mistral"),
        ("arn:aws:bedrock:us-east-1:1:application-inference-profile/abc", None),
        ("arn:aws:sagemaker:us-east-1:1:endpoint/e", None),
    ],
)
def test_vendor_of_model_ids(model: str, vendor: str | None) -> None:
    assert vendor_of(model) == vendor


if __name__ == "__main__":
    regenerate()


def test_anthropic_bodies_on_invoke_stay_anthropic_messages() -> None:
    """Anthropic Messages through InvokeModel is the Anthropic family's call (provider
    bedrock.anthropic): also when the cassette lost the request body."""
    response = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude",
        "content": [{"type": "text", "text": "hi"}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }
    path = "/model/anthropic.claude-3-haiku-20240307-v1%3A0/invoke"
    for request in (
        {"anthropic_version": "bedrock-2023-05-31", "max_tokens": 5, "messages": []},
        None,
    ):
        x = frames.exchange(path, request, json.dumps(response).encode())
        call = recognize(x, "c1")
        assert call is not None and (call.api, call.provider) == (
            "anthropic.messages",
            "bedrock.anthropic",
        )


def test_unknown_vendor_body_is_kept_whole() -> None:
    body = {"answer": "42", "tokens": 3}
    x = frames.exchange("/model/acme.model-v1/invoke", {"question": "?"}, json.dumps(body).encode())
    call = recognize(x, "c1")
    assert call is not None and call.api == "bedrock.invoke" and call.complete
    assert call.output_messages[0].parts == [GenericPart(type="invoke_body", fields=body)]
    assert [d.code for d in call.diagnostics] == ["bedrock.invoke.unknown_body"]
    assert call.request_params == {"question": "?"}


# -- vendor bodies the corpus does not hold (shapes from the AWS user guide's model parameters)


def invoke_call(model: str, request: object, response: object) -> Call:
    x = frames.exchange(f"/model/{model}/invoke", request, json.dumps(response).encode())
    call = recognize(x, "c1")
    assert call is not None and call.api == "bedrock.invoke"
    return call


def test_deepseek_r1_body() -> None:
    body = {"choices": [{"text": "<think>hm</think>4", "stop_reason": "stop"}]}
    call = invoke_call("us.deepseek.r1-v1%3A0", {"prompt": "2+2?", "max_tokens": 9}, body)
    assert call.operation == "text_completion"
    assert call.output_messages[0].parts == [TextPart(content="<think>hm</think>4")]
    assert call.finish_reasons == ["stop"] and call.request_params == {"max_tokens": 9}


def test_openai_compatible_chat_body_with_reasoning_and_tool_calls() -> None:
    message = {
        "role": "assistant",
        "content": None,
        "reasoning_content": "think",
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a":1}'}}
        ],
    }
    body = {
        "id": "chatcmpl-1",
        "model": "openai.gpt-oss-120b-1:0",
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 7, "total_tokens": 12},
    }
    request = {
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "tool", "tool_call_id": "c0", "content": "r"},
        ]
    }
    call = invoke_call("openai.gpt-oss-120b-1%3A0", request, body)
    assert call.operation == "chat" and call.response_id == "chatcmpl-1"
    assert [m.role for m in call.input_messages] == ["user", "tool"]
    assert call.input_messages[1].parts == [ToolCallResponsePart(id="c0", response="r")]
    reasoning, tool = call.output_messages[0].parts
    assert reasoning == ReasoningPart(content="think")
    assert tool == ToolCallPart(id="c1", name="f", arguments={"a": 1}, arguments_raw='{"a":1}')
    assert call.finish_reasons == ["tool_calls"]
    assert call.usage is not None and call.usage.total_tokens == 12


def test_cohere_command_r_tool_calls_and_history() -> None:
    request = {
        "message": "weather?",
        "preamble": "be brief",
        "chat_history": [
            {"role": "USER", "message": "hi"},
            {"role": "CHATBOT", "message": "hello"},
        ],
        "tools": [{"name": "weather"}],
    }
    body = {
        "text": "",
        "generation_id": "g1",
        "finish_reason": "COMPLETE",
        "tool_calls": [{"name": "weather", "parameters": {"city": "Paris"}}],
    }
    call = invoke_call("cohere.command-r-v1%3A0", request, body)
    assert [m.role for m in call.input_messages] == ["USER", "CHATBOT", "user"]
    assert call.system_instructions == [TextPart(content="be brief")]
    assert call.tool_definitions == [{"name": "weather"}]
    parts = call.output_messages[0].parts
    assert parts[1] == ToolCallPart(id=None, name="weather", arguments={"city": "Paris"})
    assert call.response_id == "g1" and call.finish_reasons == ["COMPLETE"]


@pytest.mark.parametrize(
    ("model", "chunks", "text", "finish"),
    [
        (
            "meta.llama3-8b-instruct-v1%3A0",
            [
                {"generation": "Hel", "stop_reason": None},
                {"generation": "lo", "stop_reason": "stop"},
            ],
            "Hello",
            "stop",
        ),
        (
            "mistral.mistral-7b-instruct-v0%3A2",
            [
                {"outputs": [{"text": "Hel", "stop_reason": None}]},
                {"outputs": [{"text": "lo", "stop_reason": "length"}]},
            ],
            "Hello",
            "length",
        ),
    ],
)
def test_text_vendor_streams(
    model: str, chunks: list[dict[str, object]], text: str, finish: str
) -> None:
    metrics = {"amazon-bedrock-invocationMetrics": {"inputTokenCount": 3, "outputTokenCount": 2}}
    last = {**chunks[-1], **metrics}
    body = b"".join(frames.chunk(c) for c in [*chunks[:-1], last])
    x = frames.exchange(
        f"/model/{model}/invoke-with-response-stream",
        {"prompt": "x"},
        body,
        content_type="application/vnd.amazon.eventstream",
    )
    call = recognize(x, "c1")
    assert call is not None and call.api == "bedrock.invoke" and call.complete
    assert call.output_messages[0].parts == [TextPart(content=text)]
    assert call.finish_reasons == [finish]
    assert call.usage is not None and (call.usage.input_tokens, call.usage.output_tokens) == (3, 2)
    assert (
        call.extras["response"]["invocationMetrics"] == metrics["amazon-bedrock-invocationMetrics"]
    )


def test_invoke_stream_cut_before_its_end_is_incomplete() -> None:
    body = frames.chunk({"outputText": "Hel", "index": 0})
    x = frames.exchange(
        "/model/amazon.titan-text-express-v1/invoke-with-response-stream",
        {"inputText": "x"},
        body,
        content_type="application/vnd.amazon.eventstream",
    )
    call = recognize(x, "c1")
    assert call is not None and not call.complete and call.finish_reasons == []
