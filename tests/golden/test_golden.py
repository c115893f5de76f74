"""The JSON report of each golden case equals its reviewed file."""

from __future__ import annotations

import orjson
import pytest

from tests.golden.cases import CASES, expected_path
from tests.golden.regen import render


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden_report(name: str) -> None:
    inputs, args = CASES[name]
    got = orjson.loads(render(inputs, args))
    want = orjson.loads(expected_path(name).read_bytes())
    assert got == want, "report changed: run `python -m tests.golden.regen` and review the diff"
