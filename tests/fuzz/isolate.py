"""Crash isolation for the fuzz campaign (scripts/fuzz_campaign.py).

A Python exception is a finding the campaign catches in-process; a *native* crash (a C
extension corrupting the heap and glibc aborting with ``realloc(): invalid next size``, a
segfault, the kernel's OOM killer) ends the process and, without this module, takes the
input that caused it along. So:

- each slice of the campaign runs in a forked child (:func:`run_forked`), whose stderr goes
  to a file with :mod:`faulthandler` enabled: a fatal signal leaves the Python stack of the
  crash there;
- before each input the child writes it into a :class:`Ring` of the last
  :data:`RING_SLOTS` inputs, an ``mmap`` of a file shared with the kernel's page cache: the
  bytes survive the child's death without a write system call per input. Heap corruption is
  often noticed one or more inputs after the one that caused it, hence a ring and not one slot;
- the parent reads the ring after a crash, saves the inputs and goes on with the next target.

:data:`MALLOC_DEBUG_ENV` makes glibc check the heap at every ``malloc``/``free`` (and fill
freed memory), so corruption aborts close to its cause rather than thousands of inputs later.
"""

from __future__ import annotations

import faulthandler
import mmap
import os
import re
import signal
import struct
import sys
import traceback
from collections.abc import Callable
from pathlib import Path

RING_SLOTS = 8
SLOT_SIZE = 1 << 20  # bytes per slot; a larger input is written to a file of its own
_HEADER = struct.Struct("<QII")  # sequence number (1-based, 0: empty), parts, 1 if in a file
_LENGTH = struct.Struct("<I")

_MALLOC_DEBUG_LIBS = (
    "/usr/lib/x86_64-linux-gnu/libc_malloc_debug.so.0",
    "/usr/lib/aarch64-linux-gnu/libc_malloc_debug.so.0",
    "/usr/lib64/libc_malloc_debug.so.0",
    "/lib64/libc_malloc_debug.so.0",
)


def malloc_debug_env() -> dict[str, str]:
    """Environment variables for glibc's heap checks: ``MALLOC_CHECK_=3`` (abort on a corrupt
    chunk; since glibc 2.34 it needs ``libc_malloc_debug.so`` preloaded), freed memory
    perturbed, and Python's small-object allocator off so every object is a malloc chunk."""
    env = {
        "MALLOC_CHECK_": "3",
        "MALLOC_PERTURB_": "165",
        "GLIBC_TUNABLES": "glibc.malloc.check=3:glibc.malloc.perturb=165",
        "PYTHONMALLOC": "malloc",
        "PYTHONFAULTHANDLER": "1",
    }
    lib = next((p for p in _MALLOC_DEBUG_LIBS if os.path.exists(p)), None)
    if lib is not None:
        env["LD_PRELOAD"] = lib
    return env


class Ring:
    """The last :data:`RING_SLOTS` inputs of a child, readable after it died."""

    def __init__(self, path: Path, slots: int = RING_SLOTS, slot_size: int = SLOT_SIZE) -> None:
        self.path = path
        self.slots = slots
        self.slot_size = slot_size
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a+b") as f:
            f.truncate(slots * slot_size)
            self._map = mmap.mmap(f.fileno(), slots * slot_size)

    def clear(self) -> None:
        for slot in range(self.slots):
            _HEADER.pack_into(self._map, slot * self.slot_size, 0, 0, 0)

    def put(self, seq: int, parts: list[bytes]) -> None:
        """Record input number ``seq`` (1-based) before it runs."""
        slot = seq % self.slots
        base = slot * self.slot_size
        m = self._map
        _HEADER.pack_into(m, base, 0, 0, 0)  # invalid while it is being written
        size = _HEADER.size + _LENGTH.size * len(parts) + sum(map(len, parts))
        in_file = size > self.slot_size
        if in_file:
            self._big(slot).write_bytes(_pack(parts))
        else:
            pos = base + _HEADER.size
            for part in parts:
                _LENGTH.pack_into(m, pos, len(part))
                pos += _LENGTH.size
                m[pos : pos + len(part)] = part
                pos += len(part)
        _HEADER.pack_into(m, base, seq, len(parts), int(in_file))

    def read(self) -> list[tuple[int, list[bytes]]]:
        """The recorded inputs, oldest first, as (sequence number, parts)."""
        out: list[tuple[int, list[bytes]]] = []
        m = self._map
        for slot in range(self.slots):
            base = slot * self.slot_size
            seq, count, in_file = _HEADER.unpack_from(m, base)
            if not seq:
                continue
            if in_file:
                out.append((seq, _unpack(self._big(slot).read_bytes())))
                continue
            parts, pos = [], base + _HEADER.size
            for _ in range(count):
                (length,) = _LENGTH.unpack_from(m, pos)
                pos += _LENGTH.size
                parts.append(bytes(m[pos : pos + length]))
                pos += length
            out.append((seq, parts))
        return sorted(out, key=lambda entry: entry[0])

    def _big(self, slot: int) -> Path:
        return self.path.with_name(f"{self.path.name}.{slot}")


def _pack(parts: list[bytes]) -> bytes:
    return b"".join(_LENGTH.pack(len(p)) + p for p in parts)


def _unpack(data: bytes) -> list[bytes]:
    parts, pos = [], 0
    while pos + _LENGTH.size <= len(data):
        (length,) = _LENGTH.unpack_from(data, pos)
        pos += _LENGTH.size
        parts.append(data[pos : pos + length])
        pos += length
    return parts


def run_forked(fn: Callable[[], object], stderr: Path) -> str | None:
    """Run ``fn`` in a forked child with its stderr in ``stderr`` (faulthandler on).

    None when the child returned; else how it ended: ``SIGABRT`` (the signal's name) or
    ``exit 1`` (an exception escaped ``fn``, its traceback is in ``stderr``).
    """
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the child
        code = 1
        try:
            err = stderr.open("w")  # open until os._exit
            os.dup2(err.fileno(), 2)  # what C code writes to stderr (glibc's abort message)
            sys.stderr = err
            faulthandler.enable(file=err, all_threads=False)
            fn()
            code = 0
        except BaseException:  # noqa: BLE001  (reported to the parent by the exit code)
            traceback.print_exc()
        finally:
            sys.stderr.flush()
            os._exit(code)
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            break
        except InterruptedError:
            continue
        except KeyboardInterrupt:
            os.kill(pid, signal.SIGTERM)
            raise
    if os.WIFSIGNALED(status):
        return signal.Signals(os.WTERMSIG(status)).name
    code = os.WEXITSTATUS(status)
    return None if code == 0 else f"exit {code}"


_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+)')


def crash_place(stderr_text: str) -> str:
    """``file.py:line`` of the innermost agentshark frame in a faulthandler dump (its most
    recent call comes first), else of the innermost frame, else ``?``."""
    frames = list(_FRAME.finditer(stderr_text))
    ours = [m for m in frames if "/agentshark/" in m["file"]]
    if not (ours or frames):
        return "?"
    pick = (ours or frames)[0]
    return f"{Path(pick['file']).name}:{pick['line']}"
