"""ViewerData -> one self-contained HTML file: the viewer and the data inline, no network.

The page holds the viewer's CSS and script (``output/viewer/``, :func:`viewer_script`) and one
``<script type="application/json">`` block for the index plus one per trace, parsed only when
that trace is opened. Model content is untrusted, so:

* each block is JSON with ``<``, ``>``, ``&``, U+2028 and U+2029 written as ``\\uXXXX``
  escapes (valid JSON, and no ``</script>`` or ``<!--`` can end or bend the block; HTML's
  "restrictions for contents of script elements",
  https://html.spec.whatwg.org/multipage/scripting.html);
* the viewer only ever sets text (``textContent``, ``createTextNode``), never HTML;
* a Content-Security-Policy allows the viewer's own script and style by their SHA-256
  hashes and nothing else: no other script, no network (``default-src 'none'``), so even an
  injected element could neither run nor call out (https://www.w3.org/TR/CSP3/#grammardef-hash-source).
"""

from __future__ import annotations

import base64
import functools
import hashlib
import html
from collections.abc import Iterator
from importlib import resources
from typing import Any, BinaryIO

import orjson

from agentshark import __version__
from agentshark.output.viewer_data import ViewerData

_ESCAPES = (
    (b"<", b"\\u003c"),
    (b">", b"\\u003e"),
    (b"&", b"\\u0026"),
    ("\u2028".encode(), b"\\u2028"),
    ("\u2029".encode(), b"\\u2029"),
)


SCRIPT_PARTS = ("source", "dom", "lists", "trace", "span", "blocks", "start")
"""The viewer's script files (``output/viewer/*.js``), in the order they are joined."""


def asset(name: str) -> str:
    """A file of the viewer (``viewer.css``, ``dom.js``...), as text."""
    return (resources.files("agentshark.output") / "viewer" / name).read_text("utf-8")


@functools.cache
def viewer_script() -> str:
    """The viewer's script: its parts joined inside one strict function scope (they share
    their declarations; ``start.js`` runs last)."""
    parts = "\n".join(asset(f"{name}.js") for name in SCRIPT_PARTS)
    return f'(function () {{\n"use strict";\n{parts}}})();\n'


def script_json(value: Any) -> bytes:
    """``value`` as JSON safe to place inside a ``<script>`` element."""
    data = orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS)
    for raw, escaped in _ESCAPES:
        data = data.replace(raw, escaped)
    return data


def _hash(text: str) -> str:
    return (
        "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode() + "'"
    )


def csp(script: str, style: str) -> str:
    """The page's policy: its own script and style element (by hash), nothing else."""
    return (
        f"default-src 'none'; script-src {_hash(script)}; style-src {_hash(style)}; "
        "img-src data:; base-uri 'none'; form-action 'none'"
    )


def write_html(data: ViewerData, out: BinaryIO, *, title: str) -> None:
    """The whole page, written block by block."""
    for chunk in html_chunks(data, title=title):
        out.write(chunk)


def html_chunks(data: ViewerData, *, title: str) -> Iterator[bytes]:
    script = viewer_script()
    style = asset("viewer.css")
    if "</script" in script.lower() or "</style" in style.lower():  # pragma: no cover
        raise ValueError("the viewer's assets must not close their own elements")
    head = (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{csp(script, style)}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f'<meta name="generator" content="agentshark {html.escape(__version__)}">\n'
        f"<title>{html.escape(title)}</title>\n<style>{style}</style>\n</head>\n"
        '<body data-source="inline">\n'
        "<noscript>This report needs JavaScript to show its data.</noscript>\n"
    )
    yield head.encode()
    yield b'<script type="application/json" id="agentshark-index">'
    yield script_json(data.index)
    yield b"</script>\n"
    for i, detail in enumerate(data.traces):
        yield f'<script type="application/json" id="agentshark-trace-{i}">'.encode()
        yield script_json(detail)
        yield b"</script>\n"
    yield f"<script>{script}</script>\n</body></html>\n".encode()
