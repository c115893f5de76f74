"""The planted-secrets corpus: no command, format or input shows a credential.

``tests/data/secrets/`` (made by ``scripts/make_secret_captures.py``: real httpx and hypercorn
on loopback, tcpdump, vcrpy, a real MCP stdio server) plants fake credentials in headers
(``Authorization`` Bearer and Basic, ``x-api-key``, ``X-Agentops-Api-Key`` sent on every request
so that HTTP/2 sends it as an HPACK dynamic-table reference, cookies), URL parameters, request
bodies at depth, message text, tool-call arguments and results, a streamed Anthropic reply, a
401 error echoing the key, MCP ``tools/call`` arguments and results, A2A parts. Every input
(HTTP/1 pcap, HTTP/2 over TLS with its key log, HAR, vcrpy cassette, MCP stdio transcript) is
run through every command (``exchanges``, ``exchanges --events``, ``calls``, ``analyze``,
``show`` for every call id) in both formats, and ``export parquet|duckdb`` (every value of
every table read back), in process through :func:`agentshark.cli.main`: no secret, and no
distinctive piece of one, may be in stdout or stderr. ``export otlp``'s OTLP JSON Lines file
(with and without ``--openinference``: every span attribute, message and tool argument) is
swept the same way. With ``--no-redact`` they are there (so these tests can fail).

The shared corpus sweep reads every cassette of ``../shared/corpus`` that holds a token-shaped
string or a credential header, and checks the ``analyze --format json`` report for them.
"""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest

from agentshark.cli import main
from agentshark.model import Exchange
from agentshark.output.tables.schema import TABLES
from agentshark.pipeline import Options, run
from tests.helpers import CORPUS, ROOT

DATA = ROOT / "tests" / "data" / "secrets"
SECRETS: dict[str, str] = json.loads((DATA / "secrets.json").read_text())
# Only ever on the wire inside the base64 of the Basic credentials: never shown even unredacted.
ENCODED_ONLY = frozenset({"basic_password"})
_PREFIXES = (
    *("sk-ant-api03-", "sk-proj-", "sk-svcacct-", "sk-", "sk_live_", "github_pat_", "ghp_"),
    *("gho_", "ghs_", "xoxb-", "AIza", "AKIA", "ASIA"),
)

H1 = DATA / "h1"
H2 = DATA / "h2_tls"
INPUTS: dict[str, list[str]] = {
    "h1_pcap": [str(H1 / "capture.pcap")],
    "h2_tls_pcap": [str(H2 / "capture.pcap"), "--keylog", str(H2 / "keys.log")],
    "har": [str(H1 / "capture.har")],
    "vcr": [str(H1 / "cassette.yaml")],
    "stdio": [str(DATA / "stdio" / "transcript.jsonl")],
}
COMMANDS = (
    ["exchanges"],
    ["exchanges", "--events"],
    ["calls"],
    ["analyze"],
)
FORMATS = ("text", "json")


# Streamed 7 characters a delta: each event holds a piece of them, so every 7 characters of
# their random part are looked for.
STREAMED = frozenset({"stream_aws_key", "stream_jwt"})
_STREAM_PIECE = 7


def needles(secret: str, *, streamed: bool = False) -> list[str]:
    """The secret and its distinctive pieces: what follows a known prefix, its first and
    last 10 characters; of a JWT its claims and signature (the header is common); of a
    streamed secret also every run of 7 characters of its random part (a JWT's signature)."""
    if secret.count(".") == 2 and secret.startswith("eyJ"):
        _, body, signature = secret.split(".")
        parts = [signature]  # the claims' JSON around the random values is common
        found = {secret, body, signature, signature[:10], signature[-10:]}
    else:
        tail = next((secret[len(p) :] for p in _PREFIXES if secret.startswith(p)), secret)
        parts = [tail]
        found = {secret, tail, tail[:10], tail[-10:]}
    if streamed:
        n = _STREAM_PIECE
        found |= {p[i : i + n] for p in parts for i in range(len(p) - n + 1)}
    return sorted(found)


