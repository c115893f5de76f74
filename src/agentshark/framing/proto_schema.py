"""Protobuf schemas given by the user, so gRPC messages read with their field names.

``--proto FILE`` takes a ``FileDescriptorSet`` (what ``protoc -o FILE --include_imports`` and
``buf build -o FILE`` write) or a ``.proto`` file, compiled here with ``grpcio-tools``'s
protoc (its folder is the import path). A gRPC method path ``/package.Service/Method`` names
the request and response message types; each message is parsed with the ``protobuf``
library and written as ``json_format`` writes it (the proto3 JSON mapping: lowerCamelCase
names, int64 as strings, enums by name). A message the schema cannot parse keeps its
schema-less reading, with the parser's error beside it.

The ``protobuf`` and ``grpcio-tools`` packages are optional (``pip install
'agentshark[grpc]'``); without them, ``--proto`` is an error that says so.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from agentshark.errors import InputError

__all__ = ["ProtoSchemas", "load_schemas"]

_EXTRA = "pip install 'agentshark[grpc]'"


class ProtoSchemas:
    """The services and messages of the given descriptor sets."""

    def __init__(self, descriptor_sets: list[bytes], names: list[str]) -> None:
        try:
            from google.protobuf import descriptor_pb2, descriptor_pool
        except ImportError:
            raise InputError(f"--proto needs the protobuf package: {_EXTRA}") from None
        self._pool = descriptor_pool.DescriptorPool()
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
        self.sources = names

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
        from google.protobuf import json_format, message_factory

        try:
            cls = message_factory.GetMessageClass(self._pool.FindMessageTypeByName(type_name))
            message = cls()
            message.ParseFromString(payload)
            # the pool resolves google.protobuf.Any fields by their type URL
            return json_format.MessageToDict(message, descriptor_pool=self._pool), None
        except Exception as exc:  # noqa: BLE001 - DecodeError, unknown types...
            return None, f"{type_name} does not parse this message ({exc})"


def load_schemas(paths: list[str]) -> ProtoSchemas | None:
    """The schemas in ``paths`` (descriptor sets or ``.proto`` files); None for none."""
    if not paths:
        return None
    sets, names = [], []
    for path in paths:
        p = Path(path)
        if not p.is_file():
            raise InputError(f"--proto {path}: no such file")
        sets.append(_compile(p) if p.suffix == ".proto" else p.read_bytes())
        names.append(path)
    return ProtoSchemas(sets, names)


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
