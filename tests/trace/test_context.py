"""W3C Trace Context and Baggage parsing: the spec's examples, its test suite's error cases
(``w3c/trace-context`` ``test/test.py``), and every ``traceparent`` the corpus recorded."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentshark.trace.context import (
    BaggageMember,
    TraceParent,
    parse_baggage,
    parse_traceparent,
    parse_tracestate,
)
from tests.helpers import CORPUS

TID = "4bf92f3577b34da6a3ce929d0e0e4736"
PID = "00f067aa0ba902b7"
SPEC_EXAMPLE = f"00-{TID}-{PID}-01"


# -- traceparent: valid ----------------------------------------------------------------------


def test_spec_example_sampled() -> None:
    tp = parse_traceparent(SPEC_EXAMPLE)
    assert tp == TraceParent(version="00", trace_id=TID, parent_id=PID, flags=1)
    assert isinstance(tp, TraceParent)
    assert tp.sampled
    assert not tp.random


@pytest.mark.parametrize(
    ("flags", "sampled", "random"),
    [("00", False, False), ("01", True, False), ("02", False, True), ("03", True, True),
     ("09", True, False), ("ff", True, True), ("fc", False, False)],
)  # fmt: skip
def test_flags_are_read_by_mask(flags: str, sampled: bool, random: bool) -> None:
    tp = parse_traceparent(f"00-{TID}-{PID}-{flags}")
    assert isinstance(tp, TraceParent)
    assert tp.flags == int(flags, 16)
    assert (tp.sampled, tp.random) == (sampled, random)


@pytest.mark.parametrize("ows", [" ", "\t", " \t", "\t \t "])
def test_optional_whitespace_around_the_value(ows: str) -> None:
    # test/test.py test_traceparent_ows_handling: leading and trailing OWS are accepted.
    for value in (ows + SPEC_EXAMPLE, SPEC_EXAMPLE + ows, ows + SPEC_EXAMPLE + ows):
        assert parse_traceparent(value) == parse_traceparent(SPEC_EXAMPLE)


@pytest.mark.parametrize(
    "value",
    [
        f"cc-{TID}-{PID}-01",
        f"cc-{TID}-{PID}-01-what-the-future-will-be-like",
        f"01-{TID}-{PID}-03-",
        f"fe-{TID}-{PID}-00-x",
    ],
)
def test_higher_version_keeps_three_fields_and_ignores_the_rest(value: str) -> None:
    tp = parse_traceparent(value)
    assert isinstance(tp, TraceParent)
    assert (tp.version, tp.trace_id, tp.parent_id) == (value[:2], TID, PID)
    assert tp.flags == int(value[53:55], 16)


# -- traceparent: every invalid case, with what the error says -------------------------------


@pytest.mark.parametrize(
    ("value", "error"),
    [
        ("", "traceparent is empty"),
        (" \t ", "traceparent is empty"),
        (f"ff-{TID}-{PID}-01", "version ff is invalid"),
        (f".0-{TID}-{PID}-01", "version '.0' has '.', which is not a hex digit"),
        (f"0.-{TID}-{PID}-01", "version '0.' has '.', which is not a hex digit"),
        (f"000-{TID}-{PID}-01", "version has 3 hex digits, expected 2"),
        (f"0000-{TID}-{PID}-01", "version has 4 hex digits, expected 2"),
        (f"0-{TID}-{PID}-01", "version has 1 hex digits, expected 2"),
        (f"0A-{TID}-{PID}-01", "version '0A' has uppercase hex"),
        (f"00-{'0' * 32}-{PID}-01", "trace-id is all zeros"),
        (f"00-{TID}-{'0' * 16}-01", "parent-id is all zeros"),
        (f"00-{TID.upper()}-{PID}-01", "has uppercase hex"),
        (f"00-{TID}-00F067AA0BA902B7-01", "parent-id '00F067AA0BA902B7' has uppercase hex"),
        (f"00-{TID}-{PID}-0A", "trace-flags '0A' has uppercase hex"),
        (f"00-.{TID[1:]}-{PID}-01", "trace-id '.bf9"),
        (f"00-{TID[:-1]}.-{PID}-01", "which is not a hex digit"),
        (f"00-{TID}3-{PID}-01", "trace-id has 33 hex digits, expected 32"),
        (f"00-{TID[:-1]}-{PID}-01", "trace-id has 31 hex digits, expected 32"),
        (f"00-{TID}-.{PID[1:]}-01", "parent-id '.0f067aa0ba902b7' has '.'"),
        (f"00-{TID}-{PID}7-01", "parent-id has 17 hex digits, expected 16"),
        (f"00-{TID}-{PID[:-1]}-01", "parent-id has 15 hex digits, expected 16"),
        (f"00-{TID}-{PID}-.0", "trace-flags '.0' has '.', which is not a hex digit"),
        (f"00-{TID}-{PID}-0.", "trace-flags '0.' has '.'"),
        (f"00-{TID}-{PID}-001", "trace-flags has 3 hex digits, expected 2"),
        (f"00-{TID}-{PID}-1", "trace-flags has 1 hex digits, expected 2"),
        (f"00-{TID}-{PID}-01.", "trace-flags '01.' has '.'"),
        (
            f"00-{TID}-{PID}-01-what-the-future-will-be-like",
            "version 00 has 10 '-'-separated fields, expected 4: "
            "'what-the-future-will-be-like' follows",
        ),
        (f"00-{TID}-{PID}-01-", "version 00 has 5 '-'-separated fields, expected 4"),
        (f"00-{TID}-{PID}", "traceparent has 3 '-'-separated fields, expected 4"),
        (f"00-{TID}{PID}01", "traceparent has 2 '-'-separated fields"),
        (f"00_{TID}-{PID}-01", "version '00_"),
        (f"00-{TID}-{PID}-01 x", "trace-flags '01 x' has ' '"),
        (f"00-{TID}-{PID} -01", "parent-id '00f067aa0ba902b7 ' has ' '"),
        (f"cc-{TID}-{PID}-01.what-the-future-will-be-like", "trace-flags '01.what' has '.'"),
        (f"cc-{TID}-{PID[:-1]}-01-xx", "parent-id has 15 hex digits, expected 16"),
        (f"cc-{TID}-{PID}-1", "version cc traceparent has 54 characters, fewer than 55"),
        (f"cc-{'0' * 32}-{PID}-01-x", "trace-id is all zeros"),
    ],
)
def test_invalid_traceparent_says_what_is_wrong(value: str, error: str) -> None:
    result = parse_traceparent(value)
    assert isinstance(result, str), result
    assert error in result


def test_error_quotes_the_bad_character() -> None:
    assert (
        parse_traceparent(f"00-{TID}-{PID}-0g")
        == "trace-flags '0g' has 'g', which is not a hex digit"
    )


def test_every_traceparent_in_the_corpus_is_valid() -> None:
    """openllmetry's cassettes recorded the traceparent the OpenAI instrumentation sent."""
    found = re.compile(r"^\s*traceparent:\s*\n\s*- (\S+)\s*$", re.MULTILINE | re.IGNORECASE)
    values = [
        v
        for path in (CORPUS / "traceloop__openllmetry").rglob("*.yaml")
        for v in found.findall(path.read_text(errors="replace"))
    ]
    if not values:
        pytest.skip(f"no corpus at {CORPUS}")
    assert len(values) > 100
    for value in values:
        tp = parse_traceparent(value)
        assert isinstance(tp, TraceParent), (value, tp)
        assert f"{tp.version}-{tp.trace_id}-{tp.parent_id}-{tp.flags:02x}" == value


