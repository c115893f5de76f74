"""Secrets never leave: one redaction policy that every writer goes through.

A :class:`Redactor` has three entry points, and every writer uses them (the JSON report, the
``exchanges``/``calls``/``analyze`` text views, ``show``, and whatever comes later: OTLP, HTML,
Parquet):

* :meth:`Redactor.json` for structures: the report dicts of exchanges, calls, traces,
  incidents, connections and sources, before they are serialized;
* :meth:`Redactor.text` for strings a writer builds itself;
* :meth:`Redactor.stream` wraps a text output so that every complete line written to it goes
  through :meth:`Redactor.text`: a text view cannot forget. Writers still redact a value
  *before* they cut it to a column (a cut secret no longer has its shape).

``--no-redact`` gives :data:`NO_REDACTION`, whose entry points return their input unchanged.

The policy
----------
**Names.** A header, JSON key (at any depth: request bodies, tool arguments and results, MCP
params, span attributes, extras), URL query parameter or ``name``/``value`` pair (HAR, OTLP
attributes) is a credential when its name, lower-cased with ``-``, ``.`` and spaces read as
``_``, contains ``api_key``/``apikey``, ``token``, ``secret``, ``passw``/``passwd``/``pwd``,
``credential``, ``cookie``, ``signature``, ``auth`` (``authorization``, ``x-auth-token``,
``oauth``), ``private_key``, ``access_key``, ``subscription_key``, ``session_key``/
``session_token``/``session_secret``, ``x_amz_security``. URL parameters also count ``key``
and ``sig`` (Gemini's ``?key=``, presigned URLs). Not credentials, so that evidence stays:

* counts and limits: any name containing ``tokens`` (``max_tokens``, ``usage.*_tokens``,
  ``x-ratelimit-remaining-tokens``), ``tokenizer``, ``token_count``/``_type``/``_id``/``_usage``/
  ``_limit``/``_index``/``_logprob``/``_budget``;
* descriptions of a credential rather than the credential: names ending in ``_type``,
  ``_method``, ``_scheme``, ``_mode``, ``_url``/``_uri``/``_endpoint``, ``_required``,
  ``_enabled``, ``_expires*``/``_expiry``/``_ttl``, ``_length``/``_count``, ``_name``,
  ``_kind``, ``_provider``, ``_header``, ``_policy``, ``_source``, ``_path``/``_file``;
* ``author*``, ``authority`` (HTTP/2 ``:authority``), ``www-authenticate`` (a challenge);
* the JSON keys ``signature`` and ``thought_signature``/``thoughtSignature``: the integrity
  values of model reasoning (Anthropic thinking blocks, Gemini thoughts), replayed by clients
  as history; they prove nothing about a user and are evidence of replay. Other
  ``*signature*`` names, and ``signature`` in headers and URLs (SigV4, presigned URLs), are
  credentials;
* ``token`` in a logprob entry (a dict with a ``logprob`` key) is model output;
* ``Mcp-Session-Id`` and other session *identifiers* name a session that the analysis links
  by; only session keys, tokens and secrets (and every cookie) are redacted.

Numbers, booleans and null are never secrets. The keys of a JSON Schema ``properties`` object
(tool definitions: ``{"github_token": {"type": "string"}}``) name parameters, not values.
Under a credential name every string at any
depth is redacted; a header value keeps its scheme word (``Bearer [REDACTED …]``) and a cookie
keeps its names (``session=[REDACTED …]; theme=[REDACTED …]``).

**Shapes**, in any string whatever its name (message text, streamed replies, error messages
echoing a key, diagnostics): OpenAI ``sk-``/``sk-proj-``/``sk-svcacct-``/``sk-admin-``,
Anthropic ``sk-ant-``, Google ``AIza…``, AWS access key ids ``AKIA…``/``ASIA…``, GitHub
``ghp_``/``gho_``/``ghu_``/``ghs_``/``ghr_``/``github_pat_``, Slack ``xox[abposr]-``, Stripe
``sk_live_``/``rk_live_``/``sk_test_``/``rk_test_``, JWTs ``eyJ….eyJ….…``; the word after
``Bearer``/``Basic``/``Token``/``Digest``; a value after a credential label (``api key:``,
``password=``, ``"api_key": "…"`` inside JSON text); the secret parameters of every URL query
(``?key=…&alt=sse``), also inside text. Strings that hold JSON (tool arguments kept as sent)
are read as JSON when they carry a credential name, so a nested ``{"auth": {"password": …}}``
is found too. Words after a scheme and labelled values must look random (a digit, an inner
capital, or 32+ characters): "Bearer authentication" and "password: required" stay.

**The mark.** ``[REDACTED sk-proj-… 32+:3f2a]``: the shape's prefix (nothing for a named
value), the length class (a power of two: ``8+`` is 8 to 15 characters), and 4 hex digits of a
keyed BLAKE2b digest, so equal secrets stay recognizable across a report and across runs.
16 bits of a secret of 64+ random bits leak nothing useful; a short value (a password under 20
characters that has no token shape) has a small enough space that 16 bits would narrow a
dictionary attack, so it gets no digest: ``[REDACTED 8+]``. The digest key is
``AGENTSHARK_REDACT_KEY`` from the environment when set (digests then cannot be checked by
someone without it), else a fixed one.

**Streams.** A secret a server split across the deltas of several stream events (``--events``)
is found by reading the events' delta strings joined (:mod:`agentshark.output.redact_stream`);
a call's joined text is redacted as any string is.

**Base64.** A long base64 string or ``data:`` URI that carries UTF-8 text (an inline text
document) is decoded, redacted and encoded again; one that carries data (an image, a PDF)
costs one 3 KiB probe and stays (:mod:`agentshark.output.redact_base64`).
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
from collections.abc import Iterable
from typing import Any, TextIO, cast

import orjson

from agentshark.model import Headers
from agentshark.output.redact_base64 import redact_base64

REDACTED = "[REDACTED"  # every mark starts so; what follows says kind, length and digest
_KEY = os.environ.get("AGENTSHARK_REDACT_KEY", "agentshark-redact/1").encode()[:64]
_MIN_DIGEST = 20  # shorter values without a token shape get no digest (see the docstring)
_MIN_SECRET = 6  # no string shorter than this is searched for shapes

# --- names ----------------------------------------------------------------------------------

_STEMS = (
    r"api_?key|apikey|token|secret|passw|pwd|credential|cookie|signature|"
    r"auth(?!or(?:s|ed|ity|ities)?(?:_|$)|enticat)|private_?key|access_?key|"
    r"subscription_?key|session_?(?:key|token|secret)|x_amz_security"
)
_NAME_STEM = re.compile(_STEMS)
_NAME_NOT = re.compile(
    r"tokens|tokeniz|token_?(?:count|type|usage|limit|index|ids?|logprob|budget)|per_token|"
    r"progress_?token|"
    r"^access_control_|"
    r"_(?:type|method|scheme|mode|url|uri|endpoint|required|enabled|expires(?:_in|_at)?|expiry|"
    r"ttl|length|count|name|kind|provider|header|policy|source|path|file)$"
)
_JSON_NOT_SECRET = frozenset({"signature", "thought_signature", "thoughtsignature"})
_PARAM_EXTRA = frozenset({"key", "sig"})
_COOKIE_HEADERS = frozenset({"cookie", "set_cookie"})
# Authorization schemes (IANA HTTP Authentication Scheme Registry and common others): the
# word is kept, what follows is the credential.
_SCHEMES = frozenset(
    {
        *("basic", "bearer", "digest", "hoba", "mutual", "negotiate", "ntlm", "vapid", "dpop"),
        *("scram-sha-1", "scram-sha-256", "token", "apikey", "key", "sso-key", "gnap"),
        *("aws4-hmac-sha256", "privatetoken"),
    }
)


@functools.lru_cache(maxsize=4096)
def _norm(name: str) -> str:
    return name.lower().replace("-", "_").replace(".", "_").replace(" ", "_").lstrip(":")


@functools.lru_cache(maxsize=4096)
def is_secret_name(name: str) -> bool:
    """Whether a header, JSON key or parameter named ``name`` holds a credential."""
    n = _norm(name)
    return _NAME_STEM.search(n) is not None and _NAME_NOT.search(n) is None


def _is_secret_key(name: str) -> bool:
    return is_secret_name(name) and _norm(name) not in _JSON_NOT_SECRET


def _is_secret_param(name: str) -> bool:
    return _norm(name) in _PARAM_EXTRA or is_secret_name(name)


# --- shapes in text ---------------------------------------------------------------------------

_SHAPES = (
    r"sk-ant-[\w-]{16,}|sk-(?:proj|svcacct|admin)-[\w-]{16,}|sk-[A-Za-z0-9_-]{20,}"
    r"|[sr]k_(?:live|test)_[A-Za-z0-9]{16,}|AIza[\w-]{30,}|(?:AKIA|ASIA)[A-Z0-9]{16}"
    r"|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_\w{22,}|xox[abposr]-[A-Za-z0-9-]{10,}"
    r"|eyJ[\w-]{6,}\.eyJ[\w-]{6,}\.[\w-]*"
)
_SHAPE = re.compile(_SHAPES)
_PREFIX = re.compile(
    r"sk-ant-|sk-proj-|sk-svcacct-|sk-admin-|sk-|[sr]k_(?:live|test)_|AIza|AKIA|ASIA"
    r"|gh[pousr]_|github_pat_|xox[abposr]-|eyJ"
)
_LABELS = (
    r"api[ _-]?key|access[ _-]?key|secret[ _-]?key|private[ _-]?key|client[ _-]?secret"
    r"|password|passwd|secret|token|authorization"
)
# One pass over a string finds every kind; the callback tells them apart by group.
_TEXT = re.compile(
    rf"(?P<shape>\b(?:{_SHAPES}))"
    r"|(?P<scheme>\b(?i:bearer|basic|token|digest)\s+)(?P<cred>[A-Za-z0-9._~+/=-]{8,})"
    rf'|(?P<jkey>"(?P<jname>[\w.-]*?(?i:{_STEMS})[\w.-]*)"\s*:\s*")(?P<jval>(?:[^"\\]|\\.)*)"'
    rf"|(?P<label>\b(?i:{_LABELS})\b\s*(?:[:=]|\bis\b)\s*['\"]?)"
    r"(?!(?i:bearer|basic|token|digest)\s)(?P<lval>[^\s'\"<>,;&]{6,})"
    r"|(?P<qsep>[?&])(?P<qname>[\w.\[\]%-]{1,64})=(?P<qval>[^&\s\"'#<>]+)"
)
_JSONISH = re.compile(rf'"[\w.-]*?(?i:{_STEMS})[\w.-]*"\s*:\s*[\[{{"]')


def _looks_random(value: str) -> bool:
    """A value after a scheme word or label that can be a credential: 32+ characters, a
    digit, or mixed case; not code or a template (``API_KEY``, ``${TOKEN}``, ``os.getenv(``)."""
    if value[:1] in "$%{<" or "(" in value or "[" in value:
        return False
    return (
        len(value) >= 32
        or any(c.isdigit() for c in value)
        or (any(c.isupper() for c in value[1:]) and any(c.islower() for c in value))
    )


def _length_class(n: int) -> str:
    return f"{1 << (n.bit_length() - 1)}+" if n else "0"


def mark(secret: str, kind: str = "") -> str:
    """The mark that stands for ``secret``: ``[REDACTED <kind>… <length class>:<digest>]``."""
    size = _length_class(len(secret))
    head = f"{REDACTED} {kind}… {size}" if kind else f"{REDACTED} {size}"
    if kind or len(secret) >= _MIN_DIGEST:
        digest = hashlib.blake2b(secret.encode(), digest_size=2, key=_KEY).hexdigest()
        return f"{head}:{digest}]"
    return head + "]"


def _shape_mark(secret: str) -> str:
    prefix = _PREFIX.match(secret)
    kind = "jwt" if secret.startswith("eyJ") else (prefix.group() if prefix else "")
    return mark(secret, kind)


def _value_mark(value: str) -> str:
    """A credential found by its name: a shape keeps its kind, anything else is plain."""
    return _shape_mark(value) if _SHAPE.fullmatch(value) else mark(value)


def _replace(m: re.Match[str]) -> str:
    kind = m.lastgroup
    if m.group("shape") is not None:
        return _shape_mark(m.group("shape"))
    if m.group("cred") is not None:
        cred = m.group("cred")
        if not _looks_random(cred) and not _SHAPE.fullmatch(cred):
            return m.group("scheme") + _TEXT.sub(_replace, cred)
        return m.group("scheme") + _value_mark(cred)
    if m.group("jkey") is not None:
        value = m.group("jval")
        if not value or REDACTED in value or not _is_secret_key(m.group("jname")):
            return m.group("jkey") + _TEXT.sub(_replace, value) + '"'
        return m.group("jkey") + _value_mark(value) + '"'
    if m.group("lval") is not None:
        value = m.group("lval")
        if value.startswith("["):  # a mark (maybe cut by a column): already redacted
            return m.group()
        if not (_looks_random(value) or _SHAPE.fullmatch(value)):
            return m.group("label") + _TEXT.sub(_replace, value)
        return m.group("label") + _value_mark(value)
    assert kind == "qval"
    value = m.group("qval")
    if value.startswith("["):  # a mark (maybe cut by a column): already redacted
        return m.group()
    shown = _value_mark(value) if _is_secret_param(m.group("qname")) else _TEXT.sub(_replace, value)
    return f"{m.group('qsep')}{m.group('qname')}={shown}"


# --- the redactor --------------------------------------------------------------------------


class Redactor:
    """The one redaction policy (module docstring); ``enabled=False`` is ``--no-redact``."""

    __slots__ = ("enabled",)

    def __init__(self, *, enabled: bool = True) -> None:
        self.enabled = enabled

    def text(self, text: str) -> str:
        """``text`` with every credential shape, labelled value and secret URL parameter
        replaced by its mark."""
        if not self.enabled or len(text) < _MIN_SECRET:
            return text
        return _redact_string(text)

    def url(self, url: str) -> str:
        return self.text(url)

    def header(self, name: str, value: str) -> str:
        if not self.enabled:
            return value
        return _header_value(name, value)

    def headers(self, headers: Headers | Iterable[tuple[str, str]]) -> list[list[str]]:
        if not self.enabled:
            return [[k, v] for k, v in headers]
        return [[k, _header_value(k, v)] for k, v in headers]

    def json(self, value: Any) -> Any:
        """A copy of a JSON-shaped value (dicts, lists, strings, numbers) with every
        credential redacted; the value itself is never changed."""
        if not self.enabled:
            return value
        return _walk(value)

    def dumps(self, value: Any, option: int = 0) -> bytes:
        """``value`` redacted, as orjson writes it."""
        return orjson.dumps(self.json(value), option=option)

    def events(self, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """A response's stream events (report dicts) with the secrets that span several
        events' deltas redacted (:mod:`agentshark.output.redact_stream`); each event is still
        to go through :meth:`json`."""
        if not self.enabled or len(events) < 2:
            return events
        from agentshark.output.redact_stream import redact_split  # a cycle: imported when used

        return redact_split(events)

    def stream(self, out: TextIO) -> TextIO:
        """``out`` behind a line buffer that redacts each complete line (the rest on
        ``flush``); ``out`` itself when redaction is off."""
        if not self.enabled:
            return out
        return cast(TextIO, _RedactingStream(out))


TEXT_PATTERN = _TEXT  # for agentshark.output.redact_stream, which reads streams with it
replace_match = _replace

REDACTION = Redactor()
NO_REDACTION = Redactor(enabled=False)


def redactor(enabled: bool) -> Redactor:
    return REDACTION if enabled else NO_REDACTION


# Every match of _TEXT holds one of these, lower-cased (a superset: "asia" also passes):
# plain substring searches run at memory speed, the regex does not.
_TRIGGERS = (
    *("sk-", "sk_", "rk_", "aiza", "akia", "asia", "xox", "eyj", "github_pat_", "ghp_"),
    *("gho_", "ghu_", "ghs_", "ghr_", "key", "token", "secret", "passw", "pwd", "auth"),
    *("credential", "cookie", "signature", "bearer", "basic", "digest", "sig="),
)
_TRIGGER = re.compile("|".join(map(re.escape, _TRIGGERS)))
# Triggers only a shape begins (``\b`` before it in _TEXT): in a long string they count at
# the start of a word only (ids such as ``task-…`` and ``work_…`` are common in payloads).
_TRIGGERS_WORD_START = ("sk-", "sk_", "rk_")
_TRIGGERS_ANYWHERE = tuple(t for t in _TRIGGERS if t not in _TRIGGERS_WORD_START)
_SHORT = 512  # shorter strings: one search of the lower-cased text; longer: substrings
_BASE64 = re.compile(r"[A-Za-z0-9+/]*={0,2}")
_BLOB = 256  # a string this long made only of standard base64 is data (an image), not text


def _base64_start(text: str) -> int | None:
    """Where the base64 of a long standard-base64 string or ``data:…;base64,`` URI (inline
    images and files) starts, or None when ``text`` is not one."""
    start = 0
    if text.startswith("data:"):
        comma = text.find(",", 0, 256)
        start = comma + 1 if comma > 0 and text.endswith(";base64", 0, comma) else 0
    return start if _BASE64.fullmatch(text, start) else None


def _maybe_secret(text: str) -> bool:
    """Whether ``text`` can hold anything :data:`_TEXT` finds (base64 is not looked into
    here: :func:`_redact_string` decodes the text it carries)."""
    if len(text) < _SHORT:
        return _TRIGGER.search(text.lower()) is not None
    low = text.lower()
    return any(t in low for t in _TRIGGERS_ANYWHERE) or any(
        _at_word_start(low, t) for t in _TRIGGERS_WORD_START
    )


def _at_word_start(low: str, trigger: str) -> bool:
    """Whether ``trigger`` starts a word somewhere in ``low``: the shapes it begins match
    after ``\\b`` only, so an id such as ``task-0001`` (``sk-`` inside a word) holds none."""
    at = low.find(trigger)
    while at >= 0:
        if at == 0 or not (low[at - 1].isalnum() or low[at - 1] == "_"):
            return True
        at = low.find(trigger, at + 1)
    return False


# Reports repeat themselves (calls replay their history; roles, types, models, header values
# come again and again): a string's redaction is kept by value in a cache, emptied when it
# holds too much text. A hit costs a dict lookup; the check it saves costs microseconds.
_CACHE: dict[str, str] = {}
_CACHE_CHARS = 16 << 20
_cached_chars = 0


def _redact_string(text: str) -> str:
    global _cached_chars
    hit = _CACHE.get(text)
    if hit is not None:
        return hit
    b64 = _base64_start(text) if len(text) >= _BLOB else None
    if b64 is not None:  # a token shape cannot be base64 itself; the text it carries can
        hit = redact_base64(text, b64, _redact_carried)
    else:
        hit = _redact_found(text) if _maybe_secret(text) else text
    if _cached_chars + len(text) > _CACHE_CHARS:
        _CACHE.clear()
        _cached_chars = 0
    _CACHE[text] = hit
    _cached_chars += len(text) + 64  # + 64: an entry's own cost, so short strings count too
    return hit


def _redact_carried(text: str) -> str:
    return _redact_found(text) if _maybe_secret(text) else text


def _redact_found(text: str) -> str:
    out = _TEXT.sub(_replace, text)
    first = text[:64].lstrip()[:1]
    if first in ("{", "[") and _JSONISH.search(text) is not None:
        return _redact_json_text(text, out)
    return out


def _redact_json_text(original: str, redacted: str) -> str:
    """A string that holds JSON: keep the text's own form when its rules found every
    credential, else the parsed value redacted (nested secrets under a secret name)."""
    try:
        parsed = orjson.loads(original)
    except orjson.JSONDecodeError:
        return redacted
    walked = _walk(parsed)
    try:
        if orjson.loads(redacted) == walked:
            return redacted
    except orjson.JSONDecodeError:
        pass
    return orjson.dumps(walked).decode()


def _walk(value: Any) -> Any:
    t = type(value)
    if t is str:
        return _redact_string(value) if len(value) >= _MIN_SECRET else value
    if t is dict:
        return _walk_dict(value)
    if t is list or t is tuple:
        return _walk_list(value)
    return value


def _walk_list(value: list[Any] | tuple[Any, ...]) -> list[Any]:
    if len(value) == 2 and type(value[0]) is str and type(value[1]) is str:
        name = value[0]  # a header-like pair
        if is_secret_name(name):
            return [name, _header_value(name, value[1])]
        return [_walk(name), _walk(value[1])]
    return [_walk(v) for v in value]


_KEYS: dict[object, bool] = {}  # JSON key -> a credential's name? (the classifier's cache)


def _walk_dict(d: dict[Any, Any]) -> dict[Any, Any]:
    out: dict[Any, Any] = {}
    pair_name = (d.get("name", d.get("key"))) if "value" in d else None
    pair_secret = type(pair_name) is str and is_secret_name(pair_name)
    logprob = "logprob" in d
    for k, v in d.items():
        t = type(v)
        if t is not str and t is not dict and t is not list:
            out[k] = v  # numbers, booleans and null are never secrets
            continue
        secret = _KEYS.get(k)
        if secret is None:
            secret = type(k) is str and _is_secret_key(k)
            if len(_KEYS) < 1 << 16:
                _KEYS[k] = secret
        if (secret and not (logprob and k == "token")) or (pair_secret and k == "value"):
            out[k] = _all_secret(v, k if k != "value" else str(pair_name))
        elif k == "properties" and t is dict:  # JSON Schema: parameter names, not values
            out[k] = {name: _walk(schema) for name, schema in v.items()}
        elif t is str:
            out[k] = _redact_string(v) if len(v) >= _MIN_SECRET else v
        elif t is dict:
            out[k] = _walk_dict(v)
        else:
            out[k] = _walk_list(v)
    return out


def _all_secret(value: Any, name: str) -> Any:
    """Every string under a credential name, at any depth, as its mark."""
    t = type(value)
    if t is str:
        return _header_value(name, value) if value else value
    if t is dict:
        return {k: _all_secret(v, name) for k, v in value.items()}
    if t is list:
        return [_all_secret(v, name) for v in value]
    return value


def _header_value(name: str, value: str) -> str:
    if not is_secret_name(name):
        return _redact_string(value) if len(value) >= _MIN_SECRET else value
    if not value or value.startswith(REDACTED):
        return value
    if _norm(name) in _COOKIE_HEADERS:
        return _cookie(value, set_cookie=_norm(name) == "set_cookie")
    scheme, sep, rest = value.partition(" ")
    if sep and rest and scheme.lower() in _SCHEMES:
        return f"{scheme} {rest if rest.startswith(REDACTED) else _value_mark(rest)}"
    return _value_mark(value)


def _cookie(value: str, *, set_cookie: bool) -> str:
    """Cookie names kept, values redacted; of a Set-Cookie only the first pair is a value
    (the rest are attributes: Path, Expires...)."""
    pairs = value.split(";")
    out = []
    for n, pair in enumerate(pairs):
        name, eq, val = pair.partition("=")
        if eq and val.strip() and (n == 0 or not set_cookie):
            out.append(f"{name}={_value_mark(val.strip())}")
        else:
            out.append(pair)
    return ";".join(out)


class _RedactingStream:
    """What a text view writes to: whole lines go out redacted."""

    def __init__(self, out: TextIO) -> None:
        self._out = out
        self._pending = ""

    def write(self, text: str) -> int:
        buffered = self._pending + text
        cut = buffered.rfind("\n") + 1
        if cut:
            self._out.write(_redact_string(buffered[:cut]))
        self._pending = buffered[cut:]
        return len(text)

    def flush(self) -> None:
        if self._pending:
            self._out.write(_redact_string(self._pending))
            self._pending = ""
        self._out.flush()

    def close(self) -> None:
        self.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._out, name)


# --- the older function names, for writers not yet holding a Redactor -----------------------


def redact_value(name: str, value: str) -> str:
    return REDACTION.header(name, value)


def redact_headers(headers: Headers) -> list[list[str]]:
    return REDACTION.headers(headers)


def redact_url(url: str) -> str:
    return REDACTION.url(url)


def redact_text(text: str) -> str:
    return REDACTION.text(text)
