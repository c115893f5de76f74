"""The JSON report of each golden case equals its reviewed file."""

from __future__ import annotations

import orjson
import pytest

from tests.golden.cases import CASES, expected_path, pinned, sha256, shared_files
from tests.golden.regen import render


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden_report(name: str) -> None:
    pins = pinned()
    for path in shared_files(name):
        repin = "python -m tests.golden.regen --pin-inputs"
        assert path in pins, f"{path} is not pinned: run `{repin}`"
        assert sha256(path) == pins[path], (
            f"{path} is not the file the golden report {name}.json was made from (sha256 "
            f"{sha256(path)}, pinned {pins[path]}): the shared input was re-made; review it, "
            "then run `python -m tests.golden.regen --pin-inputs` and review the report diff"
        )
    inputs, args = CASES[name]
    got = orjson.loads(render(inputs, args))
    want = orjson.loads(expected_path(name).read_bytes())
    assert got == want, "report changed: run `python -m tests.golden.regen` and review the diff"


def test_every_pin_is_read_by_a_case() -> None:
    """A pin no case reads is stale: it would hide that a case stopped reading its input."""
    read = {p for name in CASES for p in shared_files(name)}
    assert sorted(pinned()) == sorted(read)
