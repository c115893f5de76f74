"""Which worker of ``jobs`` takes a packet: raw frame bytes -> a worker index, before decoding.

``agentshark ... --jobs N`` splits one capture by connection (:mod:`agentshark.pipeline.jobs`):
every worker reads the whole file and keeps the packets this module gives it. The choice is
made from the link, IP and TCP header bytes (``struct.unpack_from``, the decoder's own link
layers) so that a worker never decodes another worker's packets:

* a *clean* TCP segment — IPv4 not fragmented or IPv6 with TCP as its first next header, the
  datagram captured to its end, a TCP header that fits — goes to the worker its connection
  hashes to (:func:`flow_owner`: the CRC-32 of each endpoint combined by XOR, so both
  directions of a connection land on the same worker). Such a packet is one the decoder
  turns into a segment without counting or reporting anything.
* UDP and everything that cannot be TCP (ARP, ICMP, unknown link types...) goes to worker 0,
  which counts and reports what the decoder says of it. All of QUIC is therefore on worker 0:
  a connection that migrates to a new 4-tuple stays whole.
* everything else that may still carry TCP (IP fragments, IPv6 extension headers, a datagram
  the snap length cut, segmentation-offload lengths, malformed headers) goes to
  :data:`EVERYONE`: each worker decodes it (fragments are reassembled in each one alike) and
  keeps the segment only if :func:`flow_owner` gives it the segment's connection; worker 0's
  decoder alone counts and reports.
"""

from __future__ import annotations

import struct
from zlib import crc32

from agentshark.net.packet import network_layer

__all__ = ["EVERYONE", "flow_owner", "packet_owner"]

EVERYONE = -1  # every worker decodes the packet; the segment's connection decides

_IPV4 = struct.Struct("!BxH2xHxB2x4s4s")  # version+IHL, total length, frag, protocol, src, dst
_IPV6 = struct.Struct("!IHBx16s16s")  # version+class+flow, payload length, next header, src, dst
_TCP = struct.Struct("!HH8xB")  # ports, then the data offset byte
_ETHERNET_IP = struct.Struct("!12xH")  # the ethertype of an untagged frame
#   ethertype | IPv4: version+IHL, total length, frag, protocol, src, dst | TCP ports, offset
_FAST = struct.Struct("!12xHBxH2xHxB2x4s4sHH8xB")
_IPV4_TYPE, _IPV6_TYPE = 0x0800, 0x86DD
# IPv6 next headers that are extension headers (RFC 8200 §4, fragment 44, AH 51): the chain
# is walked by the decoder, so such a packet goes to every worker
_IPV6_CHAIN = frozenset((0, 43, 44, 51, 60, 135, 139, 140))


def flow_owner(src: bytes, sport: int, dst: bytes, dport: int, jobs: int) -> int:
    """The worker of the connection between two endpoints, the same for both directions
    (the CRC-32 of each endpoint, combined by XOR)."""
    return (crc32(src, sport) ^ crc32(dst, dport)) % jobs


def packet_owner(linktype: int, data: bytes, jobs: int) -> int:
    """The worker that takes the frame ``data`` of ``linktype``, or :data:`EVERYONE`."""
    if linktype == 1 and len(data) >= 54:
        # the usual case in one unpack: Ethernet, IPv4 without options, TCP
        etype, vihl, length, frag, proto, src, dst, sport, dport, doff = _FAST.unpack_from(data)
        if (
            etype == _IPV4_TYPE
            and vihl == 0x45
            and proto == 6
            and not frag & 0x3FFF
            and (doff >> 2) & 0x3C <= length - 20
            and doff >= 0x50
            and 14 + length <= len(data)
        ):
            return (crc32(src, sport) ^ crc32(dst, dport)) % jobs
    if linktype == 1 and len(data) >= 14:
        ethertype = _ETHERNET_IP.unpack_from(data)[0]
        offset = 14
        if ethertype != _IPV4_TYPE and ethertype != _IPV6_TYPE:
            found = network_layer(1, data)  # VLAN tags, PPPoE
            if found is None:
                return 0
            ethertype, offset = found
    else:
        found = network_layer(linktype, data)
        if found is None:
            return 0
        ethertype, offset = found
    size = len(data)
    if ethertype == _IPV4_TYPE:
        if size < offset + 20:
            return EVERYONE
        vihl, length, frag, proto, src, dst = _IPV4.unpack_from(data, offset)
        if frag & 0x3FFF:
            return EVERYONE  # a fragment: reassembled by every worker alike
        if proto != 6:
            return 0
        header = (vihl & 0x0F) * 4
        if vihl >> 4 != 4 or header < 20 or length < header:
            return EVERYONE
        start = offset + header
        end = offset + length
    elif ethertype == _IPV6_TYPE:
        if size < offset + 40:
            return EVERYONE
        first, length, proto, src, dst = _IPV6.unpack_from(data, offset)
        if proto != 6:
            return EVERYONE if proto in _IPV6_CHAIN else 0
        if first >> 28 != 6 or not length:
            return EVERYONE
        start = offset + 40
        end = start + length
    else:
        return 0
    if end > size or end - start < 20:
        return EVERYONE  # cut by the snap length, or a header that does not fit
    sport, dport, doff = _TCP.unpack_from(data, start)
    header = (doff >> 4) * 4
    if header < 20 or end - start < header:
        return EVERYONE
    return flow_owner(src, sport, dst, dport, jobs)
