"""Protobuf schemas given by the user, so gRPC messages read with their field names.

``--proto FILE`` takes a ``FileDescriptorSet`` (what ``protoc -o FILE --include_imports`` and
``buf build -o FILE`` write) or a ``.proto`` file, compiled here with ``grpcio-tools``'s
protoc (its folder is the import path); ``--proto-descriptors FILE`` takes only a
``FileDescriptorSet`` (never compiled). The files gRPC server reflection sends in the input
itself are added as they are seen (:meth:`ProtoSchemas.add_files`, fed by
:mod:`agentshark.output.grpc_reflection`). A gRPC method path ``/package.Service/Method`` names
the request and response message types; each message is parsed with the ``protobuf``
library and written as ``json_format`` writes it (the proto3 JSON mapping: lowerCamelCase
names, int64 as strings, enums by name; :mod:`agentshark.framing.proto_wire_json` reads the
plain messages straight from their bytes, :mod:`agentshark.framing.proto_json` writes the
others faster than ``json_format``).
A message the schema cannot parse keeps its schema-less reading, with the parser's error
beside it.

The ``protobuf`` and ``grpcio-tools`` packages are optional (``pip install
'agentshark[grpc]'``); without them, ``--proto`` is an error that says so.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from agentshark.errors import InputError
from agentshark.framing.proto_json import ProtoJson
from agentshark.framing.proto_wire_json import WireJson

__all__ = ["ProtoSchemas", "empty_schemas", "load_schemas"]

_EXTRA = "pip install 'agentshark[grpc]'"
_WELL_KNOWN = re.compile(r"google/protobuf/[a-z_]+\.proto")  # the protobuf package ships them


class ProtoSchemas:
    """The services and messages of the given descriptor sets."""

    def __init__(self, descriptor_sets: list[bytes], names: list[str]) -> None:
        try:
            from google.protobuf import descriptor_pb2, descriptor_pool
        except ImportError:
            raise InputError(f"--proto needs the protobuf package: {_EXTRA}") from None
        self._pool = descriptor_pool.DescriptorPool()
        self._files: set[str] = set()  # the names of the files in the pool
        self._waiting: dict[str, Any] = {}  # reflected files whose imports are not known yet
        for data, name in zip(descriptor_sets, names, strict=True):
            fds = descriptor_pb2.FileDescriptorSet()
            try:
                fds.ParseFromString(data)
            except Exception as exc:  # noqa: BLE001 - protobuf's DecodeError and friends
                raise InputError(f"{name} is not a FileDescriptorSet ({exc})") from None
            for file in fds.file:
                try:
                    self._pool.Add(file)
                except Exception as exc:  # noqa: BLE001 - a conflicting or broken file
                    raise InputError(f"{name}: {file.name} cannot be loaded ({exc})") from None
                self._files.add(file.name)
        self.sources = names
        self._classes: dict[str, Any] = {}  # message classes by type name
        self._json = ProtoJson(self._pool)
        self._wire = WireJson(self._pool)

    @property
    def file_count(self) -> int:
        """How many files the pool holds (it grows as reflection brings files)."""
        return len(self._files)

    def add_files(self, protos: list[bytes]) -> list[str]:
        """Add serialized ``FileDescriptorProto`` s (as gRPC reflection sends them), each
        after the files it imports: a file whose imports are not known yet waits for a later
        call to bring them (well-known ``google/protobuf/*`` imports come from the protobuf
        package). A file already known by name is skipped. Returns what could not be added,
        as sentences."""
        from google.protobuf import descriptor_pb2, descriptor_pool

        problems: list[str] = []
        for data in protos:
            file = descriptor_pb2.FileDescriptorProto()
            try:
                file.ParseFromString(data)
            except Exception as exc:  # noqa: BLE001 - DecodeError
                problems.append(f"a reflected file descriptor does not parse ({exc})")
                continue
            if not isinstance(file.name, str) or not all(
                isinstance(d, str) for d in file.dependency
            ):  # invalid UTF-8 in a proto2 string field comes back as bytes
                problems.append("a reflected file descriptor has a name that is not UTF-8")
                continue
            if file.name and file.name not in self._files:
                self._waiting[file.name] = file
        progress = True
        while progress and self._waiting:
            progress = False
            for name, file in list(self._waiting.items()):
                missing = [d for d in file.dependency if d not in self._files]
                for dep in missing:
                    if _WELL_KNOWN.fullmatch(dep):
                        problems += self._add_well_known(dep, descriptor_pool.Default())
                if any(d not in self._files for d in file.dependency):
                    continue
                del self._waiting[name]
                progress = True
                try:
                    self._pool.Add(file)
                    self._files.add(name)
                except Exception as exc:  # noqa: BLE001 - a conflicting or broken file
                    problems.append(f"the reflected file {name} cannot be loaded ({exc})")
        return problems

    def _add_well_known(self, name: str, default: Any) -> list[str]:
        from google.protobuf import descriptor_pb2

        module = "google.protobuf." + name.removeprefix("google/protobuf/").removesuffix(".proto")
        try:
            importlib.import_module(module + "_pb2")  # fills the default pool
            proto = descriptor_pb2.FileDescriptorProto()
            default.FindFileByName(name).CopyToProto(proto)
            self._pool.Add(proto)
        except Exception as exc:  # noqa: BLE001 - not a file this protobuf ships
            return [f"the import {name} is not known ({exc})"]
        self._files.add(name)
        return []

    def method(self, path: str) -> tuple[str, str] | None:
        """(request type, response type) of ``/package.Service/Method``, or None."""
        service, _, method = path.strip("/").partition("/")
        try:
            desc = self._pool.FindServiceByName(service).FindMethodByName(method)
        except KeyError:
            return None
        if desc is None:
            return None
        return desc.input_type.full_name, desc.output_type.full_name

    def to_json(self, type_name: str, payload: bytes) -> tuple[dict[str, Any] | None, str | None]:
        """The message as proto3 JSON, or (None, why not)."""
        try:
            fast = self._wire.read(type_name, payload)
            if fast is not None:
                return fast, None
            cls = self._classes.get(type_name)
            if cls is None:
                from google.protobuf import message_factory

                desc = self._pool.FindMessageTypeByName(type_name)
                cls = self._classes[type_name] = message_factory.GetMessageClass(desc)
            message = cls()
            message.ParseFromString(payload)
            # json_format's MessageToDict; the pool resolves google.protobuf.Any type URLs
            return self._json.to_dict(message), None
        except Exception as exc:  # noqa: BLE001 - DecodeError, unknown types...
            return None, f"{type_name} does not parse this message ({exc})"


def load_schemas(paths: list[str], descriptors: list[str] | None = None) -> ProtoSchemas | None:
    """The schemas in ``paths`` (descriptor sets or ``.proto`` files) and ``descriptors``
    (descriptor sets only); None for none."""
    given = [(p, "--proto") for p in paths] + [
        (p, "--proto-descriptors") for p in descriptors or []
    ]
    if not given:
        return None
    sets, names = [], []
    for path, option in given:
        p = Path(path)
        if not p.is_file():
            raise InputError(f"{option} {path}: no such file")
        if option == "--proto-descriptors" and p.suffix == ".proto":
            raise InputError(f"{option} {path}: a .proto file; give it to --proto")
        compile_it = option == "--proto" and p.suffix == ".proto"
        sets.append(_compile(p) if compile_it else p.read_bytes())
        names.append(path)
    return ProtoSchemas(sets, names)


def empty_schemas() -> ProtoSchemas | None:
    """A schema collection with no file yet, for what gRPC reflection in the input brings;
    None when the protobuf package is not installed."""
    if importlib.util.find_spec("google.protobuf") is None:
        return None
    return ProtoSchemas([], [])


def _compile(path: Path) -> bytes:
    """A ``.proto`` file as a descriptor set, by grpcio-tools' protoc."""
    if importlib.util.find_spec("grpc_tools") is None:
        raise InputError(f"--proto {path}: compiling .proto files needs grpcio-tools: {_EXTRA}")
    with tempfile.TemporaryDirectory(prefix="agentshark-proto-") as tmp:
        out = Path(tmp) / "set.pb"
        argv = [
            sys.executable,
            "-m",
            "grpc_tools.protoc",
            f"-I{path.parent}",
            "--include_imports",
            f"--descriptor_set_out={out}",
            str(path),
        ]
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        if done.returncode != 0 or not out.exists():
            why = done.stderr.strip() or f"protoc exited with {done.returncode}"
            raise InputError(f"--proto {path} does not compile: {why}")
        return out.read_bytes()
