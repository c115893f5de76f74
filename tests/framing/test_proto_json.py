"""ProtoJson and WireJson give exactly what ``json_format.MessageToDict`` gives (WireJson
from the bytes, or None to leave a message to the library): on every gRPC message of the
repository's captures (bundled A2A and xAI schemas), on generated messages with every field
kind (scalars, 64-bit integers, bytes, NaN, enums open and closed, maps, nested, repeated,
well-known types, Any) and on their bytes mangled."""

from __future__ import annotations

import math
from typing import Any

from google.protobuf import (  # noqa: F401
    any_pb2,
    descriptor_pb2,
    descriptor_pool,
    duration_pb2,
    field_mask_pb2,
    json_enumvalue_options_pb2,
    json_format,
    message_factory,
    struct_pb2,
    timestamp_pb2,
    wrappers_pb2,
)

# (imported: the default pool then holds the well-known files copied into the test pool)
from hypothesis import given, settings
from hypothesis import strategies as st

from agentshark.apis.protos import schemas_for
from agentshark.framing.grpc import GrpcDecoder
from agentshark.framing.proto_json import ProtoJson
from agentshark.framing.proto_wire_json import WireJson
from agentshark.model import Exchange
from agentshark.pipeline import run
from tests.helpers import ROOT

F = descriptor_pb2.FieldDescriptorProto
_SCALARS = {
    "d": F.TYPE_DOUBLE,
    "f": F.TYPE_FLOAT,
    "i64": F.TYPE_INT64,
    "u64": F.TYPE_UINT64,
    "i32": F.TYPE_INT32,
    "f64": F.TYPE_FIXED64,
    "f32": F.TYPE_FIXED32,
    "b": F.TYPE_BOOL,
    "s": F.TYPE_STRING,
    "by": F.TYPE_BYTES,
    "u32": F.TYPE_UINT32,
    "sf32": F.TYPE_SFIXED32,
    "sf64": F.TYPE_SFIXED64,
    "s32": F.TYPE_SINT32,
    "s64": F.TYPE_SINT64,
}


