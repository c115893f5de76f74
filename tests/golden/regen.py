"""Rewrite every golden report from the current code: ``python -m tests.golden.regen``."""

from __future__ import annotations

import io
import os
from contextlib import redirect_stdout

import orjson

from agentshark.cli import main
from tests.golden.cases import CASES, expected_path
from tests.helpers import ROOT


def render(inputs: list[str], args: list[str]) -> bytes:
    """The JSON report for ``inputs``, pretty-printed so diffs read well. ``args`` starting
    with "calls" or "analyze" run that command instead of exchanges."""
    command = "exchanges"
    if args[:1] in (["calls"], ["analyze"]):
        command, args = args[0], args[1:]
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        buf = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
        with redirect_stdout(buf):
            main([command, *inputs, "--format", "json", "--no-progress", *args])
        buf.flush()
        raw = buf.buffer.getvalue()  # type: ignore[attr-defined,unused-ignore]
    finally:
        os.chdir(cwd)
    return orjson.dumps(orjson.loads(raw), option=orjson.OPT_INDENT_2) + b"\n"


def regenerate() -> None:
    for name, (inputs, args) in CASES.items():
        path = expected_path(name)
        path.write_bytes(render(inputs, args))
        print(f"wrote {path.relative_to(ROOT)}")


if __name__ == "__main__":
    regenerate()
