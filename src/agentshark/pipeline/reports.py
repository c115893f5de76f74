"""What the pipeline reports besides exchanges: one report per source and per connection."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agentshark.errors import Diagnostic
from agentshark.net.events import Connection
from agentshark.sources.records import Interface


@dataclass(slots=True, kw_only=True)
class SourceReport:
    """One input file: its format, what was read and what went wrong."""

    index: int
    path: str
    format: str
    diagnostics: list[Diagnostic] = field(default_factory=list)
    packets: int = 0
    bytes: int = 0
    exchanges: int = 0
    connections: int = 0
    not_analyzed: dict[str, int] = field(default_factory=dict)  # packets by reason
    interfaces: list[Interface] = field(default_factory=list)
    secrets_blocks: int = 0  # pcapng Decryption Secrets Blocks applied (never shown)
    key_secrets: int = 0  # for key log sources: secrets loaded (never shown)
    stats: dict[str, int] = field(default_factory=dict)


@dataclass(slots=True, kw_only=True)
class ConnectionReport:
    """A TCP connection once it closed: endpoints, bytes, what it spoke."""

    connection: Connection
    source: int
    protocol: str  # "http/1.1", "h2", "tls", "unknown", or "http/1.1+websocket" etc.
    exchanges: int
    diagnostics: list[Diagnostic]
    switched_bytes: tuple[int, int] = (0, 0)  # bytes after a protocol switch, per direction
    tls: dict[str, Any] | None = None  # handshake facts (never key material)
