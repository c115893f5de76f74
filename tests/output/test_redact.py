"""The one redaction policy: names, shapes, URL parameters, marks, and what stays."""

from __future__ import annotations

import io
import re

import pytest

from agentshark.output.redact import (
    NO_REDACTION,
    REDACTED,
    REDACTION,
    is_secret_name,
    mark,
    redact_headers,
    redact_text,
    redact_url,
)

# Fake secrets of every shape, made for these tests.
SHAPES = {
    "sk-proj-": "sk-proj-Qw3rTy7uIoP9aSdF2gHjK4lZxCvB",
    "sk-svcacct-": "sk-svcacct-Zx8cV7bN6mQ5wE4rT3yU2iO1",
    "sk-ant-": "sk-ant-api03-Lk9jH8gF7dS6aP5oI4uY3tR2eW1q",
    "sk-": "sk-Aa1Bb2Cc3Dd4Ee5Ff6Gg7Hh8Ii9Jj0Kk",
    "AIza": "AIzaSyB1c2D3e4F5g6H7i8J9k0L1m2N3o4P5q6R",
    "AKIA": "AKIAQ3EGRQ7WXN5UF2MZ",
    "ASIA": "ASIAY34FZKBOKMUTVV7A",
    "ghp_": "ghp_R4nd0mT0k3nF0rT3st1ngOnlyAbCdEf123456",
    "gho_": "gho_R4nd0mT0k3nF0rT3st1ngOnlyAbCdEf123456",
    "github_pat_": "github_pat_11AAAAAAA0aBcDeFgHiJkL_mNoPqRsTuVwXyZ0123456789",
    "xoxb-": "xoxb-1234567890-0987654321-AbCdEfGhIjKl",
    "sk_live_": "sk_live_51H8xYzAbCdEfGhIjKlMnOpQr",
    "rk_test_": "rk_test_51H8xYzAbCdEfGhIjKlMnOpQr",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP",
}


@pytest.mark.parametrize("kind", sorted(SHAPES))
def test_token_shapes_in_any_text_keep_kind_and_digest(kind: str) -> None:
    secret = SHAPES[kind]
    out = redact_text(f"the reply said {secret}. Next sentence.")
    assert secret not in out and secret[len(kind) :][:12] not in out
    assert re.search(rf"\[REDACTED {re.escape(kind)}… \d+\+:[0-9a-f]{{4}}\]", out), out
    assert out.startswith("the reply said [REDACTED") and out.endswith(". Next sentence.")


def test_equal_secrets_have_equal_marks_and_others_differ() -> None:
    a, b = SHAPES["sk-proj-"], SHAPES["sk-proj-"][:-1] + "X"
    assert mark(a, "sk-proj-") == mark(a, "sk-proj-")
    assert mark(a, "sk-proj-") != mark(b, "sk-proj-")
    # the header form and the text form of one key carry the same digest
    header = REDACTION.header("Authorization", f"Bearer {a}")
    assert header.removeprefix("Bearer ") == redact_text(a)


def test_short_named_values_get_no_digest() -> None:
    assert mark("hunter2") == f"{REDACTED} 4+]"
    assert re.fullmatch(r"\[REDACTED 32\+:[0-9a-f]{4}\]", mark("x" * 40))


def test_secret_headers_by_name_pattern() -> None:
    headers = [
        ("Authorization", f"Bearer {SHAPES['sk-proj-']}"),
        ("x-api-key", "plain-key-value-123"),
        ("X-Agentops-Api-Key", "3f0a9c1e-5b7d-4e2f-9a8b-1c2d3e4f5a6b"),
        ("X-Goog-Api-Key", SHAPES["AIza"]),
        ("x-auth-token", "abc123"),
        ("X-Client-Secret", "s3cr3t"),
        ("Proxy-Authorization", "Basic dXNlcjpwYXNz"),
        ("x-amz-security-token", "FwoGZXIvYXdzEJr"),
        ("Cookie", "session=abc123def; theme=dark"),
        ("set-cookie", "id=2f9a; HttpOnly; Path=/"),
    ]
    out = {pair[0]: pair[1] for pair in redact_headers(headers)}
    secrets = {"Cookie": "abc123def", "set-cookie": "2f9a"}
    for name, value in headers:
        assert secrets.get(name, value.split(" ")[-1]) not in out[name], name
        assert REDACTED in out[name]
    assert out["Authorization"].startswith("Bearer [REDACTED sk-proj-…")
    assert out["Proxy-Authorization"].startswith("Basic [REDACTED")
    assert out["Cookie"].startswith("session=[REDACTED") and "; theme=[REDACTED" in out["Cookie"]
    assert out["set-cookie"].endswith("; HttpOnly; Path=/")


