"""FragmentReassembler on its own: the contract ``net.packet`` relies on.

The header parsing around it, and most reassembly cases, are tested through ``PacketDecoder``
in ``test_packet.py``; these tests pin what the decoder's counts and diagnostics rest on.
"""

from __future__ import annotations

from agentshark.net.fragments import (
    FRAGMENT_TIMEOUT,
    DatagramKey,
    FragmentReassembler,
    Reassembled,
)

KEY4: DatagramKey = (4, bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2]), 0x55, 6)
KEY6: DatagramKey = (6, bytes(15) + b"\x01", bytes(15) + b"\x02", 0x1234, 0)
DATA = bytes(range(256)) * 4


class Sink:
    """Collects what the reassembler counts and reports."""

    def __init__(self) -> None:
        self.counts: list[str] = []
        self.reports: list[tuple[str, int]] = []

    def count(self, key: str) -> None:
        self.counts.append(key)

    def report(self, code: str, packet: int, message: str) -> None:
        assert message
        self.reports.append((code, packet))


def make(timeout: float = FRAGMENT_TIMEOUT) -> tuple[FragmentReassembler, Sink]:
    sink = Sink()
    return FragmentReassembler(sink.count, sink.report, timeout=timeout), sink


def add(
    r: FragmentReassembler, key: DatagramKey, packet: int, offset: int, size: int, more: bool
) -> Reassembled | None:
    data = DATA[offset : offset + size]
    return r.add(
        key, packet, float(packet), offset=offset, size=size, data=data, more=more, protocol=6
    )


def test_out_of_order_fragments_make_one_datagram() -> None:
    r, sink = make()
    assert add(r, KEY4, 1, 512, 512, False) is None
    whole = add(r, KEY4, 2, 0, 512, True)
    assert whole == Reassembled(DATA[:1024], 1024, 0, 6)
    assert sink.counts == ["ipv4-fragment-held"]  # the completing fragment is not counted
    assert sink.reports == []


def test_snap_length_cut_leaves_missing_bytes() -> None:
    r, _ = make()
    r.add(KEY4, 1, 1.0, offset=0, size=512, data=DATA[:400], more=True, protocol=6)
    whole = add(r, KEY4, 2, 512, 100, False)
    assert whole is not None
    assert (whole.captured, whole.missing, len(whole.payload)) == (400, 212, 612)


def test_ipv6_overlap_abandons_the_datagram() -> None:
    r, sink = make()
    add(r, KEY6, 1, 0, 512, True)
    assert add(r, KEY6, 2, 504, 16, True) is None
    assert sink.counts == ["ipv6-fragment-held", "ipv6-fragment-bad"]
    assert sink.reports == [("packet.fragment_overlap", 2)]
    r.close()
    assert len(sink.reports) == 1  # nothing left waiting


def test_timeout_and_close_report_at_the_first_fragment() -> None:
    r, sink = make(timeout=10.0)
    add(r, KEY4, 3, 0, 512, True)
    add(r, (*KEY4[:3], 0x56, 6), 20, 0, 512, True)  # 17 s later: the first is given up
    r.close()
    assert sink.reports == [("packet.fragments_incomplete", 3), ("packet.fragments_incomplete", 20)]