def leaks(text: str, secrets: dict[str, str] = SECRETS) -> list[str]:
    return [
        f"{name}: {needle!r}"
        for name, secret in secrets.items()
        for needle in needles(secret, streamed=name in STREAMED)
        if needle in text
    ]


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main([*argv, "--no-progress"])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def call_ids(capsys: pytest.CaptureFixture[str], inputs: list[str]) -> list[str]:
    code, out = cli(capsys, "calls", *inputs, "--format", "json")
    assert code == 0
    ids = [c["id"] for c in json.loads(out)["calls"]]
    assert ids
    return ids


def runs(capsys: pytest.CaptureFixture[str], inputs: list[str], *extra: str) -> Iterator[str]:
    """The output of every command in every format, ``show`` of every call included."""
    for command in COMMANDS:
        for fmt in FORMATS:
            code, out = cli(capsys, command[0], *inputs, *command[1:], "--format", fmt, *extra)
            assert code == 0, out
            yield out
    for call_id in call_ids(capsys, inputs):
        for fmt in FORMATS:
            code, out = cli(capsys, "show", *inputs, "--call", call_id, "--format", fmt, *extra)
            assert code == 0, out
            yield out
    for fmt in TABLE_FORMATS if "--color" not in extra else ():  # tables have no colour
        with tempfile.TemporaryDirectory() as tmp:
            target = Path(tmp) / "out"
            code, out = cli(capsys, "export", fmt, *inputs, "-o", str(target), *extra)
            assert code == 0, out
            yield out + "\n" + table_text(fmt, target)


TABLE_FORMATS = ("parquet", "duckdb")


def table_text(fmt: str, target: Path) -> str:
    """Every value of every table an export wrote, as text (JSON columns as stored)."""
    values: list[object] = []
    for table in TABLES:
        if fmt == "parquet":
            data = pq.read_table(target / f"{table.name}.parquet").to_pylist()
            values += [v for row in data for v in row.values()]
        else:
            con = duckdb.connect(str(target), read_only=True)
            values += [
                v for row in con.execute(f'SELECT * FROM "{table.name}"').fetchall() for v in row
            ]
            con.close()
    assert values
    return "\n".join(map(str, values))


def test_the_corpus_plants_distinct_random_secrets() -> None:
    assert len(SECRETS) >= 25
    pieces = [n for s in SECRETS.values() for n in needles(s)]
    assert all(len(p) >= 10 for p in pieces)
    streamed = [n for name in STREAMED for n in needles(SECRETS[name], streamed=True)]
    assert min(map(len, streamed)) == _STREAM_PIECE
    # the pieces of one secret never stand for another one
    for name, secret in SECRETS.items():
        others = {k: v for k, v in SECRETS.items() if k != name and k != "basic_credentials"}
        if name not in ("basic_credentials", "basic_password"):
            assert not leaks(secret, others), name


@pytest.mark.parametrize("name", sorted(INPUTS))
def test_no_command_or_format_shows_a_planted_secret(
    capsys: pytest.CaptureFixture[str], name: str
) -> None:
    found: list[str] = []
    outputs = 0
    for out in runs(capsys, INPUTS[name]):
        found += leaks(out)
        outputs += 1
    assert outputs >= len(COMMANDS) * len(FORMATS) + 2
    assert not found, sorted(set(found))