@pytest.mark.parametrize(
    "name",
    [
        ":authority",
        "content-type",
        "x-ratelimit-remaining-tokens",
        "anthropic-ratelimit-input-tokens-limit",
        "www-authenticate",
        "mcp-session-id",
        "idempotency-key",
        "access-control-allow-credentials",
        "max_tokens",
        "maxOutputTokens",
        "usage.input_tokens",
        "totalTokenCount",
        "token_count",
        "tokenizer",
        "auth_type",
        "token_type",
        "author",
        "progressToken",
    ],
)
def test_names_that_are_not_credentials(name: str) -> None:
    assert not is_secret_name(name)


@pytest.mark.parametrize(
    "name",
    [
        "authorization",
        "api_key",
        "apiKey",
        "x-agentops-api-key",
        "github_token",
        "access_token",
        "refresh_token",
        "client_secret",
        "password",
        "db_passwd",
        "aws_credentials",
        "cookie",
        "x-amz-signature",
        "session_token",
        "private_key",
        "ocp-apim-subscription-key",
        "oauth",
    ],
)
def test_names_that_are_credentials(name: str) -> None:
    assert is_secret_name(name)


def test_json_keys_at_any_depth_and_json_held_in_strings() -> None:
    value = {
        "model": "gpt-4o",
        "max_tokens": 100,
        "usage": {"input_tokens": 5, "output_tokens": 7},
        "tools": [{"params": {"arguments": {"password": "pw", "city": "Paris"}}}],
        "auth": {"user": "alice", "pass": "b0b"},
        "arguments": '{"github_token": "tok-1", "repo": "x/y"}',
        "nested": '{"cfg": {"credentials": {"user": "u", "key": "k"}}, "n": 1}',
        "headers": [["X-Api-Key", "k-123456"], ["accept", "*/*"]],
        "har": [{"name": "Authorization", "value": "Bearer abcdef123456"}],
        "logprobs": [{"token": "Hello", "logprob": -0.1}],
        "thinking": {"type": "thinking", "signature": "EqQBCkYIBxgC"},
        "enabled": True,
        "password": 1234,
        "schema": {"properties": {"next_page_token": {"type": "string", "title": "Token"}}},
    }
    out = REDACTION.json(value)
    text = str(out)
    for secret in ("'pw'", "alice", "b0b", "tok-1", "k-123456", "abcdef123456", "'u'", "'k'"):
        assert secret not in text, secret
    assert out["max_tokens"] == 100 and out["usage"] == value["usage"]
    assert out["tools"][0]["params"]["arguments"]["city"] == "Paris"
    assert out["arguments"].startswith('{"github_token": "[REDACTED') and '"repo": "x/y"' in text
    assert out["headers"][1] == ["accept", "*/*"]
    assert out["logprobs"] == value["logprobs"]
    assert out["thinking"] == value["thinking"]
    assert out["password"] == 1234 and out["enabled"] is True
    assert out["schema"] == value["schema"]  # parameter names of a JSON Schema, not values
    assert value["auth"] == {"user": "alice", "pass": "b0b"}  # the input is not changed


