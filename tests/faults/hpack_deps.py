"""Which HTTP/2 messages of a clean run depend on which through HPACK state, read
independently of agentshark's HTTP/2 and HPACK code.

Input: the bytes of each direction of an HTTP/2 connection, as the clean run's session
received them (cleartext or decrypted: the reference the fault suite compares against).
Output: every header block in order (:class:`Block`: its direction, stream and fields) with
the dynamic table entries it inserted and those it referenced (RFC 7541 §2.3.3, §6).

The frames are split here (RFC 9113 §4.1: a 9-byte header, the payload; HEADERS,
PUSH_PROMISE and CONTINUATION carry the header block fragments, §6.2, §6.6, §6.10). Each
block is cut into its representations by a small scan (§6.1 indexed field, §6.2 literals,
§6.3 size update: a prefixed integer, §5.1, and string literals, §5.2, skipped by their
length) and each representation is given on its own to the ``hpack`` library's ``Decoder``,
one per direction, whose table then holds exactly what the encoder's holds (its own eviction
by size, §4.4). A parallel list, newest first, names the block that inserted each entry:
after every representation it is cut to the length of hpack's table. So an index (62 and up)
names an entry by its inserting block at the moment it is used. Serials number the blocks
in order, each direction's after the other's, so within a direction they follow its order.

:func:`state_dependent` then says which messages cannot be known once some header blocks
are lost (the rule is in its docstring).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from hpack import Decoder

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
HEADERS, PUSH_PROMISE, CONTINUATION = 0x1, 0x5, 0x9
END_HEADERS, PADDED, PRIORITY = 0x4, 0x8, 0x20
STATIC_ENTRIES = 61
_FRAME = struct.Struct(">HBBBI")


@dataclass(frozen=True, slots=True, kw_only=True)
class Ref:
    """A dynamic table reference (an indexed field, or a literal's indexed name): its
    ``index``, the serial of the block that inserted the entry, and whether the literal
    inserts an entry under that name."""

    index: int
    owner: int
    inserts: bool


@dataclass(slots=True, kw_only=True)
class Block:
    """One header block: sent by ``side`` (0 client, 1 server) for the message of ``stream``
    (a PUSH_PROMISE's block is the promised request's), the ``serial``-th of its direction."""

    side: int
    stream: int
    serial: int
    ts: float = 0.0  # when its last byte came (the time stamp of the bytes that held it)
    fields: list[tuple[str, str]] = field(default_factory=list)
    # per field: the dynamic table index it (or its name) came from, 0 when none (a static
    # index or literal name): the fields an observer without the table still decodes
    sources: list[int] = field(default_factory=list)
    inserted: int = 0  # entries it added to its direction's dynamic table
    refs: list[Ref] = field(default_factory=list)
    error: str = ""  # hpack's complaint, if the block did not decode (nothing after it is)


class _Direction:
    """The HPACK decoder of one direction and the owner of each of its table's entries."""

    def __init__(self, side: int) -> None:
        self.side = side
        self.decoder = Decoder()
        self.decoder.max_allowed_table_size = 1 << 24  # not checking the peer's limit here
        self.decoder.max_header_list_size = 1 << 24
        self.owners: list[int] = []  # newest first: the serial of the block that added it
        self.broken = False

    def block(self, stream: int, serial: int, data: bytes) -> Block:
        out = Block(side=self.side, stream=stream, serial=serial)
        if self.broken:
            out.error = "an earlier block did not decode"
            return out
        try:
            for start, end, index, inserts in representations(data):
                if index > STATIC_ENTRIES:
                    pos = index - STATIC_ENTRIES - 1
                    out.refs.append(Ref(index=index, owner=self.owners[pos], inserts=inserts))
                for name, value in self.decoder.decode(data[start:end], raw=True):
                    out.fields.append((_text(name), _text(value)))
                    out.sources.append(index if index > STATIC_ENTRIES else 0)
                if inserts:
                    self.owners.insert(0, serial)
                    out.inserted += 1
                del self.owners[len(self.decoder.header_table.dynamic_entries) :]
        except Exception as exc:  # noqa: BLE001  (a reference's complaint, kept as data)
            out.error = f"{type(exc).__name__}: {exc}"
            self.broken = True
        return out


def _text(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


def representations(block: bytes) -> list[tuple[int, int, int, bool]]:
    """(start, end, index, inserts) of each representation of ``block`` (RFC 7541 §6):
    ``index`` the table index it uses (of the field, or of its name; 0: none), ``inserts``
    whether it adds an entry (§6.2.1). Raises ValueError on a block cut short."""
    out = []
    pos, n = 0, len(block)
    while pos < n:
        first = block[pos]
        if first & 0x80:
            index, end = _integer(block, pos, 7)
            out.append((pos, end, index, False))
        elif first & 0xE0 == 0x20:
            _, end = _integer(block, pos, 5)
            out.append((pos, end, 0, False))
        else:
            bits = 6 if first & 0x40 else 4
            index, end = _integer(block, pos, bits)
            if index == 0:
                end = _skip_string(block, end)
            end = _skip_string(block, end)
            out.append((pos, end, index, bool(first & 0x40)))
        pos = end
    return out


def _integer(block: bytes, pos: int, bits: int) -> tuple[int, int]:
    """RFC 7541 §5.1: the integer with a ``bits``-bit prefix at ``pos``, and its end."""
    mask = (1 << bits) - 1
    value = block[pos] & mask
    pos += 1
    if value < mask:
        return value, pos
    shift = 0
    while True:
        if pos >= len(block):
            raise ValueError("block cut inside an integer")
        byte = block[pos]
        pos += 1
        value += (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos


def _skip_string(block: bytes, pos: int) -> int:
    """RFC 7541 §5.2: the end of the string literal at ``pos``."""
    if pos >= len(block):
        raise ValueError("block cut before a string")
    length, pos = _integer(block, pos, 7)
    if pos + length > len(block):
        raise ValueError("string cut short")
    return pos + length


Times = list[tuple[int, float]]  # (end offset, time stamp) of each piece of a direction


def header_blocks(
    client: bytes, server: bytes, times: tuple[Times, Times] = ([], [])
) -> list[Block]:
    """Every header block of a connection whose directions sent ``client`` and ``server``
    (the client's from its preface on; the server's from its first frame), in each
    direction's order; the serials are distinct across both directions. ``times``: when
    each direction's pieces came, for :attr:`Block.ts`."""
    out: list[Block] = []
    serial = 0
    for side, data in enumerate((client, server)):
        skip = 0
        if side == 0:
            at = data.find(PREFACE)
            skip = at + len(PREFACE) if at >= 0 else len(data)
        direction = _Direction(side)
        marks = times[side]
        for stream, fragment, end in _blocks(data[skip:]):
            block = direction.block(stream, serial, fragment)
            block.ts = next((ts for e, ts in marks if e >= skip + end), 0.0)
            out.append(block)
            serial += 1
    return out


def _blocks(data: bytes) -> list[tuple[int, bytes, int]]:
    """(stream, header block, end offset) of each complete header block in ``data``
    (RFC 9113 §4.3)."""
    out = []
    pos = 0
    open_stream = 0
    parts: list[bytes] = []
    while pos + 9 <= len(data):
        hi, lo, ftype, flags, sid = _FRAME.unpack_from(data, pos)
        length = hi << 8 | lo
        payload = data[pos + 9 : pos + 9 + length]
        pos += 9 + length
        if len(payload) < length:
            break
        sid &= 0x7FFFFFFF
        if ftype in (HEADERS, PUSH_PROMISE):
            pad = payload[0] if flags & PADDED else 0
            skip = 1 if flags & PADDED else 0
            if ftype == HEADERS and flags & PRIORITY:
                skip += 5
            if ftype == PUSH_PROMISE:
                sid = int.from_bytes(payload[skip : skip + 4], "big") & 0x7FFFFFFF
                skip += 4
            open_stream, parts = sid, [payload[skip : length - pad]]
        elif ftype == CONTINUATION and open_stream:
            parts.append(payload)
        else:
            continue
        if flags & END_HEADERS:
            out.append((open_stream, b"".join(parts), pos))
            open_stream, parts = 0, []
    return out


def state_dependent(
    blocks: list[Block], lost: set[int], lost_at: dict[int, list[float]] | None = None
) -> set[int]:
    """The serials of the blocks whose fields cannot be known, through their direction's
    dynamic table alone, by an observer that lost the blocks of ``lost`` (serials), and
    bytes of no message at the times of ``lost_at`` (per side): bytes that may, for all the
    observer knows, have held a header block, and count as one lost at that time.

    A reference is unknowable when its entry was inserted by a lost block; or by a block
    that named it after an unknowable entry (a literal with an indexed name, RFC 7541
    §6.2.1); or when a lost block of the same direction came between the entry's block and
    the reference: the entries a block inserts go in at the front (§2.3.3), so an observer
    that did not see it cannot know how many did, nor the entry's index after it (even
    when, as the clean run shows, it inserted none: the observer has only the evidence of
    the faulted capture). A block that was received inserts its entries at known places
    even when some of its fields are unknowable: only the entries it named after an
    unknowable one inherit the doubt (all of that block's entries, erring towards too many).
    """
    unknown_names: set[int] = set()  # blocks that inserted an entry under an unknown name
    lost_by_side: dict[int, list[int]] = {}
    for b in blocks:
        if b.serial in lost:
            lost_by_side.setdefault(b.side, []).append(b.serial)
    by_serial = {b.serial: b for b in blocks}
    out: set[int] = set()
    for b in blocks:
        if b.serial in lost:
            continue
        gaps = lost_by_side.get(b.side, [])
        times = (lost_at or {}).get(b.side, [])
        for ref in b.refs:
            bad = ref.owner in lost or ref.owner in unknown_names
            bad = bad or any(ref.owner < g < b.serial for g in gaps)
            if not bad and times:
                since = by_serial[ref.owner].ts
                bad = any(since <= t <= b.ts for t in times)
            if bad:
                out.add(b.serial)
                if ref.inserts:
                    unknown_names.add(b.serial)
    return out
