"""The benchmark's pool: every distinct replayable 200-status exchange of the corpus cassettes
for the chosen API families, built once and cached in ``bench/out/``.

Families (``--families`` of ``bench/make_capture.py``, comma-separated, or ``all``):

* ``openai``: POST ``/v1/chat/completions`` and ``/v1/responses``; ``anthropic``: POST
  ``/v1/messages`` (gateway prefixes such as ``/openai/v1/...`` normalized to ``/v1/...``).
  These two are the default, and the default pool (``pool.json``) is exactly the one the
  figures in ``bench/README.md`` were measured on: same rules, same order, ``POOL_VERSION``.
* ``gemini``: POST ``.../models/<m>:generateContent`` and ``:streamGenerateContent`` (Google AI
  Studio ``/v1beta/models/...`` and Vertex AI ``.../publishers/google/models/...`` paths as
  recorded), with the recorded query (``alt=sse``, ``$alt=json;enum-encoding=int``) minus any
  ``key=`` parameter: the client requests it and the server matches it.
* ``bedrock``: POST ``/model/<id>/converse``, ``/converse-stream``, ``/invoke`` and
  ``/invoke-with-response-stream``, the model id URL-encoded as recorded (``%3A`` stays).

The new families' streams are cut where the real server writes (``chunk_ends`` in the entry,
see :mod:`streams`): SSE one event per write, a JSON-array stream one element per write, an AWS
event stream one frame per write (byte-exact). Pools other than the default go to
``pool_<tag>.json`` (``FAMILY_POOL_VERSION``). Each skipped exchange is counted with its reason
in the pool's ``skipped`` and logged.
"""

from __future__ import annotations

import base64
import collections
import hashlib
import json
import re
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import genlib
import streams

FAMILIES = ("openai", "anthropic", "gemini", "bedrock")
DEFAULT_FAMILIES = ("openai", "anthropic")
PATH_SUFFIXES = ("/v1/chat/completions", "/v1/responses", "/v1/messages")
MAX_BODY_BYTES = 4 * 1024 * 1024
POOL_VERSION = 1  # the default pool's rules: bump only when pool.json's content changes
FAMILY_POOL_VERSION = 1  # the rules of the gemini/bedrock entries

_GEMINI_PATH = re.compile(r"/models/[^/:]+:(generateContent|streamGenerateContent)\Z")
_BEDROCK_PATH = re.compile(
    r"\A/model/[^/]+/(converse|converse-stream|invoke|invoke-with-response-stream)\Z"
)
_BEDROCK_REGION = re.compile(r"bedrock-runtime(?:-fips)?\.([a-z0-9-]+)\.amazonaws\.com")

FAKE_GOOGLE_API_KEY = "AIzaSy" + "EXAMPLE-not-a-real-key".ljust(33, "0")
FAKE_GOOGLE_OAUTH = "Bearer ya29.example-not-a-real-token"
FAKE_AWS_ACCESS_KEY = "AKIAIOSFODNN7EXAMPLE"
FAKE_AWS_SESSION_TOKEN = "IQoJb3JpZ2luX2VjEXAMPLE-not-a-real-session-token"
FAKE_SIGV4_SIGNATURE = "0123456789abcdef" * 4
DEFAULT_AMZ_DATE = "20260101T000000Z"

# What an SDK sends about itself, copied per family (credentials, host, framing never).
_GEMINI_REQUEST_KEEP = ("accept", "user-agent", "x-goog-api-client", "x-goog-user-project")
_BEDROCK_REQUEST_KEEP = (
    "accept",
    "user-agent",
    "content-type",
    "amz-sdk-invocation-id",
    "amz-sdk-request",
    "x-amzn-trace-id",
)
_BEDROCK_REQUEST_KEEP_PREFIX = ("x-amzn-bedrock-",)
_FAMILY_RESPONSE_KEEP = ("content-type", "content-encoding", "x-amzn-requestid")
_FAMILY_RESPONSE_KEEP_PREFIX = ("x-amzn-bedrock-",)


