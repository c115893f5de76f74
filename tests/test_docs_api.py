"""docs/api.md: every ``python`` code block runs, in order, in one namespace, from the
repository's root (the examples assert what they show)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import ROOT

DOC = ROOT / "docs" / "api.md"
BLOCK = re.compile(r"^```python\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def blocks() -> list[str]:
    return BLOCK.findall(DOC.read_text(encoding="utf-8"))


@pytest.fixture
def in_root() -> Iterator[Path]:
    before = Path.cwd()
    os.chdir(ROOT)
    try:
        yield ROOT
    finally:
        os.chdir(before)


def test_the_doc_has_examples() -> None:
    assert len(blocks()) >= 8


def test_every_example_runs(in_root: Path) -> None:
    namespace: dict[str, object] = {"__name__": "docs_api"}
    for n, code in enumerate(blocks()):
        try:
            exec(compile(code, f"docs/api.md block {n + 1}", "exec"), namespace)
        except Exception as exc:
            raise AssertionError(f"docs/api.md block {n + 1} failed: {exc!r}\n{code}") from exc
