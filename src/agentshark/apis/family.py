"""What an API family offers the registry: ``match(view) -> float`` and ``parse(view, call)``.

A family module imports only the shared modules of :mod:`agentshark.apis` (this one,
``model``, ``view``, ``accumulate``, ``appids``) and below; :mod:`agentshark.apis.registry`
imports the families, never the other way round.
"""

from __future__ import annotations

from typing import Protocol

from agentshark.apis.model import Call
from agentshark.apis.view import ExchangeView


class ApiFamily(Protocol):
    api: str  # the report's "api" value for calls this family parses

    def match(self, view: ExchangeView) -> float: ...

    def parse(self, view: ExchangeView, call: Call) -> None: ...
