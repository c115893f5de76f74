"""PostgreSQL's SQL text as tokens and nested groups: ``str -> list[Token]``, ``-> Group``.

What :mod:`agentshark.apis.retrieval.pgvector_sql` reads statements with. Hand-written
because no SQL library of the field is a dependency: one pass of a single compiled pattern
(linear in the text: no pattern is tried byte by byte from Python), then parentheses and
brackets into a tree. PostgreSQL's lexer
(https://www.postgresql.org/docs/current/sql-syntax-lexical.html) is the reference for
strings (``'..''..'``, ``E'..\\'..'``), dollar quoting (``$tag$...$tag$``), quoted
identifiers (``"..."``, folded never), comments (``--``, ``/* */``) and parameters (``$1``).
Nested block comments end at their first ``*/`` (PostgreSQL nests them): a statement that
uses them may be read wrong, never past its end.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_TOKEN = re.compile(
    r"""
    (?P<space>\s+)
  | (?P<comment>--[^\n]*|/\*.*?(?:\*/|\Z))
  | (?P<estring>[eE]'(?:[^'\\]|\\.|'')*(?:'|\Z))
  | (?P<string>'(?:[^']|'')*(?:'|\Z))
  | (?P<dollar>\$(?P<tag>(?:[A-Za-z_][A-Za-z_0-9]*)?)\$.*?(?:\$(?P=tag)\$|\Z))
  | (?P<param>\$[0-9]+)
  | (?P<quoted>"(?:[^"]|"")*(?:"|\Z))
  | (?P<number>(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)
  | (?P<word>[^\W\d][\w$]*)
  | (?P<op><->|<=>|<\#>|<\+>|<~>|<%>|::|[<>=!~+\-*/%^&|\#@?]+)
  | (?P<punct>[(),;.\[\]])
  | (?P<other>.)
    """,
    re.S | re.X,
)


@dataclass(frozen=True, slots=True)
class Token:
    kind: str  # word quoted string param number op punct other
    text: str
    start: int
    end: int

    @property
    def upper(self) -> str:
        return self.text.upper() if self.kind == "word" else ""

    @property
    def name(self) -> str:
        """An identifier as PostgreSQL reads it: unquoted folded to lower case."""
        if self.kind == "quoted":
            return self.text[1:-1].replace('""', '"')
        return self.text.lower()


@dataclass(slots=True)
class Group:
    """A parenthesized part: its tokens and subgroups, and where it began and ended."""

    items: list[Item] = field(default_factory=list)
    start: int = 0
    end: int = 0
    bracket: bool = False  # ``[...]`` (an ARRAY's, a subscript), not ``(...)``


Item = Token | Group


def tokens(sql: str) -> list[Token]:
    """The statement's tokens, spaces and comments left out."""
    out = []
    for m in _TOKEN.finditer(sql):
        kind = m.lastgroup or "other"
        if kind in ("space", "comment"):
            continue
        if kind in ("estring", "dollar"):
            kind = "string"
        out.append(Token(kind, m.group(), m.start(), m.end()))
    return out


def tree(toks: list[Token]) -> Group:
    """The tokens nested by parentheses and brackets (an unbalanced ``)`` or ``]`` is left
    out, an unclosed ``(`` closes at the end)."""
    root = Group(start=0, end=toks[-1].end if toks else 0)
    stack = [root]
    for tok in toks:
        if tok.text in "([" and tok.kind == "punct":
            group = Group(start=tok.start, bracket=tok.text == "[")
            stack[-1].items.append(group)
            stack.append(group)
        elif tok.text in ")]" and tok.kind == "punct":
            if len(stack) > 1 and stack[-1].bracket == (tok.text == "]"):
                stack.pop().end = tok.end
        else:
            stack[-1].items.append(tok)
    for group in stack[1:]:
        group.end = root.end
    return root


def word_at(items: list[Item], i: int) -> str:
    item = items[i] if 0 <= i < len(items) else None
    return item.upper if isinstance(item, Token) else ""


def split(items: list[Item]) -> list[list[Item]]:
    """Items split at this level's commas."""
    parts: list[list[Item]] = [[]]
    for item in items:
        if isinstance(item, Token) and item.kind == "punct" and item.text == ",":
            parts.append([])
        else:
            parts[-1].append(item)
    return [p for p in parts if p]


def is_text(item: Item, *texts: str) -> bool:
    return isinstance(item, Token) and item.text in texts


def token_texts(items: list[Item]) -> list[str]:
    return [i.text for i in items if isinstance(i, Token)]


def string_value(text: str) -> str:
    if text[:1] in "eE" and text[1:2] == "'":
        return text[2:-1].replace("''", "'")
    if text.startswith("$"):
        tag_end = text.index("$", 1) + 1
        return text[tag_end : len(text) - tag_end]
    return text[1:-1].replace("''", "'")
