"""Seeded mutations for the fuzz campaign (scripts/fuzz_campaign.py).

Byte mutations in the manner of AFL/libFuzzer: bit flips, random bytes, byte insertion and
deletion, duplication of a range, splicing with another input, truncation, overwrites with
interesting integers (both byte orders) and insertion of target tokens (header names,
framing markers). JSON inputs are also mutated as trees (values replaced by other types,
keys dropped or renamed, items duplicated, deep nesting), so readers behind a JSON parser
see valid JSON with the wrong shapes. A tree never grows much past the input: a string
repeated 50 times at each of three steps of one mutation reached gigabytes, seconds of CPU
for an input then dropped as too large, and ``orjson.dumps`` reserving 8 bytes a character
for it (orjson does not check that the reservation succeeded: out of memory, it
segfaults). Everything is drawn from one ``random.Random``: a slice of the campaign is
reproduced from its seed.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any, Literal

import orjson

INTERESTING = (
    0,
    1,
    0x7F,
    0x80,
    0xFF,
    0x100,
    0x3FFF,
    0x4000,
    0x7FFF,
    0x8000,
    0xFFFF,
    0x10000,
    0xFFFFFF,
    0x7FFFFFFF,
    0x80000000,
    0xFFFFFFFF,
)
JSON_VALUES: tuple[Any, ...] = (
    None,
    True,
    False,
    0,
    -1,
    1.5,
    2**31,
    2**63 - 1,
    -(2**63),
    1e308,
    "",
    "x",
    "0",
    "\u00e9\u4e2d\U0001f600",
    "[DONE]",
    "assistant",
    "user",
    "tool",
    "function",
    "text",
    "tool_use",
    "message_start",
    "content_block_delta",
    "response.output_text.delta",
    "application/json",
    "text/event-stream",
    "2.0",
    [],
    {},
    [None],
    {"": None},
)
MAX_GROWTH = 4096  # bytes a mutation may add beyond the larger of its inputs


class Mutator:
    """Mutates inputs with ``rnd``; ``tokens`` are byte strings worth inserting for a target."""

    def __init__(self, rnd: random.Random, tokens: Sequence[bytes] = ()) -> None:
        self.rnd = rnd
        self.tokens = tuple(tokens) or (b"\r\n", b"\n", b"\x00", b"{", b"}")

    def mutate(self, data: bytes, other: bytes) -> bytes:
        """``data`` changed 1 to 6 times (``other`` is another input, for splicing)."""
        rnd = self.rnd
        limit = max(len(data), len(other)) + MAX_GROWTH
        if data[:1] in (b"{", b"[") and rnd.random() < 0.5:
            tree = self.json(data)
            if tree is not None and len(tree) <= limit:  # repeated strings grow fast
                return tree
        buf = bytearray(data)
        for _ in range(rnd.randint(1, 6)):
            self._one(buf, other)
            if len(buf) > limit:
                del buf[limit:]
        return bytes(buf)

    def _one(self, buf: bytearray, other: bytes) -> None:
        rnd = self.rnd
        n = len(buf)
        op = rnd.randrange(11)
        if n == 0 or op == 0:  # insert a token or random bytes
            piece = (
                rnd.choice(self.tokens) if rnd.random() < 0.7 else rnd.randbytes(rnd.randint(1, 8))
            )
            at = rnd.randint(0, n)
            buf[at:at] = piece
        elif op == 1:  # flip a bit
            buf[rnd.randrange(n)] ^= 1 << rnd.randrange(8)
        elif op == 2:  # a random byte
            buf[rnd.randrange(n)] = rnd.randrange(256)
        elif op == 3:  # delete a range
            at = rnd.randrange(n)
            del buf[at : at + rnd.randint(1, min(64, n - at))]
        elif op == 4:  # duplicate a range
            at = rnd.randrange(n)
            piece = bytes(buf[at : at + rnd.randint(1, 64)])
            to = rnd.randint(0, n)
            buf[to:to] = piece * rnd.randint(1, 4)
        elif op == 5:  # splice: our head, the other's tail
            cut = rnd.randint(0, n)
            buf[cut:] = other[rnd.randint(0, len(other)) :]
        elif op == 6:  # truncate
            del buf[rnd.randint(0, n) :]
        elif op in (7, 8):  # an interesting integer over 1, 2 or 4 bytes
            width = rnd.choice((1, 2, 4))
            if n >= width:
                value = rnd.choice(INTERESTING) + rnd.choice((0, 0, 1, -1))
                order: Literal["big", "little"] = "big" if rnd.random() < 0.5 else "little"
                at = rnd.randrange(n - width + 1)
                buf[at : at + width] = (value % (1 << (8 * width))).to_bytes(width, order)
        elif op == 9:  # a token over existing bytes
            tok = rnd.choice(self.tokens)
            at = rnd.randrange(n)
            buf[at : at + len(tok)] = tok
        else:  # copy a range elsewhere (overwrite)
            at, to = rnd.randrange(n), rnd.randrange(n)
            size = rnd.randint(1, min(64, n - max(at, to)))
            buf[to : to + size] = buf[at : at + size]

    def json(self, data: bytes) -> bytes | None:
        """``data`` parsed as JSON, one node changed, serialized; None if it is not JSON."""
        try:
            root = orjson.loads(data)
        except orjson.JSONDecodeError:
            return None
        holder = [root]
        for _ in range(self.rnd.randint(1, 3)):
            self._tree(holder)
        try:
            return orjson.dumps(holder[0])
        except (TypeError, orjson.JSONEncodeError):  # nested too deep for orjson
            return None

    def _tree(self, holder: list[Any]) -> None:
        rnd = self.rnd
        parent: Any = holder
        key: Any = 0
        while True:  # walk down at random from the root
            node = parent[key]
            children = (
                list(node)
                if isinstance(node, dict)
                else range(len(node))
                if isinstance(node, list)
                else []
            )
            if not children or rnd.random() < 0.3:
                break
            parent, key = node, rnd.choice(children)
        node = parent[key]
        op = rnd.randrange(6)
        if op == 0 or not isinstance(node, dict | list):
            parent[key] = self._value(node)
        elif op == 1 and node:  # drop a child
            del node[rnd.choice(list(node) if isinstance(node, dict) else range(len(node)))]
        elif op == 2 and isinstance(node, dict) and node:  # rename a key
            old = rnd.choice(list(node))
            node[rnd.choice(("type", "role", "id", "", old + "x", old.upper()))] = node.pop(old)
        elif op == 3 and isinstance(node, list) and node:  # duplicate an item
            node.insert(rnd.randint(0, len(node)), node[rnd.randrange(len(node))])
        elif op == 4:  # add a child
            value = self._value(None)
            if isinstance(node, dict):
                node[rnd.choice(("type", "content", "text", "arguments", "name", "x"))] = value
            else:
                node.insert(rnd.randint(0, len(node)), value)
        else:
            parent[key] = self._value(node)

    def _value(self, old: Any) -> Any:
        rnd = self.rnd
        pick = rnd.randrange(10)
        if pick == 0:  # nested deep
            value: Any = old
            for _ in range(rnd.choice((10, 100, 200))):
                value = [value]
            return value
        if pick == 1 and isinstance(old, str):  # repeated, at most MAX_GROWTH longer (or twice)
            return old * max(2, min(rnd.randint(2, 50), 1 + MAX_GROWTH // max(1, len(old))))
        if pick == 2:
            return str(old)
        if pick == 3:
            return [old, old]
        return rnd.choice(JSON_VALUES)
