"""The fuzz campaign's crash isolation: a child killed by a native crash leaves the input it
was running (and the ones before it) in the ring, and its Python stack in its stderr."""

from __future__ import annotations

import os
from pathlib import Path

from tests.fuzz.isolate import Ring, crash_place, malloc_debug_env, run_forked


def test_ring_keeps_the_last_inputs_oldest_first(tmp_path: Path) -> None:
    ring = Ring(tmp_path / "t.ring", slots=4, slot_size=256)
    inputs = [[bytes([i]) * i, b"", b"x" * (i % 3)] for i in range(1, 11)]
    for seq, parts in enumerate(inputs, 1):
        ring.put(seq, parts)
    assert ring.read() == [(seq, inputs[seq - 1]) for seq in range(7, 11)]
    ring.clear()
    assert ring.read() == []


def test_ring_writes_an_input_larger_than_a_slot_to_a_file(tmp_path: Path) -> None:
    ring = Ring(tmp_path / "t.ring", slots=2, slot_size=64)
    big = [b"a" * 100, b"b" * 300]
    ring.put(1, [b"small"])
    ring.put(2, big)
    assert ring.read() == [(1, [b"small"]), (2, big)]


def _crash_on(ring: Ring, inputs: list[list[bytes]]) -> None:
    for seq, parts in enumerate(inputs, 1):
        ring.put(seq, parts)
        if parts[0].startswith(b"boom"):
            os.abort()  # what glibc does on "realloc(): invalid next size"


def test_a_native_crash_in_the_child_leaves_its_input_and_stack(tmp_path: Path) -> None:
    ring = Ring(tmp_path / "t.ring", slots=4, slot_size=1024)
    inputs = [[b"one"], [b"two"], [b"boom!", b"\x00\xff"], [b"never run"]]
    err = tmp_path / "child.stderr"
    how = run_forked(lambda: _crash_on(ring, inputs), err)
    assert how == "SIGABRT"
    assert ring.read() == [(1, [b"one"]), (2, [b"two"]), (3, [b"boom!", b"\x00\xff"])]
    text = err.read_text()
    assert "Fatal Python error: Aborted" in text
    assert crash_place(text) == f"test_isolate.py:{_abort_line()}"


def _abort_line() -> int:
    source = Path(__file__).read_text().splitlines()
    return next(i for i, line in enumerate(source, 1) if "os.abort()" in line)


def test_a_child_that_returns_or_raises(tmp_path: Path) -> None:
    err = tmp_path / "child.stderr"
    assert run_forked(lambda: None, err) is None

    def fails() -> None:
        raise ValueError("in the child")

    assert run_forked(fails, err) == "exit 1"
    assert "ValueError: in the child" in err.read_text()


def test_crash_place_prefers_the_innermost_agentshark_frame() -> None:
    dump = (
        "Fatal Python error: Aborted\n\nCurrent thread 0x1 (most recent call first):\n"
        '  File "/x/site-packages/brotli.py", line 10 in process\n'
        '  File "/w/src/agentshark/http/decoders.py", line 261 in _process_bounded\n'
        '  File "/w/src/agentshark/http/content.py", line 140 in _decode\n'
    )
    assert crash_place(dump) == "decoders.py:261"
    assert crash_place(dump.replace("/agentshark/", "/other/")) == "brotli.py:10"
    assert crash_place("no frames") == "?"


def test_malloc_debug_env_turns_on_glibc_checks() -> None:
    env = malloc_debug_env()
    assert env["MALLOC_CHECK_"] == "3"
    assert env["PYTHONMALLOC"] == "malloc"
    assert "LD_PRELOAD" not in env or env["LD_PRELOAD"].endswith("libc_malloc_debug.so.0")
