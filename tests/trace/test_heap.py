"""The kept calls frozen out of the collector's walks (``trace.heap``)."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from agentshark.trace.heap import CHECKPOINT, KeptHeap


class _Node:
    def __init__(self) -> None:
        self.other: _Node | None = None


@pytest.fixture
def thawed() -> Iterator[None]:
    gc.unfreeze()
    yield
    gc.unfreeze()


@pytest.mark.usefixtures("thawed")
def test_checkpoints_freeze_what_is_kept_and_release_gives_it_back() -> None:
    heap = KeptHeap()
    heap.kept(1)  # the first item: what the imports made
    first = gc.get_freeze_count()
    assert first > 0
    kept = [[n] for n in range(1000)]  # tracked objects, alive
    heap.kept(CHECKPOINT)  # not yet a checkpoint
    assert gc.get_freeze_count() == first
    heap.kept(CHECKPOINT + 1)
    assert gc.get_freeze_count() >= first + len(kept)
    assert heap.frozen == 2
    heap.release()
    assert gc.get_freeze_count() == 0
    assert heap.frozen == 0


@pytest.mark.usefixtures("thawed")
def test_garbage_made_before_a_checkpoint_is_not_frozen() -> None:
    """A reference cycle dropped before a checkpoint is collected there, not frozen with
    the kept objects (it would wait for the release)."""
    heap = KeptHeap()
    a, b = _Node(), _Node()
    a.other, b.other = b, a
    gone = weakref.ref(a)
    del a, b
    heap.kept(1)
    assert gone() is None
    heap.release()
