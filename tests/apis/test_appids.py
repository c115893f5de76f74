"""Application ids on real recorded traffic (VCR cassettes read by our own VCR source, eBPF
plaintext of Claude Code and Gemini CLI sessions) and the names that must not be taken."""

from __future__ import annotations

import itertools
import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from agentshark.apis.appids import KINDS, AppId, body_app_ids, header_app_ids
from agentshark.apis.model import Json
from agentshark.apis.view import ExchangeView
from agentshark.model import Exchange
from agentshark.sources.vcr import read_vcr
from tests.helpers import CORPUS

AGENTSIGHT = CORPUS / "eunomia-bpf__agentsight/script/results/ssl_only"
PYDANTIC = CORPUS / "pydantic__pydantic-ai/tests"
BOTOCORE = (
    CORPUS / "open-telemetry__opentelemetry-python-contrib/instrumentation"
    "/opentelemetry-instrumentation-botocore/tests/cassettes"
)
OPENLLMETRY = CORPUS / "traceloop__openllmetry/packages"


def _exchanges(path: Path) -> Iterator[Exchange]:
    if not path.exists():
        pytest.skip(f"no corpus file {path}")
    yield from _read(yaml.load(path.read_bytes(), Loader=yaml.CSafeLoader), path.name)


def _read(doc: dict[str, Json], name: str) -> Iterator[Exchange]:
    ids = itertools.count()
    for item in read_vcr(doc, name, 0, lambda: str(next(ids))):
        if isinstance(item, Exchange) and item.request is not None:
            yield item


def _first(path: Path) -> tuple[list[tuple[str, str]], Json]:
    exchange = next(_exchanges(path))
    assert exchange.request is not None
    return exchange.request.headers, ExchangeView(exchange).request_json


def _agentsight_bodies(session: str, path_prefix: str) -> list[Json]:
    path = AGENTSIGHT / session / "ssl_data_only.json"
    if not path.exists():
        pytest.skip(f"no corpus file {path}")
    timeline = json.loads(path.read_bytes())["data_timeline"]
    return [
        json.loads(e["body"])
        for e in timeline
        if e["type"] == "request" and e["path"].startswith(path_prefix) and e.get("body")
    ]


# -- bodies from the corpus ------------------------------------------------------------------


def test_claude_code_metadata_user_id_is_kept_whole() -> None:
    bodies = _agentsight_bodies("claude_code/analysis_gen_readme", "/v1/messages?")
    assert len(bodies) == 37
    user_id = "b8ff3045681b2adfac5edf7d928a470641909b4edb8f1d10ed9b64f0a292fbf1"
    expected = AppId(
        name="user_id", value=user_id, location="request body metadata.user_id", kind="user"
    )
    assert all(body_app_ids(b) == [expected] for b in bodies)


def test_claude_code_telemetry_ids_are_not_walked() -> None:
    # Statsig events carry sessionId deep inside events[].metadata: not an API request's id.
    bodies = _agentsight_bodies("claude_code/analysis_gen_readme", "/v1/rgstr")
    assert bodies
    assert all(body_app_ids(b) == [] for b in bodies)


def test_gemini_cli_code_assist_request_session_id() -> None:
    bodies = _agentsight_bodies("gemini_cli/analysis_suggestions", "/v1internal:")
    found = {tuple(body_app_ids(b)) for b in bodies}
    session = "request body request.session_id"
    assert {(a.name, a.location, a.kind) for ids in found for a in ids} == {
        ("session_id", session, "session")
    }
    # countTokens sends no session id; generateContent always does, the same one.
    assert () in found
    assert len({a.value for ids in found for a in ids}) == 1


def test_openai_responses_conversation() -> None:
    path = (
        PYDANTIC / "models/cassettes/test_openai_responses"
        "/test_openai_conversation_id_explicit_and_auto.yaml"
    )
    found = {a for x in _exchanges(path) for a in body_app_ids(ExchangeView(x).request_json)}
    assert found == {
        AppId(
            name="conversation",
            value="conv_010000000000000000000000000000000000000000000000",
            location="request body conversation",
            kind="conversation",
        )
    }


def test_openai_chat_user() -> None:
    _, body = _first(PYDANTIC / "models/cassettes/test_openai/test_user_id.yaml")
    assert body_app_ids(body) == [
        AppId(name="user", value="user_id", location="request body user", kind="user")
    ]


