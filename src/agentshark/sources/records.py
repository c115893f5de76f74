"""What packet sources yield: captured packet records and the side data found between them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple


class Packet(NamedTuple):
    """One captured packet record.

    A NamedTuple rather than a dataclass: it is built once per packet on the hot path.
    ``data`` holds the captured bytes (``len(data)`` may be below ``orig_len`` when the
    capture's snap length cut the packet). ``ts`` is epoch seconds.
    """

    ts: float
    linktype: int
    data: bytes
    orig_len: int
    number: int  # 1-based packet number within the source, as Wireshark counts
    offset: int  # byte offset of the record in the file


@dataclass(frozen=True, slots=True, kw_only=True)
class DecryptionSecrets:
    """A pcapng Decryption Secrets Block: key material for the packets after it.

    ``secrets_type`` is the block's type code (0x544c534b ``TLSK`` is an NSS key log).
    """

    secrets_type: int
    data: bytes
    offset: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Interface:
    """A capture interface (pcapng IDB, or the single interface of a pcap file)."""

    index: int
    linktype: int
    snaplen: int
    ts_resolution: float  # seconds per timestamp unit
    name: str | None = None
