"""ProtoSchemas.add_files: reflected FileDescriptorProtos join the pool after their imports,
whatever order they come in; bad ones are sentences, never exceptions."""

from __future__ import annotations

from google.protobuf import descriptor_pb2

from agentshark.framing.proto_schema import ProtoSchemas


def proto(name: str, package: str, deps: list[str], message: str, field_type: str) -> bytes:
    file = descriptor_pb2.FileDescriptorProto(name=name, package=package, syntax="proto3")
    file.dependency.extend(deps)
    msg = file.message_type.add(name=message)
    msg.field.add(
        name="value",
        number=1,
        label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL,
        type=descriptor_pb2.FieldDescriptorProto.TYPE_MESSAGE,
        type_name=field_type,
    )
    service = file.service.add(name="Svc")
    service.method.add(name="Get", input_type=f".{package}.{message}", output_type=field_type)
    data: bytes = file.SerializeToString()
    return data


def test_a_file_waits_for_its_imports() -> None:
    base = descriptor_pb2.FileDescriptorProto(name="base.proto", package="b", syntax="proto3")
    base.message_type.add(name="Base")
    top = proto("top.proto", "t", ["base.proto"], "Top", ".b.Base")
    schemas = ProtoSchemas([], [])
    assert schemas.add_files([top]) == [] and schemas.file_count == 0  # waiting for base
    assert schemas.add_files([base.SerializeToString()]) == [] and schemas.file_count == 2
    assert schemas.method("/t.Svc/Get") == ("t.Top", "b.Base")
    assert schemas.to_json("t.Top", b"\x0a\x00") == ({"value": {}}, None)


def test_well_known_imports_come_from_the_protobuf_package() -> None:
    top = proto(
        "ts.proto", "w", ["google/protobuf/timestamp.proto"], "At", ".google.protobuf.Timestamp"
    )
    schemas = ProtoSchemas([], [])
    assert schemas.add_files([top]) == [] and schemas.file_count == 2
    assert schemas.to_json("w.At", b"\x0a\x02\x08\x01") == ({"value": "1970-01-01T00:00:01Z"}, None)


def test_bad_descriptors_are_sentences() -> None:
    schemas = ProtoSchemas([], [])
    not_utf8 = b"\x0a\x07a.proto\x1a\x01\xff"  # a dependency that is not UTF-8
    problems = schemas.add_files([b"\xff\xff", not_utf8])
    assert len(problems) == 2 and all(isinstance(p, str) for p in problems)
    missing = proto("m.proto", "m", ["google/protobuf/nothing.proto"], "M", ".m.M")
    assert "nothing.proto" in schemas.add_files([missing])[0]
    assert schemas.file_count == 0
