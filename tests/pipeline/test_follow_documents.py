"""Following documents their writers rewrite: a HAR file ``agentshark proxy -w`` writes entry
by entry (each over the closing brackets of the last: :class:`HarFile`), and a cassette saved
again under its name (written to a new file and renamed over the old one, as editors and
many recorders save). The follower reads such a file whole when it changed, so every entry
comes once, as it is written, and the end is what ``agentshark analyze`` gives for the file.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import yaml

from agentshark.model import Exchange
from agentshark.output.har_write import HarFile, har_entry
from agentshark.output.redact import NO_REDACTION
from agentshark.output.report import RenderOptions, exchange_json
from agentshark.pipeline import Options, run
from agentshark.pipeline.follow import CallFinished, DiagnosticFound, ExchangeFinished, Follower

SHARED = Path(__file__).resolve().parents[3] / "shared"
CAPTURE = SHARED / "captures" / "llm_sdk_openai"


def _exchanges() -> list[Exchange]:
    items = run([str(CAPTURE / "capture.pcap")], Options(keylogs=[str(CAPTURE / "keylog.txt")]))
    return [i for i in items if isinstance(i, Exchange)]


def _json(exchanges: list[Exchange]) -> list[object]:
    render = RenderOptions(redact=False)
    return [exchange_json(e, render) for e in exchanges]


def test_a_har_written_entry_by_entry_gives_each_entry_as_it_is_written(tmp_path: Path) -> None:
    exchanges = _exchanges()
    assert len(exchanges) == 5
    path = tmp_path / "rec.har"
    har = HarFile(path)
    follower = Follower([str(path)])
    seen: list[Exchange] = []
    calls = 0
    for i, exchange in enumerate(exchanges):
        har.add(har_entry(exchange, NO_REDACTION))
        updates = follower.poll()
        seen += [u.exchange for u in updates if isinstance(u, ExchangeFinished)]
        calls += sum(isinstance(u, CallFinished) for u in updates)
        # a JSON document that parses is whole: its last entry too
        assert len(seen) == i + 1
    har.close()
    end = follower.close()
    seen += [u.exchange for u in end if isinstance(u, ExchangeFinished)]
    calls += sum(isinstance(u, CallFinished) for u in end)
    assert not [u for u in end if isinstance(u, DiagnosticFound)]
    whole = [i for i in run([str(path)], Options()) if isinstance(i, Exchange)]
    assert _json(seen) == _json(whole)
    assert calls == 5


def test_a_document_saved_again_under_its_name_is_its_next_version(tmp_path: Path) -> None:
    source = next(
        c
        for c in sorted((SHARED / "corpus").rglob("*.yaml"))
        if len(yaml.safe_load(c.read_text()).get("interactions") or []) >= 3
    )
    doc = yaml.safe_load(source.read_text())
    path, new = tmp_path / "cassette.yaml", tmp_path / "cassette.yaml.tmp"
    path.write_text(yaml.safe_dump({**doc, "interactions": doc["interactions"][:2]}))
    follower = Follower([str(path)])
    updates = follower.poll()
    shutil.copyfile(source, new)
    os.replace(new, path)  # the whole cassette, saved as a new file under the name
    updates += follower.poll() + follower.close()
    said = [u.diagnostic.code for u in updates if isinstance(u, DiagnosticFound)]
    assert "follow.replaced" not in said
    seen = [u.exchange for u in updates if isinstance(u, ExchangeFinished)]
    whole = [i for i in run([str(path)], Options()) if isinstance(i, Exchange)]
    assert len(whole) >= 3
    assert _json(seen) == _json(whole)
