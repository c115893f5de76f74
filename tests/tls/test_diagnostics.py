"""The TLS diagnostic catalogue: every report site fills exactly its template's fields."""

from __future__ import annotations

import ast
import string
from pathlib import Path

import agentshark.tls
from agentshark.tls.diagnostics import CATALOGUE, diagnostic


def fields(template: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(template) if name}


def test_every_note_call_fills_its_template() -> None:
    package = Path(agentshark.tls.__file__).parent  # every module of the package
    trees = [ast.parse(path.read_text()) for path in sorted(package.glob("*.py"))]
    calls = [
        node
        for tree in trees
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "_note"
    ]
    used = set()
    for call in calls:
        key = call.args[2]
        assert isinstance(key, ast.Constant) and key.value in CATALOGUE, ast.unparse(call)
        given = {k.arg for k in call.keywords} - {
            "per_direction",
            "every",
            "connection",
            "severity",
            None,
        } | {"who"}
        assert fields(CATALOGUE[key.value][1]) <= given, ast.unparse(call)
        used.add(key.value)
    assert used == set(CATALOGUE)


def test_codes_and_variants() -> None:
    diag = diagnostic("tls.no_keys/no_keylog", "c1", random="ab" * 8, ech="")
    assert diag.code == "tls.no_keys" and diag.location == "c1" and diag.severity == "warning"
    assert all(key.startswith("tls.") for key in CATALOGUE)