def test_anthropic_metadata_user_id() -> None:
    headers, body = _first(PYDANTIC / "models/cassettes/test_anthropic/test_extra_headers.yaml")
    assert body_app_ids(body) == [
        AppId(name="user_id", value="123", location="request body metadata.user_id", kind="user")
    ]
    assert header_app_ids(headers) == []


def test_agno_telemetry_session_and_run() -> None:
    path = OPENLLMETRY / (
        "opentelemetry-instrumentation-agno/tests/cassettes/test_agent/test_agent_run_basic.yaml"
    )
    found = [ids for x in _exchanges(path) if (ids := body_app_ids(ExchangeView(x).request_json))]
    assert found == [
        [
            AppId(
                name="session_id",
                value="c4b3dbc5-a39e-466b-9d52-84e1c3ef6fa1",
                location="request body session_id",
                kind="session",
            ),
            AppId(
                name="run_id",
                value="bbe01911-2e87-4695-b5de-726489543051",
                location="request body run_id",
                kind="run",
            ),
        ]
    ]


def test_prompt_cache_key_is_not_a_session_id() -> None:
    _, body = _first(
        PYDANTIC
        / "models/cassettes/test_openai_prompt_cache/test_openai_chat_prompt_cache_e2e.yaml"
    )
    assert body["prompt_cache_key"] == "pydantic-ai-prompt-cache-e2e-chat"
    assert body_app_ids(body) == []


# -- headers from the corpus -----------------------------------------------------------------


def test_aws_x_ray_trace_header_is_an_app_trace_id() -> None:
    headers, _ = _first(BOTOCORE / "test_invoke_model_with_content[amazon.titan].yaml")
    names = {name.lower() for name, _ in headers}
    assert {"authorization", "amz-sdk-invocation-id", "amz-sdk-request", "user-agent"} <= names
    assert header_app_ids(headers) == [
        AppId(
            name="X-Amzn-Trace-Id",
            value="Root=1-9ddb1876-6e0f1537999198b967402e22;Parent=3d32c631b5f37173;Sampled=1",
            location="request header X-Amzn-Trace-Id",
            kind="trace",
        )
    ]


@pytest.mark.parametrize(
    ("path", "present"),
    [
        (  # X-Amzn-Bedrock-Trace: ENABLED is a switch, not an id
            OPENLLMETRY / "opentelemetry-instrumentation-bedrock/tests/traces/cassettes"
            "/test_nova/test_nova_completion.yaml",
            "x-amzn-bedrock-trace",
        ),
        (  # MCP's session id belongs to apis.mcp.calls
            PYDANTIC / "cassettes/test_mcp/test_agent_run_stream_with_mcp_server_http.yaml",
            "mcp-session-id",
        ),
        (  # traceparent is W3C (trace.context), x-stainless-* is SDK metadata
            OPENLLMETRY / "opentelemetry-instrumentation-openai/tests/traces/cassettes"
            "/test_chat_response_format/test_chat_response_format.yaml",
            "traceparent",
        ),
    ],
)
def test_headers_that_are_not_app_ids(path: Path, present: str) -> None:
    exchanges = list(_exchanges(path))
    headers = [h for x in exchanges if x.request is not None for h in x.request.headers]
    assert present in {name.lower() for name, _ in headers}
    assert [
        a for x in exchanges if x.request is not None for a in header_app_ids(x.request.headers)
    ] == []


def test_whole_corpus_sweep() -> None:
    """Every request of every cassette: what is taken, by name and place."""
    if not CORPUS.exists():
        pytest.skip(f"no corpus at {CORPUS}")
    headers: Counter[tuple[str, str]] = Counter()
    bodies: Counter[tuple[str, str]] = Counter()
    for path in CORPUS.rglob("*.yaml"):
        try:
            doc = yaml.load(path.read_bytes(), Loader=yaml.CSafeLoader)
        except yaml.YAMLError:
            continue
        if not isinstance(doc, dict):
            continue
        for x in _read(doc, path.name):
            if x.request is not None:
                headers.update((a.name, a.kind) for a in header_app_ids(x.request.headers))
                bodies.update(
                    (a.location, a.kind) for a in body_app_ids(ExchangeView(x).request_json)
                )
    assert set(headers) == {("X-Amzn-Trace-Id", "trace")}
    assert set(bodies) == {
        ("request body session_id", "session"),
        ("request body run_id", "run"),
        ("request body conversation", "conversation"),
        ("request body user", "user"),
        ("request body metadata.user_id", "user"),
    }


