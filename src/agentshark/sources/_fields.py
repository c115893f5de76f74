"""Typed field access shared by the document readers (HAR, vcrpy cassettes).

Both readers walk a parsed JSON/YAML document whose items each become one exchange. A
structurally malformed item raises :class:`MalformedError` naming the JSON path of the
culprit; :meth:`ItemList.read` turns that into an error :class:`Diagnostic` and goes on with
the next item. :class:`Fields` checks the type of one field and says what it found, calling
a dict by the reader's own word for it ("object" in HAR, "mapping" in a cassette).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from agentshark.errors import Diagnostic
from agentshark.model import Exchange


class MalformedError(Exception):
    """An item that cannot become an exchange: ``path`` is the JSON path of the culprit."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(path, problem)
        self.path = path
        self.problem = problem


@dataclass(frozen=True, slots=True)
class ItemList:
    """The list of a document whose items each become one exchange, and its diagnostics.

    ``location`` is the list's JSON path; ``missing_code`` is reported when it is not a
    list, ``malformed_code`` for each malformed item ("... <item_word> skipped").
    """

    location: str
    item_word: str
    missing_code: str
    malformed_code: str

    def read(
        self, items: object, name: str, build: Callable[[object, str], Exchange]
    ) -> Iterator[Exchange | Diagnostic]:
        """Yield ``build(item, path)`` for each of ``items``, or a diagnostic in its place.

        A malformed item (``build`` raised :class:`MalformedError`) is skipped with an
        error diagnostic and the rest are still read. ``name`` (the file) starts every
        message.
        """
        if not isinstance(items, list):
            yield Diagnostic(
                code=self.missing_code,
                location=self.location,
                message=f"{name}: {self.location} is missing or not a list: no exchanges read",
                severity="error",
            )
            return
        for i, item in enumerate(items):
            try:
                yield build(item, f"{self.location}[{i}]")
            except MalformedError as e:
                yield Diagnostic(
                    code=self.malformed_code,
                    location=e.path,
                    message=f"{name}: {e.path} {e.problem}: {self.item_word} skipped",
                    severity="error",
                )


@dataclass(frozen=True, slots=True)
class Fields:
    """Checked access to the fields of a document whose dicts are called ``dict_word``."""

    dict_word: str

    def kind(self, value: object) -> str:
        """What ``value`` is, in the words of the messages ("string", "null", ...)."""
        return {dict: self.dict_word, list: "list", str: "string", type(None): "null"}.get(
            type(value), type(value).__name__
        )

    def as_dict(self, value: object, path: str) -> dict[str, Any]:
        if isinstance(value, dict):
            return value
        if value is None:
            raise MalformedError(path, "is missing")
        a = "an" if self.dict_word[0] in "aeiou" else "a"
        raise MalformedError(path, f"is a {self.kind(value)}, expected {a} {self.dict_word}")

    def opt_str(self, obj: dict[str, Any], key: str, path: str) -> str | None:
        value = obj.get(key)
        if value is None or isinstance(value, str):
            return value
        raise MalformedError(f"{path}.{key}", f"is a {self.kind(value)}, expected a string")

    def req_str(self, obj: dict[str, Any], key: str, path: str) -> str:
        value = self.opt_str(obj, key, path)
        if value is None:
            raise MalformedError(f"{path}.{key}", "is missing")
        return value

    def opt_int(self, obj: dict[str, Any], key: str, path: str) -> int | None:
        value = obj.get(key)
        if value is None or (isinstance(value, int) and not isinstance(value, bool)):
            return value
        raise MalformedError(f"{path}.{key}", f"is a {self.kind(value)}, expected an integer")
