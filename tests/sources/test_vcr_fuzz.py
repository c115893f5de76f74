"""Findings of the fuzz campaign (scripts/fuzz_campaign.py) and of the review it led to, in
the VCR cassette reader, kept as regression tests."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import Collected


@pytest.mark.parametrize("code", ["²⁰⁰", "\uff12\uff10\uff10", " 2OO"])
def test_a_status_code_of_non_ascii_digits_is_a_diagnostic(tmp_path: Path, code: str) -> None:
    """str.isdigit() takes superscript digits that int() refuses: the interaction is
    reported malformed, the cassette's other interaction is still read."""
    good = {
        "request": {"method": "GET", "uri": "http://h/a", "body": None, "headers": {}},
        "response": {
            "status": {"code": 200, "message": "OK"},
            "headers": {},
            "body": {"string": "x"},
        },
    }
    bad = json.loads(json.dumps(good))
    bad["response"]["status"]["code"] = code
    path = tmp_path / "cassette.json"
    path.write_text(json.dumps({"version": 1, "interactions": [bad, good]}))
    got = Collected([str(path)])
    (source,) = got.sources
    assert len(got.exchanges) == 1
    assert [d.code for d in source.diagnostics] == ["vcr.malformed_interaction"]
