"""Secrets never leave: headers, URL parameters and credentials inside body text."""

from __future__ import annotations

import pytest

from agentshark.output.redact import REDACTED, redact_headers, redact_text, redact_url


def test_secret_headers_any_case_keep_their_scheme() -> None:
    headers = [
        ("Authorization", "Bearer sk-proj-abcdefghijklmnop"),
        ("x-api-key", "sk-ant-api03-xyz"),
        ("API-Key", "abc123"),
        ("X-Goog-Api-Key", "AIzaSyA-1234567890"),
        ("Cookie", "session=1"),
        ("set-cookie", "id=2; HttpOnly"),
        ("Proxy-Authorization", "Basic dXNlcjpwYXNz"),
        ("Content-Type", "application/json"),
    ]
    out = redact_headers(headers)
    assert out[0] == ["Authorization", f"Bearer {REDACTED}"]
    assert out[6] == ["Proxy-Authorization", f"Basic {REDACTED}"]
    assert all(v == REDACTED for _, v in out[1:6])
    assert out[7] == ["Content-Type", "application/json"]


@pytest.mark.parametrize(
    ("url", "kept"),
    [
        (
            "https://generativelanguage.googleapis.com/v1beta/models/g:generateContent?key=AIzaXYZ",
            "/v1beta/models/g:generateContent",
        ),
        ("https://x.example/a?alt=sse&api_key=secret&x=1", "alt=sse"),
        ("https://s3.example/o?X-Amz-Signature=abc&X-Amz-Credential=AKIA", "/o"),
    ],
)
def test_url_parameters(url: str, kept: str) -> None:
    out = redact_url(url)
    assert kept in out
    assert "AIzaXYZ" not in out and "secret" not in out and "AKIA" not in out
    assert "REDACTED" in out


def test_url_without_secrets_is_unchanged() -> None:
    url = "http://127.0.0.1:8000/v1/chat/completions?api-version=2024-10-21"
    assert redact_url(url) == url


def test_credentials_in_body_text() -> None:
    text = (
        '{"headers": {"Authorization": "Bearer eyJhbGciOiJIUzI1NiJ9.payload.sig"}, '
        '"api_key": "my-very-secret", "note": "key sk-ant-api03-AAAAAAAAAAAAAAAA here", '
        '"goog": "AIzaSyDaGmWKa4JsXZ-HjGw7ISLn_3namBGewQe"}'
    )
    out = redact_text(text)
    for secret in ("eyJhbGci", "my-very-secret", "sk-ant-api03", "AIzaSyDaGm"):
        assert secret not in out
    assert '"note": "key' in out and out.count(REDACTED) == 4


def test_ordinary_text_is_untouched() -> None:
    text = '{"choices": [{"delta": {"content": "Bearer of good news: skies are clear"}}]}'
    assert redact_text(text) == text