def _pool() -> Any:
    pool = descriptor_pool.DescriptorPool()
    modules = ("timestamp", "any", "struct", "wrappers", "duration", "field_mask")
    for module in modules:
        proto = descriptor_pb2.FileDescriptorProto()
        descriptor_pool.Default().FindFileByName(f"google/protobuf/{module}.proto").CopyToProto(
            proto
        )
        pool.Add(proto)
    for name in ("descriptor", "json_enumvalue_options"):  # an enum value's JSON name
        proto = descriptor_pb2.FileDescriptorProto()
        descriptor_pool.Default().FindFileByName(f"google/protobuf/{name}.proto").CopyToProto(proto)
        pool.Add(proto)
    file = descriptor_pb2.FileDescriptorProto(name="all.proto", package="t", syntax="proto3")
    file.dependency.extend(f"google/protobuf/{m}.proto" for m in modules)
    file.dependency.append("google/protobuf/json_enumvalue_options.proto")
    enum = file.enum_type.add(name="Color")
    for n, name in enumerate(("COLOR_NONE", "COLOR_RED", "COLOR_BLUE")):
        enum.value.add(name=name, number=n)
    mood = file.enum_type.add(name="Mood")  # a deprecated value: still written by its name
    mood.value.add(name="MOOD_NONE", number=0)
    mood.value.add(name="MOOD_OLD", number=1).options.deprecated = True
    mood.value.add(name="MOOD_NEW", number=2).options.debug_redact = True
    label = file.enum_type.add(name="Label")  # a value json_format writes by its JSON name
    label.value.add(name="LABEL_NONE", number=0).options.deprecated = True
    named = label.value.add(name="LABEL_NAMED", number=1)
    named.options.Extensions[json_enumvalue_options_pb2.json].string = "named"
    inner = file.message_type.add(name="Inner")
    inner.field.add(name="text_value", number=1, label=F.LABEL_OPTIONAL, type=F.TYPE_STRING)
    inner.field.add(name="big", number=2, label=F.LABEL_REPEATED, type=F.TYPE_INT64)
    msg = file.message_type.add(name="All")
    number = 1
    for name, kind in _SCALARS.items():
        for label, suffix in ((F.LABEL_OPTIONAL, ""), (F.LABEL_REPEATED, "_list")):
            msg.field.add(name=f"v_{name}{suffix}", number=number, label=label, type=kind)
            number += 1
    typed = [
        ("color", F.TYPE_ENUM, ".t.Color", F.LABEL_OPTIONAL),
        ("colors", F.TYPE_ENUM, ".t.Color", F.LABEL_REPEATED),
        ("mood", F.TYPE_ENUM, ".t.Mood", F.LABEL_OPTIONAL),
        ("moods", F.TYPE_ENUM, ".t.Mood", F.LABEL_REPEATED),
        ("label", F.TYPE_ENUM, ".t.Label", F.LABEL_OPTIONAL),
        ("inner", F.TYPE_MESSAGE, ".t.Inner", F.LABEL_OPTIONAL),
        ("inners", F.TYPE_MESSAGE, ".t.Inner", F.LABEL_REPEATED),
        ("at", F.TYPE_MESSAGE, ".google.protobuf.Timestamp", F.LABEL_OPTIONAL),
        ("anything", F.TYPE_MESSAGE, ".google.protobuf.Any", F.LABEL_OPTIONAL),
        ("doc", F.TYPE_MESSAGE, ".google.protobuf.Struct", F.LABEL_OPTIONAL),
        ("maybe", F.TYPE_MESSAGE, ".google.protobuf.Int32Value", F.LABEL_OPTIONAL),
        ("took", F.TYPE_MESSAGE, ".google.protobuf.Duration", F.LABEL_OPTIONAL),
        ("mask", F.TYPE_MESSAGE, ".google.protobuf.FieldMask", F.LABEL_OPTIONAL),
    ]
    for name, kind, type_name, label in typed:
        msg.field.add(name=name, number=number, label=label, type=kind, type_name=type_name)
        number += 1
    entry = msg.nested_type.add(name="CountsEntry")
    entry.options.map_entry = True
    entry.field.add(name="key", number=1, label=F.LABEL_OPTIONAL, type=F.TYPE_STRING)
    entry.field.add(name="value", number=2, label=F.LABEL_OPTIONAL, type=F.TYPE_INT64)
    msg.field.add(
        name="counts",
        number=number,
        label=F.LABEL_REPEATED,
        type=F.TYPE_MESSAGE,
        type_name=".t.All.CountsEntry",
    )
    pool.Add(file)
    return pool


POOL = _pool()
ALL = message_factory.GetMessageClass(POOL.FindMessageTypeByName("t.All"))
INNER = message_factory.GetMessageClass(POOL.FindMessageTypeByName("t.Inner"))

_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "d": st.floats(allow_nan=True, allow_infinity=True),
    "f": st.floats(width=32, allow_nan=False, allow_infinity=False),
    "i64": st.integers(-(2**63), 2**63 - 1),
    "u64": st.integers(0, 2**64 - 1),
    "i32": st.integers(-(2**31), 2**31 - 1),
    "f64": st.integers(0, 2**64 - 1),
    "f32": st.integers(0, 2**32 - 1),
    "b": st.booleans(),
    "s": st.text(max_size=8),
    "by": st.binary(max_size=8),
    "u32": st.integers(0, 2**32 - 1),
    "sf32": st.integers(-(2**31), 2**31 - 1),
    "sf64": st.integers(-(2**63), 2**63 - 1),
    "s32": st.integers(-(2**31), 2**31 - 1),
    "s64": st.integers(-(2**63), 2**63 - 1),
}


