"""Rewrite every golden report from the current code: ``python -m tests.golden.regen``.

With ``--pin-inputs`` it also records the SHA-256 of every shared file the cases read
(``inputs.sha256.json``); without it, it refuses to run while a shared file differs from
its pin, so a re-made capture is noticed before its reports are rewritten.
"""

from __future__ import annotations

import io
import json
import os
import sys
from contextlib import redirect_stdout

import orjson

from agentshark.cli import main
from tests.golden.cases import CASES, PINS, expected_path, pinned, sha256, shared_files
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


def stale_inputs() -> list[str]:
    """One line per shared file that is missing, unpinned or not the pinned version."""
    pins = pinned() if PINS.exists() else {}
    stale = []
    for path in sorted({p for name in CASES for p in shared_files(name)}):
        if not (ROOT / path).exists():
            stale.append(f"{path}: missing")
        elif path not in pins:
            stale.append(f"{path}: not pinned in {PINS.name}")
        elif sha256(path) != pins[path]:
            stale.append(f"{path}: sha256 {sha256(path)} is not the pinned {pins[path]}")
    return stale


def pin_inputs() -> None:
    paths = sorted({p for name in CASES for p in shared_files(name)})
    pins = {p: sha256(p) for p in paths}
    PINS.write_text(json.dumps(pins, indent=2) + "\n")
    print(f"wrote {PINS.relative_to(ROOT)} ({len(pins)} files)")


def regenerate() -> None:
    for name, (inputs, args) in CASES.items():
        path = expected_path(name)
        path.write_bytes(render(inputs, args))
        print(f"wrote {path.relative_to(ROOT)}")


if __name__ == "__main__":
    if "--pin-inputs" in sys.argv[1:]:
        pin_inputs()
    elif stale := stale_inputs():
        head = "shared inputs changed; review them, then run with --pin-inputs:"
        sys.exit("\n".join([head, *stale]))
    regenerate()
