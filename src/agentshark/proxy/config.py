"""What the gateway is told to do (no mitmproxy here: the command line checks it first)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from agentshark.proxy.routes import Route

__all__ = ["GatewayConfig"]


@dataclass(slots=True, kw_only=True)
class GatewayConfig:
    host: str = "127.0.0.1"
    port: int = 8080
    routes: list[Route] = field(default_factory=list)  # reverse mode; empty: forward mode
    confdir: Path = field(default_factory=lambda: Path("~/.agentshark/ca").expanduser())
    upstream_ca: str | None = None
    insecure: bool = False
    keylog: str | None = None

    @property
    def modes(self) -> list[str]:
        if not self.routes:
            return ["regular"]
        first = self.routes[0]
        return [f"reverse:{first.scheme}://{first.host}:{first.port}"]