@pytest.mark.parametrize("name", sorted(INPUTS))
def test_the_colour_form_shows_no_planted_secret(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """The rich form (--color always) of every command: its text, colours taken out and
    lines not wrapped (a very wide terminal), holds no secret either."""
    monkeypatch.setenv("COLUMNS", "20000")
    found: list[str] = []
    coloured = 0
    for out in runs(capsys, INPUTS[name], "--color", "always"):
        coloured += "\x1b[" in out
        found += leaks(re.sub(r"\x1b\[[0-9;]*m", "", out))
    assert coloured >= len(COMMANDS) + 1  # the text formats are drawn with colour
    assert not found, sorted(set(found))
    _, raw = cli(capsys, "analyze", *INPUTS[name], "--no-redact", "--color", "always")
    assert leaks(re.sub(r"\x1b\[[0-9;]*m", "", raw))  # unredacted, the same check finds them


def test_no_redact_shows_every_planted_secret(capsys: pytest.CaptureFixture[str]) -> None:
    seen: set[str] = set()
    for inputs in INPUTS.values():
        for out in runs(capsys, inputs, "--no-redact"):
            seen |= {name for name, secret in SECRETS.items() if secret in out}
    assert seen == set(SECRETS) - ENCODED_ONLY


# The OTLP spans carry messages, tool calls, results and errors; not HTTP headers, the URLs of
# model calls, request fields outside the messages, or an MCP result's structuredContent.
NOT_IN_SPANS = frozenset(
    {
        *("agentops_key", "anthropic_key", "basic_credentials", "openai_key", "mcp_bearer_jwt"),
        *("cookie_session", "set_cookie_sid", "gemini_url_key", "mcp_url_token"),
        *("body_api_key", "body_client_secret", "mcp_result_session_token"),
    }
)


def otlp_exports(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, inputs: list[str], *extra: str
) -> Iterator[str]:
    """``export otlp -o`` of ``inputs``: the file and what was said, per variant."""
    for variant in ([], ["--openinference"]):
        out = tmp_path / "traces.jsonl"
        code, said = cli(capsys, "export", "otlp", *inputs, "-o", str(out), *variant, *extra)
        assert code == 0, said
        yield out.read_text(encoding="utf-8") + said


@pytest.mark.parametrize("name", sorted(INPUTS))
def test_otlp_export_shows_no_planted_secret(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str
) -> None:
    pytest.importorskip("opentelemetry.proto", reason="the otlp extra is not installed")
    found: list[str] = []
    spans = 0
    for text in otlp_exports(capsys, tmp_path, INPUTS[name]):
        found += leaks(text)
        spans += text.count('"spanId"')
    assert spans > 0
    assert not found, sorted(set(found))


def test_otlp_export_no_redact_shows_the_planted_secrets(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    pytest.importorskip("opentelemetry.proto", reason="the otlp extra is not installed")
    seen: set[str] = set()
    for inputs in INPUTS.values():
        for text in otlp_exports(capsys, tmp_path, inputs, "--no-redact"):
            seen |= {name for name, secret in SECRETS.items() if secret in text}
    assert seen == set(SECRETS) - ENCODED_ONLY - NOT_IN_SPANS


def test_redaction_marks_keep_the_evidence(capsys: pytest.CaptureFixture[str]) -> None:
    """What redaction keeps: the scheme, the kind, equal secrets with equal marks, cookie
    names, the non-secret fields around a secret, the counts."""
    _, out = cli(capsys, "calls", *INPUTS["h2_tls_pcap"], "--format", "json")
    report = json.loads(out)
    headers = [h for e in report["exchanges"] for h in e["request"]["headers"]]
    bearer = {v for k, v in headers if k == "authorization" and v.startswith("Bearer [REDACTED sk")}
    assert len(bearer) == 2  # the good key and the wrong one: two marks, each the same each time
    agentops = [v for k, v in headers if k == "x-agentops-api-key"]
    assert len(agentops) == 9 and len(set(agentops)) == 1 and agentops[0].startswith("[REDACTED")
    cookie = next(v for k, v in headers if k == "cookie")
    assert cookie.startswith("session=[REDACTED ") and "; theme=[REDACTED" in cookie
    first = report["calls"][0]
    assert first["usage"]["input_tokens"] == 42
    (tool_call,) = first["output_messages"][0]["parts"]
    assert tool_call["arguments"]["repo"] == "acme/site"
    assert tool_call["arguments"]["github_token"].startswith("[REDACTED ghp_… 32+:")
    # the token in the answer and its replay in the next request carry one mark
    replayed = report["calls"][1]["input_messages"][1]["parts"][0]["arguments"]["github_token"]
    assert replayed == tool_call["arguments"]["github_token"]


def test_hpack_indexed_header_is_decoded_and_redacted(capsys: pytest.CaptureFixture[str]) -> None:
    """Over HTTP/2 the custom key header is sent once literally, then as a dynamic-table
    index; unredacted, every request shows it, so the indexed ones were decoded too."""
    _, out = cli(capsys, "exchanges", *INPUTS["h2_tls_pcap"], "--format", "json", "--no-redact")
    exchanges = json.loads(out)["exchanges"]
    assert {e["request"]["version"] for e in exchanges} == {"HTTP/2"}
    values = [v for e in exchanges for k, v in e["request"]["headers"] if k == "x-agentops-api-key"]
    assert values == [SECRETS["agentops_key"]] * 9


# --- the shared corpus ----------------------------------------------------------------------

# An independent statement of what a credential looks like (not the redactor's own rules).
# A shape counts where it starts a word: inside a longer base64 or URL-safe blob (encrypted
# reasoning, signatures) such letters are chance, not a key.
_CORPUS_SHAPES = re.compile(
    r"(?<![\w+/-])(?:sk-(?:ant-|proj-|svcacct-)?[A-Za-z0-9_-]{20,}|AIza[0-9A-Za-z_-]{35}|"
    r"gh[pousr]_[A-Za-z0-9]{36}|github_pat_\w{40,}|AKIA[A-Z0-9]{16}|xox[abposr]-[\w-]{10,}|"
    r"[sr]k_(?:live|test)_[A-Za-z0-9]{20,}|eyJ[\w-]{10,}\.eyJ[\w-]{10,}\.[\w-]{10,})"
)
_CREDENTIAL_HEADERS = re.compile(
    r"(?i)^(?:proxy-)?authorization$|^cookie$|^set-cookie$|api[-_]?key|^x-[\w-]*token$"
    r"|^x-amz-security-token$|secret"
)
# Cheap first look at a file's bytes (lower-cased): could it hold a credential at all?
_CORPUS_HINTS = (
    *(b"sk-", b"aiza", b"ghp_", b"gho_", b"ghs_", b"github_pat_", b"akia", b"xox", b"eyj"),
    *(b"sk_live_", b"authorization", b"api-key", b"api_key", b"cookie", b"security-token"),
)


def _corpus_cassettes() -> list[Path]:
    files = sorted([*CORPUS.rglob("*.yaml"), *CORPUS.rglob("*.yml"), *CORPUS.rglob("*.har")])
    out = []
    for f in files:
        low = f.read_bytes().lower()
        if any(hint in low for hint in _CORPUS_HINTS):
            out.append(f)
    return out


def _planted(path: Path) -> set[str]:
    """Credentials an input holds: token shapes anywhere in the file, and the values of
    credential headers (without their scheme word, cookies per value) of 12+ characters."""
    found = set(_CORPUS_SHAPES.findall(path.read_text("utf-8", "replace")))
    for item in run([str(path)], Options()):
        if not isinstance(item, Exchange):
            continue
        for message in (item.request, item.response):
            for name, value in message.headers if message is not None else ():
                if _CREDENTIAL_HEADERS.search(name):
                    found |= _header_secrets(name, value)
    return {s for s in found if len(s) >= 12}


def _header_secrets(name: str, value: str) -> set[str]:
    if name.lower() in ("cookie", "set-cookie"):
        pairs = value.split(";") if name.lower() == "cookie" else value.split(";")[:1]
        return {p.partition("=")[2].strip() for p in pairs}
    scheme, _, rest = value.partition(" ")
    return {rest if rest and scheme.isalpha() and len(scheme) < 12 else value}


@pytest.mark.skipif(not CORPUS.is_dir(), reason="../shared/corpus is not here")
def test_shared_corpus_reports_show_no_credential(capsys: pytest.CaptureFixture[str]) -> None:
    checked = 0
    leaked: dict[str, list[str]] = {}
    for path in _corpus_cassettes():
        planted = _planted(path)
        if not planted:
            continue
        checked += 1
        main(["analyze", str(path), "--format", "json", "--no-progress"])
        captured = capsys.readouterr()
        out = captured.out + captured.err
        hits = sorted(s for s in planted if s in out)
        if hits:
            leaked[str(path.relative_to(CORPUS))] = [h[:16] + "…" for h in hits]
    assert checked >= 100
    assert not leaked, leaked


def test_table_exports_hold_the_secrets_only_unredacted(capsys: pytest.CaptureFixture[str]) -> None:
    """The tables are swept above; unredacted they hold every secret the report does, so
    the sweep reads where the secrets would be."""
    seen: set[str] = set()
    for inputs in INPUTS.values():
        for fmt in TABLE_FORMATS:
            with tempfile.TemporaryDirectory() as tmp:
                target = Path(tmp) / "out"
                code, out = cli(capsys, "export", fmt, *inputs, "-o", str(target), "--no-redact")
                assert code == 0, out
                text = table_text(fmt, target)
            seen |= {name for name, secret in SECRETS.items() if secret in text}
    assert seen == set(SECRETS) - ENCODED_ONLY