@st.composite
def messages(draw: st.DrawFn) -> Any:
    m = ALL()
    for name in draw(st.sets(st.sampled_from(sorted(_SCALARS)))):
        strategy = _VALUES[name]
        if draw(st.booleans()):
            setattr(m, f"v_{name}", draw(strategy))
        else:
            getattr(m, f"v_{name}_list").extend(draw(st.lists(strategy, max_size=3)))
    if draw(st.booleans()):
        m.color = draw(st.integers(0, 5))  # 3..5: values the enum does not name
        m.colors.extend(draw(st.lists(st.integers(0, 4), max_size=3)))
    if draw(st.booleans()):
        m.mood = draw(st.integers(0, 3))
        m.moods.extend(draw(st.lists(st.integers(0, 3), max_size=3)))
    if draw(st.integers(0, 3)) == 0:
        m.label = draw(st.integers(0, 2))
    if draw(st.booleans()):
        m.inner.text_value = draw(st.text(max_size=4))
        m.inner.big.extend(draw(st.lists(st.integers(-(2**63), 2**63 - 1), max_size=2)))
        m.inners.add().text_value = "x"
    if draw(st.booleans()):
        m.at.seconds = draw(st.integers(0, 2**33))
        m.maybe.value = draw(st.integers(-5, 5))
        m.took.FromNanoseconds(draw(st.integers(-(10**12), 10**12)))
        m.mask.paths.extend(draw(st.lists(st.sampled_from(["a_b", "c", "d_e_f"]), max_size=2)))
    if draw(st.booleans()):
        m.anything.Pack(INNER(text_value="packed"))
        m.doc.update({"k": draw(st.one_of(st.none(), st.booleans(), st.text(max_size=3)))})
    for key in draw(st.lists(st.text(max_size=3), max_size=3)):
        m.counts[key] = draw(st.integers(-(2**63), 2**63 - 1))
    return m


