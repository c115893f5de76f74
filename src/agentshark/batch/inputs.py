"""Inputs of a batch: files, globs, folders and fsspec URLs -> the files to analyze.

A path or URL naming a file is that file (whatever its name); a glob is the files it
matches; a folder is, recursively, the files that look like inputs: pcap/pcapng captures by
their first bytes, HAR files, mitmproxy flows, cassettes and stdio transcripts by their
suffix (:data:`SUFFIXES`); give a glob for any other name. URLs go through fsspec
(``file://``, and ``s3://``, ``gs://``... when their fsspec package, s3fs or gcsfs, is
installed). Nothing is read here but the first bytes of folder entries without a known suffix.
"""

from __future__ import annotations

import glob as _glob
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import fsspec

from agentshark.sources.detect import sniff_format

SUFFIXES = (".pcap", ".pcapng", ".cap", ".har", ".mitm", ".yaml", ".yml", ".jsonl", ".ndjson")


class InputSpecError(ValueError):
    """An input that names nothing to analyze: said in one line (a usage error)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Input:
    """One file of the batch."""

    url: str  # as given or found: a local path, or protocol://...
    local: str | None  # its local path when its file system is this machine's, else None
    size: int | None


def expand(specs: Sequence[str]) -> list[Input]:
    """The files ``specs`` name, in order, each once."""
    out: list[Input] = []
    seen: set[str] = set()
    for spec in specs:
        found = _files(spec)
        if not found:
            raise InputSpecError(_nothing(spec))
        for item in found:
            if item.url not in seen:
                seen.add(item.url)
                out.append(item)
    return out


def _filesystem(spec: str) -> tuple[Any, str]:
    try:
        fs, path = fsspec.core.url_to_fs(spec)
        return fs, str(path)
    except ImportError as exc:  # fsspec names the package the protocol needs
        raise InputSpecError(f"{spec}: cannot read this URL here: {exc}") from None
    except ValueError as exc:
        raise InputSpecError(f"{spec}: {exc} (give a path or an fsspec URL)") from None


def _is_local(fs: Any) -> bool:
    protocol = fs.protocol if isinstance(fs.protocol, tuple) else (fs.protocol,)
    return "file" in protocol or "local" in protocol


def _files(spec: str) -> list[Input]:
    fs, path = _filesystem(spec)
    local = _is_local(fs)

    def named(p: str, size: int | None) -> Input:
        if not local:
            return Input(url=fs.unstrip_protocol(p), local=None, size=size)
        shown = p if "://" in spec or Path(spec).is_absolute() else _relative(p)
        return Input(url=shown, local=p, size=size)

    try:
        if _glob.has_magic(path):
            matches = fs.glob(path, detail=True)
            return [named(p, i.get("size")) for p, i in sorted(matches.items()) if _file(i)]
        if fs.isdir(path):
            entries = fs.find(path, detail=True)
            return [
                named(p, i.get("size"))
                for p, i in sorted(entries.items())
                if _file(i) and _looks_like_input(fs, p)
            ]
        if fs.exists(path):
            return [named(path, fs.info(path).get("size"))]
    except OSError as exc:
        raise InputSpecError(f"{spec}: cannot list it: {exc}") from None
    return []


def _relative(path: str) -> str:
    """A local file found from a relative spec, named relative to the working directory."""
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


def _file(info: dict[str, Any]) -> bool:
    return info.get("type") == "file"


def _looks_like_input(fs: Any, path: str) -> bool:
    if path.lower().endswith(SUFFIXES):
        return True
    try:
        with fs.open(path, "rb") as f:
            head = f.read(64)
    except OSError:
        return False
    return sniff_format(head) in ("pcap", "pcapng")


def _nothing(spec: str) -> str:
    if _glob.has_magic(spec):
        return f"{spec}: the pattern matches no file"
    fs, path = _filesystem(spec)
    if fs.isdir(path):
        return (
            f"{spec}: the folder holds no capture, HAR file, mitmproxy flow, cassette or "
            f"transcript ({', '.join(SUFFIXES)}); give a glob for other names"
        )
    return f"{spec}: no such file or folder"
