"""Protobuf schemas bundled with agentshark: the agent protocols that define gRPC bindings.

Each bundled schema is a ``FileDescriptorSet`` (``protoc --include_imports
--descriptor_set_out``) made by ``scripts/build_protos.py`` and committed beside this file;
nothing is compiled at run time. A gRPC method path ``/package.Service/Method`` picks the set
by its service:

=========================  ====================  =============================================
service                    set                   source (license)
=========================  ====================  =============================================
``lf.a2a.v1.A2AService``   ``a2a-1.0.1.pb``      the A2A specification's ``specification/
                                                 a2a.proto`` at tag ``v1.0.1`` (Apache-2.0)
``a2a.v1.A2AService``      ``a2a-0.3.0.pb``      ``specification/grpc/a2a.proto`` at tag
                                                 ``v0.3.0`` (Apache-2.0)
``xai_api.Chat``           ``xai-api.pb``        the ``xai-sdk`` package's generated
                                                 ``xai_sdk/proto/v6/*_pb2.py`` descriptors
                                                 (Apache-2.0), version in ``build.json``
=========================  ====================  =============================================

The A2A ``.proto`` sources are in ``source/`` (with the ``google/api`` imports taken from the
``googleapis-common-protos`` package at build time, and included in the sets). ``build.json``
records the versions the sets were built from. Reading needs the ``protobuf`` package (the
``grpc`` extra); without it :func:`schemas_for` returns None and callers say so.
"""

from __future__ import annotations

import importlib.util
from functools import cache
from pathlib import Path

from agentshark.framing.proto_schema import ProtoSchemas

__all__ = ["BUNDLED", "available", "schemas_for", "service_of"]

_HERE = Path(__file__).resolve().parent

# service full name -> descriptor set file
BUNDLED: dict[str, str] = {
    "lf.a2a.v1.A2AService": "a2a-1.0.1.pb",
    "a2a.v1.A2AService": "a2a-0.3.0.pb",
    "xai_api.Chat": "xai-api.pb",
}


@cache
def available() -> bool:
    """Whether the protobuf package is there to read the bundled sets (looked up once)."""
    return importlib.util.find_spec("google.protobuf") is not None


def service_of(path: str) -> str:
    """``package.Service`` of a gRPC method path ``/package.Service/Method``."""
    return path.strip("/").partition("/")[0]


def schemas_for(path: str) -> ProtoSchemas | None:
    """The bundled schema of the service ``path`` calls, or None (not bundled, no protobuf)."""
    name = BUNDLED.get(service_of(path))
    if name is None or not available():
        return None
    return _load(name)


@cache
def _load(name: str) -> ProtoSchemas:
    return ProtoSchemas([(_HERE / name).read_bytes()], [f"bundled {name}"])
