"""HPACK after lost bytes (RFC 7541 §2.3.3, §4): the decoder keeps the entries older than a
gap on probation (``doubt``), confirms them when no header block was lost (``confirm``) or
drops them when one may have been (``drop_doubted``). hpack's ``Encoder`` is the oracle: it
encodes header lists with its own dynamic table, some blocks are lost on the way, and every
block our decoder calls complete must hold exactly what was encoded."""

from __future__ import annotations

from hpack import Encoder
from hypothesis import given, settings
from hypothesis import strategies as st

from agentshark.http.h2_hpack import BlockDecoder
from agentshark.model import Headers

names = st.sampled_from(["server", "x-request-id", "content-type", "x-trace", "date"])
values = st.sampled_from(["a", "bb", "application/json", "hypercorn-h11", "2026", "c" * 40])
header_lists = st.lists(st.tuples(names, values), min_size=1, max_size=6)


def encode_all(lists: list[Headers], table_size: int) -> list[bytes]:
    encoder = Encoder()
    encoder.header_table_size = table_size
    return [encoder.encode(headers) for headers in lists]


def is_subsequence(part: Headers, whole: Headers) -> bool:
    it = iter(whole)
    return all(field in it for field in part)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(header_lists, min_size=2, max_size=10),
    st.data(),
    st.sampled_from([256, 4096]),
)
def test_a_lost_block_never_gives_a_wrong_field(
    lists: list[Headers], data: st.DataObject, table_size: int
) -> None:
    """One block lost after a doubt: the doubted entries are dropped, blocks that need them
    come out incomplete, every complete block is exact, and nothing decoded is invented."""
    blocks = encode_all(lists, table_size)
    lost = data.draw(st.integers(0, len(blocks) - 1))
    ours = BlockDecoder()
    for i, (block, expected) in enumerate(zip(blocks, lists, strict=True)):
        if i == lost:
            ours.doubt()
            ours.drop_doubted()  # (what settle does when a header block may be lost)
            continue
        decoded = ours.decode(block)
        if decoded.complete:
            assert decoded.headers == expected
        else:
            assert is_subsequence(decoded.headers, expected)
            assert "dynamic table entries" in (decoded.error or "")


@settings(max_examples=300, deadline=None)
@given(st.lists(header_lists, min_size=2, max_size=10), st.data())
def test_doubted_entries_come_back_when_no_block_was_lost(
    lists: list[Headers], data: st.DataObject
) -> None:
    """Doubt with nothing lost: until the proof, blocks use only the entries added since
    (each complete one exact); after ``confirm`` every block decodes whole again."""
    blocks = encode_all(lists, 4096)
    doubt_at = data.draw(st.integers(0, len(blocks) - 1))
    confirm_at = data.draw(st.integers(doubt_at, len(blocks)))
    ours = BlockDecoder()
    for i, (block, expected) in enumerate(zip(blocks, lists, strict=True)):
        if i == doubt_at:
            ours.doubt()
        if i == confirm_at:
            ours.confirm()
        assert ours.on_probation == (doubt_at <= i < confirm_at)
        decoded = ours.decode(block)
        if not ours.on_probation:
            assert (decoded.headers, decoded.complete) == (expected, True)
        elif decoded.complete:
            assert decoded.headers == expected
        else:
            assert is_subsequence(decoded.headers, expected)


def test_entries_added_after_the_doubt_are_known() -> None:
    """The newest entries are the encoder's newest whatever the lost bytes held (§2.3.3):
    a block that indexes only what came after the doubt decodes whole on probation, one
    that indexes an older entry leaves that field out and names it."""
    encoder = Encoder()
    ours = BlockDecoder()
    old = [("x-old", "1")]
    ours.decode(encoder.encode(old))  # x-old enters both tables
    ours.doubt()
    new = [("x-new", "2")]
    assert ours.decode(encoder.encode(new)).complete  # a literal: x-new enters the tables
    again = ours.decode(encoder.encode(new))  # indexed: the newest entry
    assert (again.headers, again.complete) == (new, True)
    older = ours.decode(encoder.encode(old))  # indexed: the entry before the doubt
    assert older.headers == [] and not older.complete
    assert older.error is not None and "1 field (63)" in older.error
    ours.confirm()
    assert ours.decode(encoder.encode(old)).headers == old


def test_a_second_doubt_drops_the_first_tail() -> None:
    encoder = Encoder()
    ours = BlockDecoder()
    first = [("x-first", "1")]
    ours.decode(encoder.encode(first))
    ours.doubt()
    second = [("x-second", "2")]
    ours.decode(encoder.encode(second))
    ours.doubt()  # the first gap was never settled: its tail is unknown from now on
    ours.confirm()  # settles the second only
    assert ours.decode(encoder.encode(second)).complete
    assert not ours.decode(encoder.encode(first)).complete
