"""A lost ClientHello or ServerHello, end to end (issue 10 §1, ``tls.trial``): exactly the
TCP segment holding the hello is dropped from a real TLS capture with its key log.

TLS 1.3 (both hellos) and TLS 1.2 (the ClientHello): every exchange and call comes out
identical to the clean run, except the session facts that only the lost hello carried,
which the exchange's ``tls.unknown`` names (never reported as if known). TLS 1.2 without
its ServerHello cannot be decrypted (its key block needs the server random): the
connection's exchanges are absent and a diagnostic says why.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest

from tests.faults.cases import BY_NAME
from tests.faults.harness import Item, Run, analyze, clean_run
from tests.faults.inject import Pkt, index_packets, rewrite

TLS13 = ("https_tls13_h2", "llm_sdk_openai", "llm_sdk_anthropic", "tls13_chacha20_h1")
TLS12 = ("https_tls12_h1", "tls12_aes256gcm_h1")
CLIENT_HELLO, SERVER_HELLO = 1, 2


def _hello(p: Pkt, kind: int) -> bool:
    if p.tcp is None or p.end - p.start < 6:
        return False
    head = p.record.data[p.tcp.payload_offset : p.tcp.payload_offset + 6]
    return head[0] == 22 and head[1] == 3 and head[5] == kind


def _dropped(name: str, kind: int) -> tuple[Run, Run]:
    inp = BY_NAME[name]
    capture, clean = clean_run(inp.path, inp.keylog)
    packets, _ = index_packets(capture)
    first = next(p.index for p in packets if _hello(p, kind))
    data, touches = rewrite(capture, drop=frozenset({first}))
    assert len(touches) == 1
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "faulted.pcap"
        path.write_bytes(data)
        return clean, analyze(path, inp.keylog)


def _known(item: Item) -> tuple[str, list[str]]:
    """The item's content without the session facts it says are unknown, and those."""
    content = json.loads(item.content)
    tls = content.get("tls") or {}
    unknown = tls.pop("unknown", [])
    for fact in unknown:
        tls.pop(fact, None)
    return json.dumps(content, sort_keys=True), unknown


def _same_but_unknown(clean: list[Item], faulted: list[Item]) -> set[str]:
    assert len(faulted) == len(clean)
    lost: set[str] = set()
    for want, got in zip(clean, faulted, strict=True):
        got_content, unknown = _known(got)
        want_content = json.loads(want.content)
        for fact in unknown:
            (want_content.get("tls") or {}).pop(fact, None)
        assert got_content == json.dumps(want_content, sort_keys=True)
        assert got.complete == want.complete
        lost |= set(unknown)
    return lost


@pytest.mark.parametrize("name", TLS13 + TLS12)
def test_lost_client_hello_costs_only_its_facts(name: str) -> None:
    clean, faulted = _dropped(name, CLIENT_HELLO)
    assert clean.exchanges and all(it.complete for it in clean.exchanges)
    lost = _same_but_unknown(clean.exchanges, faulted.exchanges)
    assert lost == {"sni", "alpn_offered"}  # only what the ClientHello alone carried
    _same_but_unknown(clean.calls, faulted.calls)
    notes = {e.split(":")[0] for conn in faulted.evidence.values() for e in conn}
    assert "tls.keys_by_trial" in notes


@pytest.mark.parametrize("name", TLS13)
def test_lost_server_hello_tls13_costs_only_its_facts(name: str) -> None:
    clean, faulted = _dropped(name, SERVER_HELLO)
    lost = _same_but_unknown(clean.exchanges, faulted.exchanges)
    assert lost <= {"resumed", "alpn", "hello_retry"} and "resumed" in lost
    _same_but_unknown(clean.calls, faulted.calls)
    notes = {e.split(":")[0] for conn in faulted.evidence.values() for e in conn}
    assert "tls.suite_by_trial" in notes


@pytest.mark.parametrize("name", TLS12)
def test_lost_server_hello_tls12_is_said(name: str) -> None:
    clean, faulted = _dropped(name, SERVER_HELLO)
    assert len(faulted.exchanges) < len(clean.exchanges)
    clean_contents = {it.content for it in clean.exchanges}
    assert all(it.content in clean_contents for it in faulted.exchanges)  # the other connections
    said = [e for conn in faulted.evidence.values() for e in conn if e.startswith("tls.gap")]
    assert any("cannot be recovered" in e for e in said)
