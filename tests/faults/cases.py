"""The captures the fault suite rewrites: every protocol the issue names, with key logs."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tests.helpers import CAPTURES, ROOT

OWN = ROOT / "tests" / "data" / "captures"
FAULT_DATA = ROOT / "tests" / "data" / "faults"


@dataclass(frozen=True, slots=True, kw_only=True)
class Input:
    name: str
    path: Path
    keylog: Path | None = None
    what: str = ""
    # the capture holds real QUIC retransmissions (losses before the capture point, the
    # relay's records in truth.json): a lost datagram's frames may come again in a later one
    resends: bool = False


def _shared(name: str, what: str, *, keys: bool = False) -> Input:
    folder = CAPTURES / name
    return Input(
        name=name,
        path=folder / "capture.pcap",
        keylog=folder / "keylog.txt" if keys else None,
        what=what,
    )


def _own(name: str, what: str, *, keys: bool = False, resends: bool = False) -> Input:
    folder = OWN / name
    return Input(
        name=name,
        path=folder / "capture.pcap",
        keylog=folder / "keys.log" if keys else None,
        what=what,
        resends=resends,
    )


INPUTS: tuple[Input, ...] = (
    Input(name="agent_chat", path=ROOT / "examples" / "agent_chat.pcap", what="HTTP/1, SSE"),
    _shared("http1_cleartext", "HTTP/1 keep-alive, SSE, gzip"),
    _shared("h2c_prior_knowledge", "HTTP/2 cleartext"),
    _shared("grpc_h2c", "HTTP/2 gRPC"),
    _shared("https_tls12_h1", "TLS 1.2, HTTP/1", keys=True),
    _shared("https_tls13_h2", "TLS 1.3, HTTP/2", keys=True),
    _shared("llm_sdk_openai", "TLS 1.3, OpenAI SDK, SSE", keys=True),
    _shared("llm_sdk_anthropic", "TLS 1.3, Anthropic SDK, SSE", keys=True),
    _shared("mcp_http_plain", "MCP streamable HTTP, SSE"),
    _shared("a2a_jsonrpc_v03", "A2A JSON-RPC 0.3"),
    _shared("ws_realtime_plain", "WebSocket after an HTTP/1 Upgrade"),
    _own("mcp_streamable_sessions", "MCP sessions"),
    _own("mcp_legacy_sse", "MCP legacy SSE"),
    _own("mcp_streamable_tls", "MCP over TLS 1.3", keys=True),
    _own("a2a_v1_jsonrpc", "A2A 1.0 JSON-RPC"),
    _own("a2a_v1_rest", "A2A 1.0 REST"),
    _own("tls12_aes256gcm_h1", "TLS 1.2 AES-256-GCM, HTTP/1, SSE", keys=True),
    _own("tls13_chacha20_h1", "TLS 1.3 ChaCha20, HTTP/1, SSE", keys=True),
    _own("h2c_upgrade", "HTTP/1 Upgrade to h2c"),
    _own("ws_sdk_realtime_deflate", "WebSocket, permessage-deflate, openai SDK Realtime"),
    _own("ws_h2_realtime", "WebSocket over HTTP/2 (RFC 8441)"),
    _own("grpc_sdk_h2c", "gRPC, grpcio: four RPC kinds, gzip, status details"),
    _own("grpc_sdk_tls", "gRPC over TLS 1.3 (grpcio's client)", keys=True),
    _own("a2a_v1_grpc", "A2A over gRPC (a2a-sdk)"),
    _own("xai_chat_grpc", "xAI chat over gRPC (xai_sdk)"),
    _own("graphql_strawberry", "GraphQL over HTTP/1 (Strawberry)"),
    _own("pg_psycopg", "PostgreSQL v3 (psycopg 3)"),
    _own("pg_tls", "PostgreSQL v3 over TLS 1.3 after an SSLRequest (psycopg 3)", keys=True),
    _own("mysql_pymysql", "MySQL (PyMySQL, MariaDB)"),
    _own("mysql_connector", "MySQL prepared statements (mysql-connector-python, MariaDB)"),
    _own("redis_py", "Redis RESP (redis-py)"),
    _own("amqp_pika", "AMQP 0-9-1 (pika, Celery, RabbitMQ)"),
    _own("kafka_confluent", "Kafka (confluent-kafka, kafka-python; Tansu)"),
    _own("h3_openai", "HTTP/3 over QUIC v1 (aioquic), SSE", keys=True),
    _own("h3_v2_chacha_keyupdate", "HTTP/3 over QUIC v2: Retry, ChaCha20, key update", keys=True),
    _own(
        "h3_lossy", "HTTP/3 over QUIC v1 with real losses and reordering", keys=True, resends=True
    ),
    _own("h3_push_ws_datagram", "HTTP/3 push, WebSocket over HTTP/3, HTTP datagrams", keys=True),
)
# captures without TCP: the faults that move ACKs before their data have nothing to move
UDP_ONLY = frozenset({"h3_openai", "h3_v2_chacha_keyupdate", "h3_lossy", "h3_push_ws_datagram"})

BY_NAME = {i.name: i for i in INPUTS}

# A larger HTTP/1 keep-alive capture (a few hundred exchanges) made by
# scripts/make_fault_captures.py, so that "unaffected identical >= 99.5%" means something.
KEEPALIVE = Input(
    name="h1_keepalive",
    path=FAULT_DATA / "h1_keepalive.pcap",
    what="HTTP/1 keep-alive, a few hundred replayed agent exchanges",
)
ALL_INPUTS: tuple[Input, ...] = (*INPUTS, KEEPALIVE) if KEEPALIVE.path.exists() else INPUTS