# -- tracestate -----------------------------------------------------------------------------


def test_tracestate_spec_examples() -> None:
    assert parse_tracestate("rojo=00f067aa0ba902b7,congo=t61rcWkgMzE") == [
        ("rojo", "00f067aa0ba902b7"),
        ("congo", "t61rcWkgMzE"),
    ]
    assert parse_tracestate("congo=t61rcWkgMzE") == [("congo", "t61rcWkgMzE")]


@pytest.mark.parametrize(
    "value",
    ["foo=1 \t , \t bar=2, \t baz=3", "foo=1\t \t,\t \tbar=2,\t \tbaz=3", " foo=1,bar=2 ,baz=3\t"],
)
def test_tracestate_ows_around_members(value: str) -> None:
    assert parse_tracestate(value) == [("foo", "1"), ("bar", "2"), ("baz", "3")]


def test_tracestate_empty_members_are_allowed_and_not_counted() -> None:
    assert parse_tracestate("") == []
    assert parse_tracestate(" , ,\t") == []
    assert parse_tracestate("foo=1,,") == [("foo", "1")]
    members = ",".join(f"k{i}=v" for i in range(32))
    assert len(parse_tracestate(members + ", ,,")) == 32


def test_tracestate_value_keeps_leading_spaces() -> None:
    assert parse_tracestate("foo=  bar") == [("foo", "  bar")]


def test_tracestate_all_allowed_characters() -> None:
    key = "abcdefghijklmnopqrstuvwxyz0123456789_-*/@"
    value = "".join(chr(c) for c in range(0x20, 0x7F) if chr(c) not in ",=").lstrip()
    assert parse_tracestate(f"{key}={value}") == [(key, value)]
    assert parse_tracestate("0starts-with-digit=x") == [("0starts-with-digit", "x")]


def test_tracestate_limits() -> None:
    assert len(parse_tracestate(",".join(f"bar{i:02}={i:02}" for i in range(32)))) == 32
    error = parse_tracestate(",".join(f"bar{i:02}={i:02}" for i in range(33)))
    assert error == "tracestate has 33 members, more than 32"
    assert parse_tracestate("z" * 256 + "=1") == [("z" * 256, "1")]
    assert isinstance(parse_tracestate("z" * 257 + "=1"), str)
    assert parse_tracestate("k=" + "v" * 256) == [("k", "v" * 256)]
    assert isinstance(parse_tracestate("k=" + "v" * 257), str)


