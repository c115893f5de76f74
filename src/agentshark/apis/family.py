"""What an API family offers the registry: ``match(view) -> float`` and ``parse(view, call)``;
a family read from a wire protocol's operations (pgvector over PostgreSQL) offers the same
over an :class:`~agentshark.wire.events.Operation`.

A family module imports only the shared modules of :mod:`agentshark.apis` (this one,
``model``, ``view``, ``accumulate``, ``appids``) and below; :mod:`agentshark.apis.registry`
imports the families, never the other way round.
"""

from __future__ import annotations

from typing import Protocol

from agentshark.apis.model import Call
from agentshark.apis.view import ExchangeView
from agentshark.wire.events import Operation


class ApiFamily(Protocol):
    api: str  # the report's "api" value for calls this family parses

    def match(self, view: ExchangeView) -> float: ...

    def parse(self, view: ExchangeView, call: Call) -> None: ...


class OperationFamily(Protocol):
    api: str  # the report's "api" value for calls this family parses

    def match(self, op: Operation) -> float: ...

    def parse(self, op: Operation, call: Call) -> None: ...
