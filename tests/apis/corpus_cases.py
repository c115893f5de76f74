"""Corpus documents as exchanges, for the per-family SDK oracles (Ollama, Cohere, legacy
completions): the manifest's entries chosen by endpoint, each file read with the HAR / VCR
readers as the pipeline reads it."""

from __future__ import annotations

import itertools
import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agentshark.errors import InputError
from agentshark.model import Exchange
from agentshark.sources.detect import classify_document
from agentshark.sources.har import read_har
from agentshark.sources.vcr import read_vcr
from tests.helpers import CORPUS

MANIFEST = CORPUS / "manifest.jsonl"


def entries(wanted: Callable[[str], bool]) -> list[str]:
    """The corpus files one of whose manifest endpoints (``"POST host/path"``) is wanted."""
    if not MANIFEST.exists():
        return []
    out = []
    for line in MANIFEST.read_text().splitlines():
        if line.strip():
            entry = json.loads(line)
            if any(wanted(str(e)) for e in entry["endpoints"]):
                out.append(entry["file"])
    return sorted(out)


def exchanges(file: str) -> list[Exchange]:
    data = (CORPUS / file).read_bytes()
    try:
        kind, doc = classify_document(data, file)
    except InputError:
        return []
    ids = itertools.count()
    reader = read_har if kind == "har" else read_vcr
    return [x for x in reader(doc, file, 0, lambda: f"e{next(ids)}") if isinstance(x, Exchange)]


@dataclass
class Agreement:
    """Per-field agreement between agentshark's calls and an SDK's reading."""

    agree: Counter[str] = field(default_factory=Counter)
    total: Counter[str] = field(default_factory=Counter)
    differences: list[tuple[str, str, str, Any, Any]] = field(default_factory=list)
    calls: int = 0

    def compare(self, case: str, exchange_id: str, pairs: dict[str, tuple[Any, Any]]) -> None:
        self.calls += 1
        for name, (mine, expected) in pairs.items():
            self.total[name] += 1
            if mine == expected:
                self.agree[name] += 1
            else:
                self.differences.append((case, exchange_id, name, mine, expected))

    def unexplained(self, listed: dict[tuple[str, str, str], str]) -> list[Any]:
        return [d for d in self.differences if (d[0], d[1], d[2]) not in listed]

    def stale(self, listed: dict[tuple[str, str, str], str]) -> set[tuple[str, str, str]]:
        return set(listed) - {(d[0], d[1], d[2]) for d in self.differences}

    def table(self, title: str) -> str:
        lines = [title, f"{'field':<22} {'agree':>6} {'total':>6} {'%':>7}"]
        for name in self.total:
            agree, total = self.agree[name], self.total[name]
            lines.append(f"{name:<22} {agree:>6} {total:>6} {100 * agree / total:7.2f}")
        agree, total = sum(self.agree.values()), sum(self.total.values())
        lines.append(f"{'all':<22} {agree:>6} {total:>6} {100 * agree / max(total, 1):7.2f}")
        return "\n".join(lines)

    def ratio(self) -> float:
        return sum(self.agree.values()) / max(sum(self.total.values()), 1)