@pytest.mark.parametrize(
    ("value", "error"),
    [
        ("foo", "tracestate member 1 ('foo') has no '='"),
        ("foo =1", "key 'foo ' is not"),
        ("FOO=1", "key 'FOO' is not"),
        ("foo.bar=1", "key 'foo.bar' is not"),
        ("@foo=1,bar=2", "key '@foo' is not"),
        ("_foo=1", "key '_foo' is not"),
        ("=1", "key '' is not"),
        ("foo=bar=baz", "value 'bar=baz' is not"),
        ("foo=,bar=3", "value '' is not"),
        ("foo=a\tb", "value 'a\\tb' is not"),
        ("foo=caf\u00e9", "value"),
        ("foo=1,bar=2,foo=3", "tracestate member 3 ('foo=3'): key 'foo' appears more than once"),
    ],
)
def test_tracestate_grammar_errors(value: str, error: str) -> None:
    result = parse_tracestate(value)
    assert isinstance(result, str), result
    assert error in result


# -- baggage -------------------------------------------------------------------------------


def test_baggage_spec_example_with_properties() -> None:
    value = "key1=value1;property1;property2, key2 = value2, key3=value3; propertyKey=propertyValue"
    assert parse_baggage(value) == [
        BaggageMember(key="key1", value="value1", properties=("property1", "property2")),
        BaggageMember(key="key2", value="value2"),
        BaggageMember(key="key3", value="value3", properties=("propertyKey=propertyValue",)),
    ]


def test_baggage_percent_decoding() -> None:
    assert parse_baggage("userId=alice,serverNode=DF%2028,isProduction=false") == [
        BaggageMember(key="userId", value="alice"),
        BaggageMember(key="serverNode", value="DF 28"),
        BaggageMember(key="isProduction", value="false"),
    ]
    # UTF-8, '+' is not a space, '=' may appear in a value, a stray '%' stays as it is.
    assert parse_baggage("k=caf%C3%A9+a=b%zz%") == [BaggageMember(key="k", value="café+a=b%zz%")]


def test_baggage_bad_utf8_decodes_to_replacement_character() -> None:
    assert parse_baggage("k=%FF%C3x") == [BaggageMember(key="k", value="\ufffd\ufffdx")]


def test_baggage_ows_and_empty() -> None:
    assert parse_baggage("userId =   alice \t") == [BaggageMember(key="userId", value="alice")]
    assert parse_baggage("k=;p = v ; q") == [
        BaggageMember(key="k", value="", properties=("p=v", "q"))
    ]
    assert parse_baggage("") == []
    assert parse_baggage(" \t") == []


def test_baggage_keeps_duplicate_keys() -> None:
    assert parse_baggage("a=1,a=2") == [
        BaggageMember(key="a", value="1"),
        BaggageMember(key="a", value="2"),
    ]


def test_baggage_limits() -> None:
    assert len(parse_baggage(",".join(f"k{i}=v" for i in range(64)))) == 64
    too_many = parse_baggage(",".join(f"k{i}=v" for i in range(65)))
    assert too_many == "baggage has 65 members, more than 64"
    assert len(parse_baggage("k=" + "v" * 8190)) == 1
    assert parse_baggage("k=" + "v" * 8191) == "baggage is 8193 bytes, more than 8192"


@pytest.mark.parametrize(
    ("value", "error"),
    [
        ("k", "baggage member 1 ('k'): key 'k' has no '=value'"),
        ("a=1,,b=2", "baggage member 2 (''): empty"),
        ("a=1,", "baggage member 2 (''): empty"),
        ("=v", "no key before '='"),
        ("k(1)=v", "key 'k(1)' is not an HTTP token"),
        ("k=a b", "value of 'k' has ' ', which must be percent-encoded"),
        ('k="v"', "value of 'k' has '\"'"),
        ("k=a\\b", "value of 'k' has '\\\\'"),
        ("k=v;", "property: empty"),
        ("k=v;p=a b", "property: value of 'p' has ' '"),
        ("k=v;=x", "property: no key before '='"),
        ("k=café", "value of 'k' has 'é'"),
    ],
)
def test_baggage_grammar_errors(value: str, error: str) -> None:
    result = parse_baggage(value)
    assert isinstance(result, str), result
    assert error in result


# -- the fuzz invariant: any text in, a value or an error text out --------------------------


@given(st.text(alphabet=st.characters(max_codepoint=0x17F), max_size=120))
def test_any_text_gives_a_value_or_an_error(text: str) -> None:
    assert isinstance(parse_traceparent(text), TraceParent | str)
    assert isinstance(parse_tracestate(text), list | str)
    assert isinstance(parse_baggage(text), list | str)


@given(st.sampled_from([SPEC_EXAMPLE, f"cc-{TID}-{PID}-01-x"]), st.integers(0, 60), st.text())
def test_any_edit_of_a_valid_header_gives_a_value_or_an_error(base: str, at: int, s: str) -> None:
    assert isinstance(parse_traceparent(base[:at] + s + base[at:]), TraceParent | str)