def _same(a: Any, b: Any) -> bool:
    """Equal, NaN included."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    if isinstance(a, dict):
        return isinstance(b, dict) and list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(map(_same, a, b))
    return type(a) is type(b) and bool(a == b)


@settings(max_examples=300, deadline=None)
@given(messages())
def test_generated_messages_read_as_json_format_reads_them(message: Any) -> None:
    want = json_format.MessageToDict(message, descriptor_pool=POOL)
    got = ProtoJson(POOL).to_dict(message)
    assert _same(got, want), (got, want)


def test_a_closed_enum_value_it_does_not_name_is_json_formats_error() -> None:
    pool = descriptor_pool.DescriptorPool()
    file = descriptor_pb2.FileDescriptorProto(name="p2.proto", package="p", syntax="proto2")
    enum = file.enum_type.add(name="E")
    enum.value.add(name="E_A", number=1)
    msg = file.message_type.add(name="M")
    msg.field.add(name="e", number=1, label=F.LABEL_OPTIONAL, type=F.TYPE_ENUM, type_name=".p.E")
    pool.Add(file)
    cls = message_factory.GetMessageClass(pool.FindMessageTypeByName("p.M"))
    named = cls.FromString(b"\x08\x01")
    assert ProtoJson(pool).to_dict(named) == {"e": "E_A"}
    # an unknown closed-enum value is kept as an unknown field by the parser: nothing to write
    unknown = cls.FromString(b"\x08\x07")
    assert ProtoJson(pool).to_dict(unknown) == json_format.MessageToDict(unknown)


def test_every_message_of_the_grpc_captures() -> None:
    seen = fast_seen = 0
    for name in ("a2a_v1_grpc", "xai_chat_grpc", "a2a_v1_grpc_jsonrpc"):
        for ex in run([str(ROOT / "tests" / "data" / "captures" / name / "capture.pcap")]):
            if not isinstance(ex, Exchange) or ex.request is None:
                continue
            schemas = schemas_for(ex.request.target)
            types = schemas.method(ex.request.target) if schemas is not None else None
            if schemas is None or types is None:
                continue
            for msg, type_name in ((ex.request, types[0]), (ex.response, types[1])):
                if msg is None:
                    continue
                encoding = dict(msg.headers).get("grpc-encoding")
                decoded = GrpcDecoder(encoding=encoding).feed(msg.body.data(), 0.0)
                pool = schemas._pool  # the pool the schema parses with
                cls = message_factory.GetMessageClass(pool.FindMessageTypeByName(type_name))
                for ev in decoded:
                    payload = getattr(ev, "payload", None)
                    if payload is None:
                        continue
                    message = cls.FromString(payload)
                    want = json_format.MessageToDict(message, descriptor_pool=pool)
                    assert ProtoJson(pool).to_dict(message) == want
                    fast = WireJson(pool).read(type_name, payload)
                    assert fast is None or fast == want
                    fast_seen += fast is not None
                    seen += 1
    assert seen > 20 and fast_seen > 10


def test_the_xai_messages_are_all_read_from_their_bytes() -> None:
    """xAI's chat messages (requests and stream chunks, whose ``MessageRole`` has a deprecated
    value) need nothing of the library: none is left to it."""
    read = 0
    capture = ROOT / "tests" / "data" / "captures" / "xai_chat_grpc" / "capture.pcap"
    for ex in run([str(capture)]):
        if not isinstance(ex, Exchange) or ex.request is None or ex.response is None:
            continue
        schemas = schemas_for(ex.request.target)
        types = schemas.method(ex.request.target) if schemas is not None else None
        assert schemas is not None and types is not None
        wire = WireJson(schemas._pool)
        for msg, type_name in ((ex.request, types[0]), (ex.response, types[1])):
            for ev in GrpcDecoder().feed(msg.body.data(), 0.0):
                payload = getattr(ev, "payload", None)
                if payload is not None:
                    assert wire.read(type_name, payload) is not None, type_name
                    read += 1
    assert read > 40


def _library(type_name: str, payload: bytes) -> dict[str, Any] | None:
    cls = message_factory.GetMessageClass(POOL.FindMessageTypeByName(type_name))
    try:
        message = cls.FromString(payload)
        result: dict[str, Any] = json_format.MessageToDict(message, descriptor_pool=POOL)
    except Exception:  # noqa: BLE001 - DecodeError, SerializeToJsonError: not a result
        return None
    return result


@settings(max_examples=300, deadline=None)
@given(messages())
def test_generated_messages_read_from_their_bytes(message: Any) -> None:
    got = WireJson(POOL).read("t.All", message.SerializeToString())
    if got is not None:  # None: left to the library
        assert _same(got, _library("t.All", message.SerializeToString())), got


@settings(max_examples=500, deadline=None)
@given(messages(), st.data())
def test_mangled_bytes_read_as_the_library_reads_them(message: Any, data: st.DataObject) -> None:
    wire = bytearray(message.SerializeToString())
    for _ in range(data.draw(st.integers(1, 3))):
        if wire and data.draw(st.booleans()):
            wire[data.draw(st.integers(0, len(wire) - 1))] = data.draw(st.integers(0, 255))
        else:
            wire[data.draw(st.integers(0, len(wire))) :] = data.draw(st.binary(max_size=6))
    got = WireJson(POOL).read("t.All", bytes(wire))
    if got is not None:
        want = _library("t.All", bytes(wire))
        assert want is not None and _same(got, want), (got, want)


def test_plain_messages_are_read_from_their_bytes() -> None:
    inner = INNER(text_value="héllo", big=[-1, 2**62])
    m = ALL(v_s="x", v_i64=-5, v_b=True, color=2, inners=[inner, inner])
    m.at.seconds = 1796000000
    got = WireJson(POOL).read("t.All", m.SerializeToString())
    assert got == json_format.MessageToDict(m, descriptor_pool=POOL)
    assert got is not None and got["inners"][0]["big"] == ["-1", str(2**62)]
    m.v_f = 1.5  # a float: left to the library
    assert WireJson(POOL).read("t.All", m.SerializeToString()) is None


def test_enum_values_by_their_options() -> None:
    """A deprecated (or debug-redacted) value is written by its name, from the bytes too; a
    value with a JSON name of its own (``pb.enumvalue.json``) is json_format's to write."""
    for value, name in ((1, "MOOD_OLD"), (2, "MOOD_NEW")):
        m = ALL(mood=value, moods=[value, 0])
        want = json_format.MessageToDict(m, descriptor_pool=POOL)
        assert want == {"mood": name, "moods": [name, "MOOD_NONE"]}
        assert WireJson(POOL).read("t.All", m.SerializeToString()) == want
        assert ProtoJson(POOL).to_dict(m) == want
    m = ALL(label=1)
    assert json_format.MessageToDict(m, descriptor_pool=POOL) == {"label": "named"}
    assert WireJson(POOL).read("t.All", m.SerializeToString()) is None
    assert ProtoJson(POOL).to_dict(m) == {"label": "named"}


def test_a_field_number_out_of_range_is_left_to_the_library() -> None:
    """Field numbers are 1 to 2**29 - 1: a tag of 0, or one whose varint is past 32 bits
    (a byte mangled into a continuation), is corrupt to the library, so not read here."""
    for wire in ("0001", "d880808010ca02"):
        assert _library("t.All", bytes.fromhex(wire)) is None
        assert WireJson(POOL).read("t.All", bytes.fromhex(wire)) is None
    assert WireJson(POOL).read("t.All", bytes.fromhex("f8ffffff0f01")) == {}  # 2**29 - 1
