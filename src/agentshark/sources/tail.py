"""Following a file that is being written: the bytes it gained since the last look.

:class:`TailFile` never blocks: :meth:`~TailFile.read` returns what was appended (``b""`` when
nothing was), reading at most ``chunk`` bytes a call so that one look stays short. A file
that does not exist yet is waited for (``tcpdump -w`` creates it when it starts). Two
changes end the following, each said with a :class:`~agentshark.errors.Diagnostic`:

- ``follow.truncated``: the file is shorter than what was already read (truncated, or
  overwritten by a new capture from its start). The bytes already read stay analyzed.
- ``follow.replaced``: the path now names another file (rotation by rename and re-create,
  ``logrotate``, an editor's save). What the old file held is read to its end first.

A file that cannot be opened (permissions, a directory) ends at once with
``source.unreadable``, as :func:`agentshark.pipeline.run` says it. A file that is removed
while followed is still read through the open descriptor: a writer that holds it open can
still append. ``tcpdump -C``/``-G`` rotation writes *new* names (``file``, ``file1``...):
the followed name simply stops growing.

A document (a HAR file, a cassette) is valid only whole, and its writers rewrite it: a
gateway writes each new HAR entry over the closing brackets of the last
(:class:`~agentshark.output.har_write.HarFile`), a tool saves a new version under the same
name. Appended bytes mean nothing there, so :meth:`TailFile.whole` reads such a file whole
again whenever it changed (its size, modification time or inode), a new file under the
path being simply its next version.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from agentshark.errors import Diagnostic

__all__ = ["TailFile"]

CHUNK = 1 << 20


@dataclass(slots=True)
class TailFile:
    """The growing file at ``path``; ``ended`` holds the diagnostic that stopped it."""

    path: str
    chunk: int = CHUNK
    position: int = 0  # bytes read so far
    ended: Diagnostic | None = None
    _fd: int | None = field(default=None, repr=False)
    _identity: tuple[int, int] | None = field(default=None, repr=False)
    _version: tuple[int, int, int] | None = field(default=None, repr=False)  # for whole()

    def read(self) -> bytes:
        """What the file gained (at most ``chunk`` bytes); ``b""`` when nothing, when it
        does not exist yet, or once :attr:`ended` is set."""
        if self.ended is not None:
            return b""
        if self._fd is None and not self._open():
            return b""
        assert self._fd is not None
        try:
            data = os.read(self._fd, self.chunk)
        except OSError as exc:  # a directory, an I/O error
            self.ended = _unreadable(self.path, exc)
            return b""
        if data:
            self.position += len(data)
            return data
        self._check()
        return b""

    def whole(self) -> bytes | None:
        """The file's whole content when it changed since the last call (or since it was
        first read), else None: for documents (see the module docstring). A file under the
        path that is not the one open is the document's next version: it is opened."""
        if self.ended is not None:
            return None
        try:
            st = Path(self.path).stat()
        except FileNotFoundError:
            return None  # between a writer's remove and its new file: the next look sees it
        except OSError as exc:
            self.ended = _unreadable(self.path, exc)
            return None
        version = (st.st_ino, st.st_size, st.st_mtime_ns)
        if version == self._version:
            return None
        if self._fd is not None and (st.st_dev, st.st_ino) != self._identity:
            self.close()
            self._identity = None
        if self._fd is None and not self._open():
            return None
        assert self._fd is not None
        try:
            size = os.fstat(self._fd).st_size
            data = os.pread(self._fd, size, 0)
        except OSError as exc:
            self.ended = _unreadable(self.path, exc)
            return None
        self._version = version
        self.position = len(data)
        return data

    def pending(self) -> bool:
        """Whether the file holds bytes not read yet (a cheap ``fstat``)."""
        if self._fd is None or self.ended is not None:
            return False
        return os.fstat(self._fd).st_size > self.position

    @property
    def opened(self) -> bool:
        """Whether the file was found (it may not exist yet)."""
        return self._identity is not None

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def _open(self) -> bool:
        try:
            self._fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return False
        except OSError as exc:
            self.ended = _unreadable(self.path, exc)
            return False
        st = os.fstat(self._fd)
        self._identity = (st.st_dev, st.st_ino)
        return True

    def _check(self) -> None:
        """At the end of what was written: shrunk, or replaced?"""
        assert self._fd is not None
        size = os.fstat(self._fd).st_size
        if size < self.position:
            self.ended = Diagnostic(
                code="follow.truncated",
                severity="error",
                location=f"{self.path} at offset {size}",
                message=f"{self.path} shrank from {self.position} to {size} bytes while it was "
                "followed (truncated, or a new capture started over it): following stops; "
                f"the {self.position} bytes read before are analyzed",
            )
            return
        try:
            st = Path(self.path).stat()
        except FileNotFoundError:
            return  # removed: its writer may still append through its descriptor
        if (st.st_dev, st.st_ino) != self._identity:
            self.ended = Diagnostic(
                code="follow.replaced",
                severity="warning",
                location=f"{self.path} at offset {self.position}",
                message=f"{self.path} now names another file (rotated or re-created) after "
                f"{self.position} bytes of the one followed: following stops at the end of "
                "the old file; follow or analyze the new one on its own",
            )


def _unreadable(path: str, exc: OSError) -> Diagnostic:
    return Diagnostic(
        code="source.unreadable",
        severity="error",
        location=path,
        message=f"cannot read {path}: {exc.strerror or exc}",
    )
