"""Corpus documents whose exchange count justifiably differs from ``manifest.jsonl``.

``manifest.jsonl`` counts exchanges with its own heuristic classifier ("a guide, not
truth"). When agentshark reads a HAR file or cassette into a different number of exchanges
and agentshark is right, the file is listed here with the count agentshark reads and why.
``test_corpus_documents`` fails when a listed file no longer differs from the manifest, so
this list only ever holds live differences.

As of this writing every HAR file and cassette of the corpus reads into exactly the
manifest's count (2,050 documents, 3,635 exchanges), so the list is empty. Entries look
like::

    "pydantic__pydantic-ai/tests/cassettes/x.yaml": Difference(
        n_exchanges=3,
        reason="interactions[2] has no response.status: vcrpy never wrote it, the file "
        "was edited by hand; the reader skips it with a diagnostic",
    ),
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class Difference:
    n_exchanges: int  # what agentshark reads
    reason: str  # why agentshark is right and the manifest is not


DIFFERENCES: dict[str, Difference] = {}
