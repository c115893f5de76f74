"""Errors and diagnostics.

agentshark raises exceptions only at its boundary, when it cannot start at all::

    AgentsharkError
    ├── InputError            a file cannot be opened or its format is not one we read
    │   └── UnsupportedFormatError  the format is recognized but not supported (yet)
    ├── UsageError            the command line or API was called with incompatible options
    ├── JobError              a worker process of a shared run (--jobs) failed
    └── StoreError            the temporary store of a long analysis failed (disk full...)

Everything that goes wrong *inside* a readable input is a :class:`Diagnostic`: a value
attached to the source, connection or exchange it concerns, saying what was wrong, where,
and what the user can do. One malformed packet, connection or body never aborts a report.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Severity = Literal["error", "warning", "info"]


class AgentsharkError(Exception):
    """Base class of every exception agentshark raises on purpose."""


class InputError(AgentsharkError):
    """An input file cannot be read at all (missing, unreadable, unknown format)."""


class UnsupportedFormatError(InputError):
    """The input's format is recognized, but agentshark does not read it yet."""


class UsageError(AgentsharkError):
    """Options that cannot be honoured together."""


class JobError(AgentsharkError):
    """A worker process of a shared run (``--jobs``) failed or stopped: the run cannot go on."""


class StoreError(AgentsharkError):
    """The temporary on-disk store of ``analyze`` (:mod:`agentshark.trace.spill`) cannot be
    written or read: the run cannot go on."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Diagnostic:
    """A problem found in the evidence, with a location precise enough to look it up.

    ``code`` is a stable dotted identifier (``pcap.truncated_packet``, ``tcp.gap``...);
    ``location`` names the file offset, packet number, connection and direction, or JSON
    path; ``message`` says what was wrong and, where it helps, what to do.
    """

    code: str
    message: str
    location: str = ""
    severity: Severity = "warning"

    def to_json(self) -> dict[str, str]:
        return {
            "code": self.code,
            "severity": self.severity,
            "location": self.location,
            "message": self.message,
        }
