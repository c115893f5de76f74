"""Secrets never leave: redaction of credentials in headers, URLs and body text.

Applied by every writer unless the user asks for ``--no-redact``. A redacted value keeps a
short, harmless hint of its shape (scheme word, length) so a reader can still tell two
credentials apart from none.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from agentshark.model import Headers

SECRET_HEADERS = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "x-api-key",
        "api-key",
        "x-goog-api-key",
        "cookie",
        "set-cookie",
        "x-amz-security-token",
        "x-auth-token",
        "x-access-token",
        "openai-organization-key",
        "anthropic-api-key",
        "x-upstream-api-key",
        "ocp-apim-subscription-key",
    }
)
SECRET_PARAMS = frozenset(
    {
        "key",
        "api_key",
        "apikey",
        "api-key",
        "access_token",
        "token",
        "auth",
        "sig",
        "signature",
        "x-amz-signature",
        "x-amz-security-token",
        "x-amz-credential",
        "client_secret",
        "password",
    }
)
# Bearer tokens and well-known key shapes anywhere in text.
_TEXT_SECRETS = re.compile(
    r"(?i)(\bbearer\s+)[A-Za-z0-9._~+/=-]{8,}"
    r"|\b(sk-(?:ant-|proj-)?[A-Za-z0-9_-]{12,})"
    r"|\b(AIza[0-9A-Za-z_-]{30,})"
    r"|(\"(?:api_?key|access_token|authorization|x-api-key|client_secret|password)\"\s*:\s*\")"
    r"[^\"]{4,}(\")"
)

REDACTED = "[REDACTED]"


def redact_value(name: str, value: str) -> str:
    if name.lower() not in SECRET_HEADERS:
        return value
    scheme, sep, _ = value.partition(" ")
    if sep and scheme.isalpha() and len(scheme) < 16:
        return f"{scheme} {REDACTED}"
    return REDACTED


def redact_headers(headers: Headers) -> list[list[str]]:
    return [[k, redact_value(k, v)] for k, v in headers]


def redact_url(url: str) -> str:
    if "?" not in url:
        return url
    parts = urlsplit(url)
    if not parts.query:
        return url
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    if not any(k.lower() in SECRET_PARAMS for k, _ in pairs):
        return url
    query = urlencode([(k, REDACTED if k.lower() in SECRET_PARAMS else v) for k, v in pairs])
    return urlunsplit(parts._replace(query=query))


def redact_text(text: str) -> str:
    """Bearer tokens, provider API keys and JSON credential fields inside body text."""
    return _TEXT_SECRETS.sub(_replace, text)


def _replace(m: re.Match[str]) -> str:
    if m.group(1):
        return m.group(1) + REDACTED
    if m.group(4):
        return m.group(4) + REDACTED + m.group(5)
    return REDACTED
