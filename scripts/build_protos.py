"""Build the protobuf descriptor sets bundled in ``src/agentshark/apis/protos/``.

    python3 scripts/build_protos.py          # rebuild every set and build.json

* ``a2a-1.0.1.pb`` and ``a2a-0.3.0.pb``: the A2A specification's ``a2a.proto`` (kept in
  ``protos/source/a2a-<version>/``, Apache-2.0) compiled by ``grpcio-tools``' protoc with
  ``--include_imports``; its ``google/api`` imports come from ``googleapis-common-protos``,
  the ``google/protobuf`` ones from ``grpcio-tools`` itself; ``google/rpc/status.proto`` and
  ``error_details.proto`` are added, for the ``google.rpc.Status`` of gRPC errors.
* ``xai-api.pb``: xAI's API as the ``xai-sdk`` package ships it (Apache-2.0): generated
  ``xai_sdk/proto/v6/*_pb2.py`` modules, no ``.proto`` files; the set is the
  ``FileDescriptorProto`` of ``chat_pb2`` and of every file it imports, dependencies first.

It runs in a private venv, ``scripts/.venv-grpc-agents`` (the one
``scripts/make_grpc_agent_captures.py`` makes), and re-runs itself there. ``build.json`` records
the versions used, which the README and the module docstring cite.
"""

import importlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

import genlib
import make_grpc_agent_captures as caps

OUT = genlib.REPO_ROOT / "src" / "agentshark" / "apis" / "protos"
A2A = {
    "1.0.1": "3303592588e388e62e0f69f701af531d2f4e3991",
    "0.3.0": "8d57eba286de756176892518a8fc39b0ac2ccefb",
}
XAI_ROOT = "xai_sdk.proto.v6.chat_pb2"


def compile_a2a(version: str) -> bytes:
    import google.api  # type: ignore[import-untyped]
    import grpc_tools  # type: ignore[import-untyped]

    api_root = Path(next(iter(google.api.__path__))).parent.parent
    builtin = Path(grpc_tools.__file__).parent / "_proto"
    src = OUT / "source" / f"a2a-{version}"
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "set.pb"
        argv = [
            sys.executable,
            "-m",
            "grpc_tools.protoc",
            f"-I{src}",
            f"-I{api_root}",
            f"-I{builtin}",
            "--include_imports",
            f"--descriptor_set_out={out}",
            str(src / "a2a.proto"),
            # what A2A's gRPC errors carry in grpc-status-details-bin (A2A 1.0 §10.6)
            "google/rpc/status.proto",
            "google/rpc/error_details.proto",
        ]
        subprocess.run(argv, check=True)
        return out.read_bytes()


def xai_set() -> bytes:
    from google.protobuf import descriptor_pb2

    root = importlib.import_module(XAI_ROOT).DESCRIPTOR
    order: list[object] = []
    seen: set[str] = set()

    def visit(fd: object) -> None:
        name = fd.name  # type: ignore[attr-defined]
        if name in seen:
            return
        seen.add(name)
        for dep in fd.dependencies:  # type: ignore[attr-defined]
            visit(dep)
        order.append(fd)

    visit(root)
    fds = descriptor_pb2.FileDescriptorSet()
    for fd in order:
        fd.CopyToProto(fds.file.add())  # type: ignore[attr-defined]
    return bytes(fds.SerializeToString(deterministic=True))


def main() -> int:
    genlib.reexec_in_venv(
        Path(__file__).resolve(),
        caps.VENV,
        lambda: genlib.ensure_venv(caps.VENV, caps.REQUIREMENTS, "python3.11"),
    )
    built: dict[str, object] = {}
    for version, commit in A2A.items():
        data = compile_a2a(version)
        (OUT / f"a2a-{version}.pb").write_bytes(data)
        built[f"a2a-{version}.pb"] = {
            "source": f"a2aproject/A2A tag v{version} ({commit}), a2a.proto",
            "license": "Apache-2.0",
            "bytes": len(data),
        }
    data = xai_set()
    (OUT / "xai-api.pb").write_bytes(data)
    built["xai-api.pb"] = {
        "source": f"xai-sdk {genlib.package_versions('xai-sdk')['xai-sdk']}, {XAI_ROOT}",
        "license": "Apache-2.0",
        "bytes": len(data),
    }
    built["tools"] = genlib.package_versions("grpcio-tools", "googleapis-common-protos", "protobuf")
    genlib.write_json(OUT / "build.json", built)
    print(json.dumps(built, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
