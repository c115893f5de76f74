"""The Kafka protocol's primitive types (https://kafka.apache.org/protocol.html#protocol_types):
a cursor over one message body.

Fixed-width integers are big-endian; ``VARINT``/``VARLONG`` are zig-zag base-128 varints (as
protobuf's ``sint``), ``UNSIGNED_VARINT`` plain base-128. Classic versions prefix a STRING
with an INT16 length (-1: null) and BYTES/ARRAY with an INT32 length; flexible versions
(KIP-482) use COMPACT forms, an UNSIGNED_VARINT of length + 1 (0: null), and end each
structure with tagged fields (a count, then tag, size, bytes each). A truncated or
inconsistent body raises :class:`KafkaDecodeError`, which the decoder turns into a
Diagnostic.
"""

from __future__ import annotations

import struct

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_U32 = struct.Struct(">I")
MAX_COUNT = 1 << 24  # an array longer than this is not in any message a broker accepts


class KafkaDecodeError(ValueError):
    """A body that does not follow the message's layout (truncated, a negative length...)."""


class Cursor:
    """Reads one body front to back; ``flex`` selects the compact forms."""

    __slots__ = ("data", "end", "flex", "pos")

    def __init__(self, data: bytes, *, flex: bool = False, pos: int = 0) -> None:
        self.data = data
        self.pos = pos
        self.end = len(data)
        self.flex = flex

    def _take(self, n: int) -> int:
        pos = self.pos
        if n < 0 or pos + n > self.end:
            raise KafkaDecodeError(f"{n} bytes needed at byte {pos}, {self.end - pos} left")
        self.pos = pos + n
        return pos

    def left(self) -> int:
        return self.end - self.pos

    def int8(self) -> int:
        pos = self._take(1)
        value = self.data[pos]
        return value - 256 if value > 127 else value

    def boolean(self) -> bool:
        return self.data[self._take(1)] != 0

    def int16(self) -> int:
        return int(_I16.unpack_from(self.data, self._take(2))[0])

    def int32(self) -> int:
        return int(_I32.unpack_from(self.data, self._take(4))[0])

    def uint32(self) -> int:
        return int(_U32.unpack_from(self.data, self._take(4))[0])

    def int64(self) -> int:
        return int(_I64.unpack_from(self.data, self._take(8))[0])

    def uuid(self) -> str:
        pos = self._take(16)
        return self.data[pos : pos + 16].hex()

    def uvarint(self) -> int:
        """An unsigned base-128 varint (at most 10 bytes)."""
        data, pos = self.data, self.pos
        if pos < self.end and data[pos] < 0x80:  # the common one-byte case
            self.pos = pos + 1
            return data[pos]
        result = shift = 0
        while True:
            if pos >= self.end or shift > 63:
                raise KafkaDecodeError(f"a varint cut or too long at byte {self.pos}")
            byte = data[pos]
            pos += 1
            result |= (byte & 0x7F) << shift
            if byte < 0x80:
                break
            shift += 7
        self.pos = pos
        return result

    def varint(self) -> int:
        """A zig-zag signed varint (VARINT and VARLONG)."""
        n = self.uvarint()
        return (n >> 1) ^ -(n & 1)

    def _length(self, classic: int) -> int:
        """A string/bytes length: -1 for null."""
        if self.flex:
            return self.uvarint() - 1
        return self.int16() if classic == 2 else self.int32()

    def string(self) -> str | None:
        n = self._length(2)
        if n < 0:
            return None
        pos = self._take(n)
        return self.data[pos : pos + n].decode("utf-8", "replace")

    def bytes_(self) -> bytes | None:
        n = self._length(4)
        if n < 0:
            return None
        pos = self._take(n)
        return self.data[pos : pos + n]

    def skip_bytes(self) -> int:
        """Skips a BYTES field; its length (-1: null)."""
        n = self._length(4)
        if n > 0:
            self._take(n)
        return n

    def count(self) -> int:
        """An array's length (-1: null)."""
        n = self.uvarint() - 1 if self.flex else self.int32()
        if n > MAX_COUNT or n > self.end - self.pos:
            raise KafkaDecodeError(f"an array of {n} items at byte {self.pos} cannot fit")
        return n

    def tags(self) -> dict[int, bytes]:
        """A flexible structure's tagged fields (nothing in classic versions)."""
        if not self.flex:
            return {}
        out: dict[int, bytes] = {}
        for _ in range(self.uvarint()):
            tag = self.uvarint()
            size = self.uvarint()
            pos = self._take(size)
            out[tag] = self.data[pos : pos + size]
        return out