def parse_families(text: str) -> tuple[str, ...]:
    """``--families``: comma-separated names of :data:`FAMILIES`, or ``all``; returned in the
    order of :data:`FAMILIES`. Raises ValueError on an unknown name or an empty list."""
    names = {n.strip().lower() for n in text.split(",") if n.strip()}
    if "all" in names:
        return FAMILIES
    unknown = names - set(FAMILIES)
    if unknown or not names:
        raise ValueError(f"unknown families {sorted(unknown)} (known: {', '.join(FAMILIES)}, all)")
    return tuple(f for f in FAMILIES if f in names)


def families_tag(families: Sequence[str]) -> str:
    """The name part of a pool and a capture: '' for the default, ``all`` for every family,
    else the names joined by ``_`` (``gemini_bedrock``)."""
    if tuple(families) == DEFAULT_FAMILIES:
        return ""
    return "all" if tuple(families) == FAMILIES else "_".join(families)


def pool_file(families: Sequence[str]) -> str:
    tag = families_tag(families)
    return f"pool_{tag}.json" if tag else "pool.json"


def entry_family(entry: genlib.PoolEntry) -> str:
    """An entry's family (entries of the default pool carry none: told by their path)."""
    if "family" in entry:
        return entry["family"]
    return "anthropic" if entry["path"].endswith("/v1/messages") else "openai"


def entry_target(entry: genlib.PoolEntry) -> str:
    """What the client requests and the server matches: the path with the recorded query."""
    query = entry.get("query", "")
    return f"{entry['path']}?{query}" if query else entry["path"]


# --------------------------------------------------------------------------- matching


def _legacy_match(uri: str, families: Sequence[str]) -> str | None:
    """The normalized path of an OpenAI/Anthropic endpoint (the default pool's rule)."""
    suffix = next((s for s in PATH_SUFFIXES if uri.split("?")[0].endswith(s)), None)
    if suffix is None:
        return None
    family = "anthropic" if suffix == "/v1/messages" else "openai"
    return suffix if family in families else None


def _family_match(uri: str, families: Sequence[str]) -> tuple[str, str, str, str] | None:
    """(family, path, query, framing) of a Gemini or Bedrock Runtime endpoint, framing one of
    ``json``, ``sse``, ``json-array``, ``eventstream`` (what the response should be)."""
    parts = urlsplit(uri)
    query = "&".join(p for p in parts.query.split("&") if p and not p.startswith("key="))
    if "gemini" in families and (m := _GEMINI_PATH.search(parts.path)):
        if m.group(1) == "generateContent":
            return "gemini", parts.path, query, "json"
        sse = "alt=sse" in parts.query.split("&")
        return "gemini", parts.path, query, "sse" if sse else "json-array"
    if "bedrock" in families and (m := _BEDROCK_PATH.match(parts.path)):
        stream = m.group(1) in ("converse-stream", "invoke-with-response-stream")
        return "bedrock", parts.path, query, "eventstream" if stream else "json"
    return None


# --------------------------------------------------------------------------- family entries


