"""Where a reverse-proxied request goes: ``--upstream URL`` and ``--route /prefix=URL``.

A route takes the requests whose path starts with its prefix at a segment boundary
(``/anthropic`` takes ``/anthropic`` and ``/anthropic/v1/messages``, not ``/anthropicx``);
the longest matching prefix wins, and ``--upstream URL`` is the route of ``/``. The prefix
is cut from the path and the upstream URL's own path put before the rest::

    --route /anthropic=https://api.anthropic.com
        POST /anthropic/v1/messages        -> https://api.anthropic.com/v1/messages
    --upstream https://example.com/openai
        POST /v1/chat/completions?x=1      -> https://example.com/openai/v1/chat/completions?x=1
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

__all__ = ["Route", "choose", "parse_route", "upstream_route"]

_DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True, slots=True, kw_only=True)
class Route:
    prefix: str  # "/" or "/name" (no trailing slash)
    scheme: str  # "http" | "https"
    host: str
    port: int
    base_path: str  # the upstream URL's path without its trailing slash ("" for none)

    @property
    def origin(self) -> str:
        default = _DEFAULT_PORTS[self.scheme] == self.port
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}" + ("" if default else f":{self.port}")

    def target(self, path: str) -> str:
        """The path (with its query) to send upstream for the client's ``path``."""
        rest = path if self.prefix == "/" else path[len(self.prefix) :]
        if not rest.startswith("/"):
            rest = "/" + rest
        return self.base_path + rest


def upstream_route(url: str, prefix: str = "/") -> Route:
    """The route of ``prefix`` to ``url`` (http or https, a host, an optional port and path);
    ValueError says what is wrong with it."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise ValueError(f"{url!r} is not a URL ({exc})") from None
    if parts.scheme not in _DEFAULT_PORTS or not parts.hostname:
        raise ValueError(f"{url!r}: give an http:// or https:// URL with a host")
    if parts.query or parts.fragment:
        raise ValueError(f"{url!r}: an upstream URL has no query or fragment")
    if not prefix.startswith("/"):
        raise ValueError(f"route prefix {prefix!r}: it starts with / (e.g. /anthropic)")
    return Route(
        prefix="/" if prefix.strip("/") == "" else "/" + prefix.strip("/"),
        scheme=parts.scheme,
        host=parts.hostname,
        port=port or _DEFAULT_PORTS[parts.scheme],
        base_path=parts.path.rstrip("/"),
    )


def parse_route(text: str) -> Route:
    """``/prefix=URL``; ValueError says what is wrong with it."""
    prefix, sep, url = text.partition("=")
    if not sep or not prefix or not url:
        raise ValueError(f"{text!r}: give /PREFIX=URL, e.g. /anthropic=https://api.anthropic.com")
    return upstream_route(url, prefix)


def choose(routes: Sequence[Route], path: str) -> Route | None:
    """The route for a request's ``path`` (with its query): the longest prefix that matches."""
    bare = path.split("?", 1)[0]
    best: Route | None = None
    for route in routes:
        p = route.prefix
        matches = p == "/" or bare == p or bare.startswith(p + "/")
        if matches and (best is None or len(p) > len(best.prefix)):
            best = route
    return best