# -- the name rule ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("x-session-id", "session"),
        ("Session-Id", "session"),
        ("X-Claude-Code-Session-Id", "session"),
        ("x-claude-code-agent-id", "agent"),
        ("x-run-id", "run"),
        ("x-turn-id", "turn"),
        ("x-task-id", "task"),
        ("x-conversation-id", "conversation"),
        ("thread-id", "thread"),
        ("x-user-id", "user"),
        ("x-trace-id", "trace"),
        ("trace_id", "trace"),
        ("x-client-request-id", "request"),
        ("x-request-id", "request"),
        ("X-SessionId", "session"),
        ("x-session-uuid", "session"),
    ],
)
def test_header_names_taken(name: str, kind: str) -> None:
    assert header_app_ids([(name, "v-1")]) == [
        AppId(name=name, value="v-1", location=f"request header {name}", kind=kind)
    ]


@pytest.mark.parametrize(
    "name",
    [
        "user-agent",
        "authorization",
        "x-api-key",
        "cookie",
        "x-session-token",
        "x-auth-session-id",
        "x-session-key-id",
        "x-stainless-session-id",
        "x-stainless-retry-count",
        "mcp-session-id",
        "traceparent",
        "tracestate",
        "baggage",
        "content-type",
        "anthropic-version",
        "openai-beta",
        "x-goog-user-project",
        "x-amzn-bedrock-trace",
        "amz-sdk-invocation-id",
        "x-session",
        "session",
        "x-id",
        "x-runtime-id",
    ],
)
def test_header_names_not_taken(name: str) -> None:
    assert header_app_ids([(name, "v-1")]) == []


def test_header_values_empty_or_too_long_are_skipped() -> None:
    assert header_app_ids([("x-session-id", ""), ("x-run-id", "  ")]) == []
    assert header_app_ids([("x-session-id", "s" * 513)]) == []
    assert len(header_app_ids([("x-session-id", "s" * 512)])) == 1


def test_body_shapes() -> None:
    body = {
        "model": "m",
        "session_id": "sess-1001",
        "turn_id": "turn-07",
        "task_id": "task-weather-01",
        "runId": 42,
        "conversation": {"id": "conv_1"},
        "previous_response_id": "resp_1",
        "prompt_cache_key": "cache-1",
        "user": "u-1",
        "metadata": {
            "user_id": "user_ab_account_cd_session_ef",
            "tag": "x",
            "deep": {"run_id": "r"},
        },
    }
    assert [(a.name, a.value, a.location, a.kind) for a in body_app_ids(body)] == [
        ("session_id", "sess-1001", "request body session_id", "session"),
        ("turn_id", "turn-07", "request body turn_id", "turn"),
        ("task_id", "task-weather-01", "request body task_id", "task"),
        ("runId", "42", "request body runId", "run"),
        ("conversation", "conv_1", "request body conversation.id", "conversation"),
        ("user", "u-1", "request body user", "user"),
        ("user_id", "user_ab_account_cd_session_ef", "request body metadata.user_id", "user"),
    ]


@pytest.mark.parametrize(
    "body",
    [
        None,
        "session_id",
        [{"session_id": "s"}],
        {"session_id": True},
        {"session_id": 1.5},
        {"session_id": None},
        {"session_id": ["s"]},
        {"user": {"id": "u"}},
        {"conversation": {"id": 7.0}},
        {"metadata": ["user_id"]},
        {"params": {"task_id": "t"}},
        {"messages": [{"session_id": "s"}]},
        {"api_key_id": "k"},
    ],
)
def test_bodies_without_app_ids(body: Json) -> None:
    assert body_app_ids(body) == []


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                ["user", "conversation", "metadata", "request", "session_id", "id", "x"]
            )
            | st.text(max_size=12),
            inner,
            max_size=5,
        )
    ),
    max_leaves=20,
)


@given(_JSON)
def test_any_json_gives_app_ids_with_text_values(body: Json) -> None:
    for a in body_app_ids(body):
        assert isinstance(a.value, str)
        assert 0 < len(a.value) <= 512
        assert a.kind in KINDS
        assert a.location.startswith("request body ")