def _family_request_headers(
    family: str, pairs: list[tuple[str, str]], path: str, host: str
) -> list[list[str]]:
    """The SDK's self-description from the cassette and a fake credential of the right kind:
    ``x-goog-api-key`` (AI Studio) or an OAuth Bearer (Vertex AI ``/projects/`` paths) for
    Gemini; a SigV4 ``Authorization`` with ``X-Amz-Date`` (and ``X-Amz-Security-Token`` when
    the recording had one) for Bedrock."""
    out: list[list[str]] = []
    keep = _GEMINI_REQUEST_KEEP if family == "gemini" else _BEDROCK_REQUEST_KEEP
    prefixes = () if family == "gemini" else _BEDROCK_REQUEST_KEEP_PREFIX
    names = {k.lower() for k, _ in pairs}
    for name, value in pairs:
        low = name.lower()
        if low in keep or low.startswith(prefixes):
            out.append([low, value])
    if not any(h[0] == "content-type" for h in out):
        out.append(["content-type", "application/json"])
    if family == "gemini":
        if "/projects/" in path:
            out.append(["authorization", FAKE_GOOGLE_OAUTH])
        else:
            out.append(["x-goog-api-key", FAKE_GOOGLE_API_KEY])
        return out
    amz_date = next((v for k, v in pairs if k.lower() == "x-amz-date"), DEFAULT_AMZ_DATE)
    m = _BEDROCK_REGION.search(host)
    scope = f"{amz_date[:8]}/{m.group(1) if m else 'us-east-1'}/bedrock/aws4_request"
    signed = "content-type;host;x-amz-date"
    out.append(["x-amz-date", amz_date])
    if "x-amz-security-token" in names:
        out.append(["x-amz-security-token", FAKE_AWS_SESSION_TOKEN])
        signed += ";x-amz-security-token"
    out.append(
        [
            "authorization",
            f"AWS4-HMAC-SHA256 Credential={FAKE_AWS_ACCESS_KEY}/{scope}, "
            f"SignedHeaders={signed}, Signature={FAKE_SIGV4_SIGNATURE}",
        ]
    )
    return out


def _family_response_headers(pairs: list[tuple[str, str]], gzipped: bool) -> list[list[str]]:
    out: list[list[str]] = []
    for name, value in pairs:
        low = name.lower()
        if low not in _FAMILY_RESPONSE_KEEP and not low.startswith(_FAMILY_RESPONSE_KEEP_PREFIX):
            continue
        if (low == "content-encoding" and not gzipped) or any(h[0] == low for h in out):
            continue
        out.append([low, value])
    return out


def family_entry(
    interaction: dict[str, Any], source: str, match: tuple[str, str, str, str], entry_id: int
) -> tuple[genlib.PoolEntry | None, str]:
    """A replayable Gemini/Bedrock entry, or None and the reason it is not one."""
    family, path, query, framing = match
    request, response = interaction["request"], interaction.get("response")
    if not isinstance(response, dict):
        return None, "no response"
    status = (response.get("status") or {}).get("code")
    if status != 200:
        return None, "status is not 200"
    req_text = genlib.request_body_text(request)
    body = genlib.recorded_response_body(response)
    if req_text is None or not body:
        return None, "no request body" if req_text is None else "no response body"
    rpairs = genlib.header_pairs(response.get("headers"))
    ctype = genlib.first_header(rpairs, "content-type") or ""
    cut = streams.cut(body, framing, ctype)
    if isinstance(cut, str):
        return None, cut
    headers = _family_response_headers(rpairs, cut.gzipped)
    if not any(h[0] == "content-type" for h in headers):
        headers.insert(0, ["content-type", cut.content_type])
    binary = cut.gzipped or framing == "eventstream"
    entry = genlib.PoolEntry(
        id=entry_id,
        source=source,
        method="POST",
        path=path,
        req_headers=_family_request_headers(
            family,
            genlib.header_pairs(request.get("headers")),
            path,
            urlsplit(str(request.get("uri", ""))).netloc,
        ),
        req_body=genlib.scrub_secrets(req_text),
        status=200,
        resp_headers=headers,
        resp_body=base64.b64encode(cut.body).decode() if binary else cut.body.decode("utf-8"),
        resp_b64=binary,
        sse=framing == "sse",
        family=family,
        query=query,
        framing=framing,
    )
    if framing != "json":
        entry["chunk_ends"] = cut.ends
    return entry, ""


# --------------------------------------------------------------------------- the pool


def manifest_digest(corpus: Path) -> str:
    return hashlib.sha256((corpus / "manifest.jsonl").read_bytes()).hexdigest()


def _cassette_files(corpus: Path) -> list[str]:
    files: list[str] = []
    with (corpus / "manifest.jsonl").open() as f:
        for line in f:
            item = json.loads(line)
            if item.get("format") == "vcr-yaml":
                files.append(item["file"])
    return sorted(files)


