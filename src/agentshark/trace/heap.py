"""The kept calls out of the way of CPython's cyclic garbage collector.

The trace stage keeps every call until the input ends. A full collection walks every object
the collector tracks, and with the kept calls that heap only grows: at 600 MB of capture
``analyze`` spent 4.2 s of 25 in collections that freed nothing, and more per megabyte the
larger the input. :class:`KeptHeap` moves what is alive at each checkpoint (the first item
kept, then every :data:`CHECKPOINT` more) into the permanent generation (:func:`gc.freeze`), which
collections skip, right after a collection of what is not frozen yet (so no garbage already
made is frozen with it): each collection then walks only what came since the last checkpoint.
:meth:`KeptHeap.release` gives the objects back to the collector (:func:`gc.unfreeze`) once
the analysis is over. Frozen objects are still freed by reference counting as usual; only a
reference cycle among them that becomes garbage waits for the release.
"""

from __future__ import annotations

import gc

__all__ = ["CHECKPOINT", "KeptHeap"]

CHECKPOINT = 4096  # items kept between two freezes


class KeptHeap:
    """Freezes the heap every :data:`CHECKPOINT` kept items; :meth:`release` at the end."""

    __slots__ = ("_next", "frozen")

    def __init__(self) -> None:
        self._next = 1  # the first one freezes what the imports made
        self.frozen = 0  # checkpoints passed

    def kept(self, count: int) -> None:
        """``count`` items are kept so far."""
        if count < self._next:
            return
        self._next = count + CHECKPOINT
        gc.collect()  # walks only the objects not frozen yet
        gc.freeze()
        self.frozen += 1

    def release(self) -> None:
        """Give the frozen objects back to the collector."""
        if self.frozen:
            gc.unfreeze()
            self.frozen = 0