@pytest.mark.parametrize(
    ("url", "kept", "secret"),
    [
        (
            f"https://generativelanguage.googleapis.com/v1beta/models/g:generateContent?key={SHAPES['AIza']}&alt=sse",
            "/v1beta/models/g:generateContent?key=[REDACTED AIza…",
            SHAPES["AIza"],
        ),
        ("https://x.example/a?alt=sse&api_key=hunter2&x=1", "alt=sse&api_key=[REDACTED", "hunter2"),
        ("https://s3.example/o?X-Amz-Signature=abc123&X-Amz-Credential=AKIA", "/o?", "abc123"),
        ("/v1/models?access_token=ya29.a0Af", "/v1/models?access_token=[REDACTED", "ya29"),
    ],
)
def test_url_parameters(url: str, kept: str, secret: str) -> None:
    out = redact_url(url)
    assert kept in out and secret not in out
    inside = redact_text(f"GET {url} failed")
    assert secret not in inside and inside.endswith(" failed")


def test_url_without_secrets_is_unchanged() -> None:
    url = "http://127.0.0.1:8000/v1/chat/completions?api-version=2024-10-21&alt=sse"
    assert redact_url(url) == url


def test_credentials_echoed_in_error_messages() -> None:
    messages = [
        "Invalid API key: k3y-abcdef0123",
        "invalid x-api-key: 0f0e1d2c3b4a",
        "Authorization: Bearer abcdefgh12345678 was refused",
        'upstream said {"error": {"message": "bad", "api_key": "my-very-secret"}}',
        "password=S3cretPass!",
    ]
    for msg in messages:
        out = redact_text(msg)
        assert REDACTED in out, msg
    assert "k3y-abcdef0123" not in redact_text(messages[0])
    assert "abcdefgh12345678" not in redact_text(messages[2])
    assert "my-very-secret" not in redact_text(messages[3])


@pytest.mark.parametrize(
    "text",
    [
        '{"choices": [{"delta": {"content": "Bearer of good news: skies are clear"}}]}',
        "Bearer authentication is described in RFC 6750; password: required",
        "a task-abcdefghijklmnopqrstuvwxyz and risk-free-offers-abcdefghijklmnop",
        '{"max_tokens": 100, "input_tokens": 12, "token_count": 3, "author": "me"}',
        "see https://example.com/search?q=token+limits&page=2",
        "register(space_id=SPACE_ID, api_key=API_KEY) with token: ${TOKEN} or os.getenv(KEY)",
    ],
)
def test_ordinary_text_is_untouched(text: str) -> None:
    assert redact_text(text) == text


def test_marks_are_stable_when_redacted_again() -> None:
    once = REDACTION.json(
        {"h": [["authorization", "Bearer " + SHAPES["sk-"]]], "t": SHAPES["ghp_"]}
    )
    assert REDACTION.json(once) == once


def test_stream_redacts_every_line_and_no_redaction_is_identity() -> None:
    sink = io.StringIO()
    out = REDACTION.stream(sink)
    out.write(f"error 401: {SHAPES['sk-ant-']}\n")
    out.write("plain\n")
    assert SHAPES["sk-ant-"] not in sink.getvalue() and sink.getvalue().endswith("plain\n")
    assert NO_REDACTION.stream(sink) is sink
    value = {"api_key": "x" * 30}
    assert NO_REDACTION.json(value) is value and NO_REDACTION.text(SHAPES["sk-"]) == SHAPES["sk-"]


def test_a_key_prefix_inside_a_word_of_a_long_text_is_no_trigger() -> None:
    """Queue payloads are long and full of ids such as ``task-0001``: ``sk-`` inside a word
    starts no key shape (they match after a word boundary), so such a text skips the slow
    scan; a key at a word's start in the same text is still redacted."""
    from agentshark.output.redact import _maybe_secret

    filler = "lorem ipsum dolor sit amet " * 30
    assert not _maybe_secret(f'{{"id": "task-0001", "work_item": 3, "text": "{filler}"}}')
    key = "sk-" + "A1b2C3d4" * 4
    for text in (f"{filler} {key}", f"{filler}-{key}", f"{key} {filler}"):
        assert _maybe_secret(text)
        assert key not in REDACTION.json({"text": text})["text"]