def build_pool(corpus: Path, families: Sequence[str] = DEFAULT_FAMILIES) -> dict[str, Any]:
    """Every distinct 200-status exchange of ``families`` in the corpus cassettes, keyed by
    what the client requests (path and query) and its body; the default families give the
    default pool exactly."""
    t0 = time.monotonic()
    entries: list[genlib.PoolEntry] = []
    seen: set[tuple[str, str]] = set()
    cassettes: set[str] = set()
    skipped: collections.Counter[str] = collections.Counter()
    for rel in _cassette_files(corpus):
        try:
            interactions = genlib.load_cassette(corpus / rel)
        except Exception as exc:  # noqa: BLE001 - a cassette PyYAML cannot read is skipped
            genlib.log(f"skipping {rel}: {type(exc).__name__}")
            continue
        for i, it in enumerate(interactions):
            req = it["request"]
            uri = str(req.get("uri", ""))
            if str(req.get("method", "")).upper() != "POST":
                continue
            entry: genlib.PoolEntry | None
            if (suffix := _legacy_match(uri, families)) is not None:
                entry = genlib.entry_from_interaction(
                    it, f"{rel}#{i}", path=suffix, entry_id=len(entries)
                )
                if entry is None or entry["status"] != 200:
                    continue
            elif (match := _family_match(uri, families)) is not None:
                entry, why = family_entry(it, f"{rel}#{i}", match, len(entries))
                if entry is None:
                    skipped[f"{match[0]} {match[3]}: {why}"] += 1
                    continue
            else:
                continue
            if len(entry["req_body"]) > MAX_BODY_BYTES or len(entry["resp_body"]) > MAX_BODY_BYTES:
                skipped["body over 4 MiB"] += 1
                continue
            key = (entry_target(entry), entry["req_body"])
            if key in seen:
                continue
            seen.add(key)
            cassettes.add(rel)
            entries.append(entry)
    by_family = collections.Counter(entry_family(e) for e in entries)
    genlib.log(
        f"pool: {len(entries)} exchanges from {len(cassettes)} cassettes "
        f"({sum(e['sse'] for e in entries)} SSE) in {time.monotonic() - t0:.1f} s"
    )
    if tuple(families) != DEFAULT_FAMILIES:
        genlib.log(f"pool by family: {dict(by_family)}; skipped: {dict(skipped) or 'none'}")
    pool: dict[str, Any] = {
        "version": POOL_VERSION,
        "corpus": str(corpus),
        "manifest_sha256": manifest_digest(corpus),
        "cassettes": len(cassettes),
        "entries": entries,
    }
    if tuple(families) != DEFAULT_FAMILIES:
        pool["family_version"] = FAMILY_POOL_VERSION
        pool["families"] = list(families)
        pool["by_family"] = dict(by_family)
        pool["by_framing"] = dict(collections.Counter(e.get("framing", "") for e in entries))
        pool["skipped"] = dict(skipped)
    return pool


def load_pool(
    corpus: Path, pool_path: Path, rebuild: bool, families: Sequence[str] = DEFAULT_FAMILIES
) -> dict[str, Any]:
    """The cached pool at ``pool_path`` when it was built by these rules from this corpus
    manifest for these families, else a new one (written there)."""
    if pool_path.exists() and not rebuild:
        pool: dict[str, Any] = json.loads(pool_path.read_text())
        same = (
            pool.get("version") == POOL_VERSION
            and pool.get("manifest_sha256") == manifest_digest(corpus)
            and pool.get("families", list(DEFAULT_FAMILIES)) == list(families)
            and pool.get("family_version")
            == (None if tuple(families) == DEFAULT_FAMILIES else FAMILY_POOL_VERSION)
        )
        if same:
            return pool
    pool = build_pool(corpus, families)
    genlib.write_json(pool_path, pool)
    return pool
