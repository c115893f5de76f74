from __future__ import annotations

import pytest

from agentshark.proxy.routes import choose, parse_route, upstream_route


def test_the_longest_prefix_at_a_segment_boundary_wins() -> None:
    routes = [
        upstream_route("https://api.openai.com"),
        parse_route("/anthropic=https://api.anthropic.com"),
        parse_route("/anthropic/beta=https://beta.example:8443/base/"),
    ]
    assert choose(routes, "/v1/chat/completions") is routes[0]
    assert choose(routes, "/anthropic/v1/messages?beta=true") is routes[1]
    assert choose(routes, "/anthropic") is routes[1]
    assert choose(routes, "/anthropicx/v1") is routes[0]
    assert choose(routes, "/anthropic/beta/v1/messages") is routes[2]
    assert choose(routes[1:], "/openai/v1") is None


def test_the_prefix_is_cut_and_the_upstream_path_put_before() -> None:
    route = parse_route("/anthropic/=https://beta.example:8443/base/")
    assert route.prefix == "/anthropic"
    assert route.origin == "https://beta.example:8443"
    assert route.target("/anthropic/v1/messages?x=1") == "/base/v1/messages?x=1"
    assert route.target("/anthropic") == "/base/"
    plain = upstream_route("http://127.0.0.1:8000")
    assert plain.target("/v1/models") == "/v1/models"
    assert upstream_route("https://[::1]:9443").origin == "https://[::1]:9443"
    assert upstream_route("https://example.com").port == 443


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("anthropic=https://x", "starts with /"),
        ("/a", "/PREFIX=URL"),
        ("/a=ftp://x", "http:// or https://"),
        ("/a=https://", "with a host"),
        ("/a=https://x/?q=1", "no query"),
        ("/a=https://x:99999", "not a URL"),
    ],
)
def test_a_bad_route_says_what_is_wrong(text: str, said: str) -> None:
    with pytest.raises(ValueError, match=said):
        parse_route(text)
