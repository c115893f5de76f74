"""IP fragment reassembly: fragments of IPv4 and IPv6 datagrams in, whole payloads out.

Input: one fragment at a time, its headers already parsed by ``net.packet``: the datagram's
``DatagramKey``, the fragment's offset in the datagram, its size on the wire, the bytes
captured, its More Fragments flag and the upper-layer protocol it names. Output: a
``Reassembled`` payload when the fragment completes its datagram, else ``None``, the fragment
then counted under exactly one key (``"ipv4-fragment-held"``, ``"ipv6-fragment-bad"``...).
Counts and problems go to the ``count`` and ``report`` callables the decoder passes in, so the
decoder's one-key-per-packet rule and its diagnostic budget hold here too.

Rules enforced (``net.packet`` turns the header fields into byte offsets):

- Which fragments belong together: RFC 791 §2.3 (https://www.rfc-editor.org/rfc/rfc791#section-2.3)
  "combines internet datagrams that all have the same value for the four fields:
  identification, source, destination, and protocol"; RFC 8200 §4.5
  (https://www.rfc-editor.org/rfc/rfc8200#section-4.5) uses source, destination and
  Fragment Identification, so IPv6 keys carry protocol 0.
- Size: RFC 8200 §4.5 "If the length and offset of a fragment are such that the Payload Length
  of the packet reassembled from that fragment would exceed 65,535 octets, then that fragment
  must be discarded"; an IPv4 datagram cannot pass 65,535 octets either (RFC 791 §3.1, Total
  Length). RFC 8200 §4.5 "If the length of a fragment [...] is not a multiple of 8 octets and
  the M flag of that fragment is 1, then that fragment must be discarded".
- Overlaps: RFC 8200 §4.5 "If any of the fragments being reassembled overlap with any other
  fragments [...] reassembly of that packet must be abandoned"; exact duplicates are dropped
  instead, as §4.5 allows. RFC 791 does not say which copy wins: here the bytes received first
  are kept, and the overlap is reported.
- Time: RFC 8200 §4.5 "If insufficient fragments are received to complete reassembly of a
  packet within 60 seconds of the reception of the first-arriving fragment of that packet,
  reassembly of that packet must be abandoned" (``fragment_timeout``, for IPv4 too). Besides,
  at most ``max_datagrams`` datagrams and ``max_bytes`` captured bytes wait at once; beyond
  that the oldest is given up.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from ipaddress import ip_address
from typing import NamedTuple

__all__ = [
    "FRAGMENT_TIMEOUT",
    "MAX_FRAGMENT_BYTES",
    "MAX_FRAGMENT_DATAGRAMS",
    "DatagramKey",
    "FragmentReassembler",
    "Reassembled",
]

FRAGMENT_TIMEOUT = 60.0  # seconds; Linux gives up after 30 (ipfrag_time), RFC 8200 after 60
MAX_FRAGMENT_DATAGRAMS = 4096
MAX_FRAGMENT_BYTES = 32 << 20
_MAX_DATAGRAM = 65535

DatagramKey = tuple[int, bytes, bytes, int, int]
"""IP version, source, destination, identification, protocol (0 for IPv6)."""


class Reassembled(NamedTuple):
    """The payload of a whole datagram, from fragment offset 0."""

    payload: bytes  # as long as the datagram; bytes that were not captured are zero
    captured: int  # the captured prefix: fragments cut by the snap length leave holes
    missing: int  # bytes of the payload that were on the wire but not captured
    protocol: int  # the upper-layer protocol (IPv6: the next header of offset 0)


@dataclass(slots=True)
class _Datagram:
    """Fragments of one IP datagram, in arrival order: (offset, length on the wire, bytes
    captured). ``total`` is known once the last fragment (no More Fragments flag) is in."""

    key: DatagramKey
    first_packet: int
    first_ts: float
    next_header: int = -1  # IPv6: from the fragment at offset 0; IPv4: the header's protocol
    total: int = -1
    held: int = 0
    pieces: list[tuple[int, int, bytes]] = field(default_factory=list)

    def describe(self) -> str:
        version, src, dst, ident, _ = self.key
        return f"IPv{version} datagram {ip_address(src)} -> {ip_address(dst)} id 0x{ident:x}"


class FragmentReassembler:
    """Hold fragments until their datagram is whole (see the module doc).

    ``count(key)`` counts a fragment that did not complete a datagram; ``report(code, packet,
    message)`` reports a problem at a packet number.
    """

    def __init__(
        self,
        count: Callable[[str], None],
        report: Callable[[str, int, str], None],
        *,
        max_datagrams: int = MAX_FRAGMENT_DATAGRAMS,
        max_bytes: int = MAX_FRAGMENT_BYTES,
        timeout: float = FRAGMENT_TIMEOUT,
    ) -> None:
        self._count = count
        self._report = report
        self._pending: dict[DatagramKey, _Datagram] = {}  # in order of first fragment
        self._held_bytes = 0
        self._max_datagrams = max_datagrams
        self._max_bytes = max_bytes
        self._timeout = timeout

    def add(
        self,
        key: DatagramKey,
        packet: int,
        ts: float,
        *,
        offset: int,
        size: int,
        data: bytes,
        more: bool,
        protocol: int,
    ) -> Reassembled | None:
        """Hold one fragment of ``size`` bytes on the wire at ``offset``, ``data`` the part
        captured; return its datagram's payload if this fragment completes it."""
        version = key[0]
        held = f"ipv{version}-fragment-held"
        self._expire(ts)
        if offset + size > _MAX_DATAGRAM or (version == 6 and more and size % 8):
            # RFC 8200 §4.5: too long for any datagram, or a non-final fragment whose length
            # is not a multiple of 8 octets.
            self._count(f"ipv{version}-fragment-bad")
            self._report(
                "packet.bad_fragment",
                packet,
                f"IPv{version} fragment at offset {offset} with {size} bytes cannot be part of "
                "a datagram: it is skipped",
            )
            return None
        datagram = self._pending.get(key)
        if datagram is None:
            datagram = self._pending[key] = _Datagram(key, packet, ts)
        if offset == 0 or version == 4:  # IPv4 repeats the protocol in every fragment
            datagram.next_header = protocol
        if not more:
            if datagram.total not in (-1, offset + size):
                self._report(
                    "packet.bad_fragment",
                    packet,
                    f"{datagram.describe()} gets a second last fragment, ending at "
                    f"{offset + size} instead of {datagram.total}: the first is kept",
                )
            else:
                datagram.total = offset + size
        for start, length, piece in datagram.pieces:
            if start < offset + size and offset < start + length:
                if (start, length, piece) == (offset, size, data):
                    self._count(held)  # the same fragment again (a duplicate in the capture)
                    return None
                if version == 6:  # RFC 8200 §4.5: an overlap abandons the reassembly
                    self._drop(
                        datagram,
                        packet,
                        "packet.fragment_overlap",
                        "an overlapping fragment arrived, and RFC 8200 §4.5 has the receiver "
                        "discard the datagram",
                    )
                    self._count("ipv6-fragment-bad")
                    return None
                self._report(
                    "packet.fragment_overlap",
                    packet,
                    f"{datagram.describe()}: the fragment at offset {offset} overlaps bytes "
                    "already received; the bytes received first are kept (receivers differ "
                    "on this, RFC 791 does not say)",
                )
                break
        datagram.pieces.append((offset, size, data))
        datagram.held += len(data)
        self._held_bytes += len(data)
        whole = _assemble(datagram)
        if whole is not None:
            del self._pending[key]
            self._held_bytes -= datagram.held
            return whole
        self._count(held)
        self._enforce_caps()
        return None

    def close(self) -> None:
        """The capture ended: report every datagram still waiting for fragments."""
        for datagram in list(self._pending.values()):
            self._give_up(datagram, "the capture ended before")

    def _expire(self, now: float) -> None:
        while self._pending:
            oldest = next(iter(self._pending.values()))
            if now - oldest.first_ts <= self._timeout:
                return
            self._give_up(oldest, f"no fragment completed it within {self._timeout:g} s of")

    def _enforce_caps(self) -> None:
        while len(self._pending) > self._max_datagrams or self._held_bytes > self._max_bytes:
            self._drop(
                next(iter(self._pending.values())),
                -1,
                "packet.fragments_evicted",
                f"more than {self._max_datagrams} datagrams or {self._max_bytes} bytes of "
                "fragments were waiting, so the oldest was given up",
            )

    def _give_up(self, datagram: _Datagram, why: str) -> None:
        self._drop(datagram, -1, "packet.fragments_incomplete", f"{why} its first fragment")

    def _drop(self, datagram: _Datagram, packet: int, code: str, why: str) -> None:
        """Forget a datagram that will not complete; ``packet`` -1 reports it at its first
        fragment."""
        del self._pending[datagram.key]
        self._held_bytes -= datagram.held
        total = f"{datagram.total}" if datagram.total >= 0 else "an unknown number of"
        self._report(
            code,
            datagram.first_packet if packet < 0 else packet,
            f"{datagram.describe()}: {len(datagram.pieces)} fragments ({datagram.held} of "
            f"{total} bytes) first seen in packet {datagram.first_packet} never made a whole "
            f"datagram ({why}): its payload is lost",
        )


def _assemble(datagram: _Datagram) -> Reassembled | None:
    """The datagram's payload once every byte of it has arrived (the first received wins)."""
    if datagram.total < 0:
        return None
    covered = 0
    for start, length, _ in sorted(datagram.pieces):
        if start > covered:
            return None
        covered = max(covered, start + length)
    if covered < datagram.total or datagram.next_header < 0:
        return None
    total = datagram.total
    buffer = bytearray(total)
    for start, _, piece in reversed(datagram.pieces):  # the first received wins
        if start < total:
            piece = piece[: total - start]  # a fragment may claim more than the last says
            buffer[start : start + len(piece)] = piece
    captured = 0  # the captured prefix: fragments cut by the snap length leave holes
    for start, _, piece in sorted(datagram.pieces):
        if start > captured:
            break
        captured = max(captured, start + len(piece))
    captured = min(captured, total)
    return Reassembled(bytes(buffer), captured, total - captured, datagram.next_header)
