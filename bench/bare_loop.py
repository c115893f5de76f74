"""The reading floor: a bare Python loop over the records of a classic pcap file.

    python bench/bare_loop.py FILE      # prints {"packets": N, "captured_bytes": N}

Per record: read the 16-byte record header, unpack it, ``f.read`` the packet bytes, and
nothing else. Any real analyzer does at least this much, so its MB/s and packets/s are the
ceiling a pure-Python reader can reach (perf-anchors.md: ~1.6 GB/s, ~3.2 M packets/s here).
"""

from __future__ import annotations

import json
import struct
import sys

MAGICS = {
    b"\xd4\xc3\xb2\xa1": "<",
    b"\x4d\x3c\xb2\xa1": "<",  # little-endian, µs / ns
    b"\xa1\xb2\xc3\xd4": ">",
    b"\xa1\xb2\x3c\x4d": ">",  # big-endian, µs / ns
}


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    with open(sys.argv[1], "rb", buffering=1 << 20) as f:  # noqa: PTH123 - the floor itself
        head = f.read(24)
        endian = MAGICS.get(head[:4])
        if endian is None:
            print(f"{sys.argv[1]}: not a classic pcap file", file=sys.stderr)
            return 1
        unpack = struct.Struct(endian + "IIII").unpack
        read = f.read
        packets = 0
        captured = 0
        while True:
            hdr = read(16)
            if len(hdr) < 16:
                break
            caplen = unpack(hdr)[2]
            captured += len(read(caplen))
            packets += 1
    print(json.dumps({"packets": packets, "captured_bytes": captured}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
