"""Synthetic TLS sessions: handshake messages built by hand, records sealed with ``cryptography``.

The sealing side is written here from the RFCs, apart from the decrypting side: TLS 1.3
records (RFC 8446 §5.2: nonce = IV XOR seq, additional data = the record header, inner
plaintext = content || type || zeros), TLS 1.2 AES-GCM (RFC 5288: 4-byte salt + 8-byte
explicit nonce carried in the record) and ChaCha20-Poly1305 (RFC 7905). Only the key
derivation functions are shared, and those are pinned by the known-answer tests of
RFC 8448 and the TLS 1.2 PRF vectors.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from cryptography.hazmat.primitives.ciphers.aead import AESGCM, ChaCha20Poly1305

from agentshark.tls.handshake import HELLO_RETRY_RANDOM
from agentshark.tls.keyschedule import SUITES, next_traffic_secret, prf, traffic_key_iv

Flight = tuple[int, bytes]  # (direction, bytes on the wire)


def u8(n: int) -> bytes:
    return n.to_bytes(1, "big")


def u16(n: int) -> bytes:
    return n.to_bytes(2, "big")


def vec8(data: bytes) -> bytes:
    return u8(len(data)) + data


def vec16(data: bytes) -> bytes:
    return u16(len(data)) + data


def record(ctype: int, payload: bytes, version: bytes = b"\x03\x03") -> bytes:
    return bytes((ctype,)) + version + u16(len(payload)) + payload


def records(ctype: int, payload: bytes, size: int = 700) -> bytes:
    """``payload`` cut into records of at most ``size`` bytes (messages span records)."""
    return b"".join(record(ctype, payload[i : i + size]) for i in range(0, len(payload), size))


def message(msg_type: int, body: bytes) -> bytes:
    return bytes((msg_type,)) + len(body).to_bytes(3, "big") + body


def extension(ext_type: int, body: bytes) -> bytes:
    return u16(ext_type) + vec16(body)


CCS = record(20, b"\x01")


def client_hello(
    client_random: bytes,
    *,
    suites: tuple[int, ...] = (0x1301, 0x1302, 0x1303, 0xC02F, 0xC030, 0xCCA8),
    session_id: bytes = b"",
    sni: str | None = "api.example.test",
    alpn: tuple[str, ...] = ("h2", "http/1.1"),
    versions: tuple[int, ...] | None = (0x0304, 0x0303),
    early_data: bool = False,
    psk: bool = False,
) -> bytes:
    ext = b""
    if sni is not None:
        ext += extension(0, vec16(b"\x00" + vec16(sni.encode())))
    if alpn:
        ext += extension(16, vec16(b"".join(vec8(p.encode()) for p in alpn)))
    if versions is not None:
        ext += extension(43, vec8(b"".join(u16(v) for v in versions)))
    if early_data:
        ext += extension(42, b"")
    if psk:  # pre_shared_key comes last; its contents do not matter to a reader
        ext += extension(41, vec16(vec16(b"ticket") + b"\x00\x00\x00\x00") + vec16(vec8(bytes(32))))
    body = (
        b"\x03\x03"
        + client_random
        + vec8(session_id)
        + vec16(b"".join(u16(s) for s in suites))
        + vec8(b"\x00")
        + vec16(ext)
    )
    return message(1, body)


def server_hello(
    server_random: bytes,
    suite: int,
    *,
    version: int = 0x0304,
    session_id: bytes = b"",
    alpn: str | None = None,
    psk: bool = False,
) -> bytes:
    ext = b""
    if version == 0x0304:
        ext += extension(43, u16(0x0304))
    if alpn is not None:
        ext += extension(16, vec16(vec8(alpn.encode())))
    if psk:
        ext += extension(41, u16(0))
    body = b"\x03\x03" + server_random + vec8(session_id) + u16(suite) + b"\x00" + vec16(ext)
    return message(2, body)


def encrypted_extensions(alpn: str | None, *, early_data: bool = False) -> bytes:
    ext = extension(16, vec16(vec8(alpn.encode()))) if alpn else b""
    if early_data:
        ext += extension(42, b"")
    return message(8, vec16(ext))


def opaque_message(msg_type: int, size: int, rng: random.Random) -> bytes:
    """A Certificate, CertificateVerify... of ``size`` bytes that nobody parses."""
    return message(msg_type, rng.randbytes(size))


class Sealer13:
    """Encrypts one direction's TLS 1.3 records (RFC 8446 §5.2)."""

    def __init__(self, suite: int, secret: bytes) -> None:
        self.suite = SUITES[suite]
        self.secret = secret
        self._keys()

    def _keys(self) -> None:
        key, iv = traffic_key_iv(self.secret, self.suite)
        self.aead = ChaCha20Poly1305(key) if "CHACHA" in self.suite.name else AESGCM(key)
        self.iv = iv
        self.seq = 0

    def update(self) -> None:
        self.secret = next_traffic_secret(self.secret, self.suite)
        self._keys()

    def seal(self, ctype: int, content: bytes, padding: int = 0) -> bytes:
        inner = content + bytes((ctype,)) + bytes(padding)
        header = b"\x17\x03\x03" + u16(len(inner) + 16)
        nonce = bytes(a ^ b for a, b in zip(self.iv, self.seq.to_bytes(12, "big"), strict=True))
        self.seq += 1
        return header + self.aead.encrypt(nonce, inner, header)


class Sealer12:
    """Encrypts one direction's TLS 1.2 AEAD records (RFC 5288 §3, RFC 7905 §2)."""

    def __init__(self, suite: int, key: bytes, iv: bytes) -> None:
        self.chacha = "CHACHA" in SUITES[suite].name
        self.aead = ChaCha20Poly1305(key) if self.chacha else AESGCM(key)
        self.iv = iv
        self.seq = 0

    def seal(self, ctype: int, content: bytes) -> bytes:
        seq = self.seq.to_bytes(8, "big")
        self.seq += 1
        aad = seq + bytes((ctype,)) + b"\x03\x03" + u16(len(content))
        if self.chacha:
            nonce = bytes(a ^ b for a, b in zip(self.iv, bytes(4) + seq, strict=True))
            return record(ctype, self.aead.encrypt(nonce, content, aad))
        explicit = seq  # any unique 8 bytes; implementations use the sequence number
        return record(ctype, explicit + self.aead.encrypt(self.iv + explicit, content, aad))


@dataclass
class Session:
    """A synthetic session: what went on the wire, its key log, and what it carried."""

    flights: list[Flight] = field(default_factory=list)
    keylog: bytes = b""
    plaintext: tuple[bytes, bytes] = (b"", b"")
    client_random: bytes = b""

    def send(self, direction: int, data: bytes) -> None:
        self.flights.append((direction, data))


REQUEST = (
    b"POST /v1/chat/completions HTTP/1.1\r\nhost: api.example.test\r\ncontent-length: 2\r\n\r\n{}"
)
RESPONSE = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\ndata: {}\r\n\r\n"


def keylog_line(label: str, client_random: bytes, secret: bytes) -> bytes:
    return f"{label} {client_random.hex()} {secret.hex()}\n".encode()


def tls13_session(
    suite: int = 0x1301,
    *,
    seed: int = 1,
    hello_retry: bool = False,
    early: str | None = None,  # None, "accepted" or "rejected"
    early_logged: bool = True,
    key_update: bool = False,
    alpn: str | None = "h2",
    padding: int = 0,
) -> Session:
    rng = random.Random(seed)
    hash_len = SUITES[suite].hash_length
    crand, srand = rng.randbytes(32), rng.randbytes(32)
    secrets = {
        name: rng.randbytes(hash_len)
        for name in (
            "CLIENT_EARLY_TRAFFIC_SECRET",
            "CLIENT_HANDSHAKE_TRAFFIC_SECRET",
            "SERVER_HANDSHAKE_TRAFFIC_SECRET",
            "CLIENT_TRAFFIC_SECRET_0",
            "SERVER_TRAFFIC_SECRET_0",
            "EXPORTER_SECRET",
        )
    }
    s = Session(client_random=crand)
    s.keylog = b"# synthetic\n" + b"".join(
        keylog_line(label, crand, secret)
        for label, secret in secrets.items()
        if early_logged or label != "CLIENT_EARLY_TRAFFIC_SECRET"
    )
    client_plain, server_plain = b"", b""
    if hello_retry:
        s.send(0, record(22, client_hello(crand), b"\x03\x01"))
        s.send(1, record(22, server_hello(HELLO_RETRY_RANDOM, suite)) + CCS)
        s.send(0, CCS + record(22, client_hello(crand)))
    else:
        s.send(
            0,
            record(
                22,
                client_hello(crand, early_data=early is not None, psk=early is not None),
                b"\x03\x01",
            ),
        )
    early_sealer = Sealer13(suite, secrets["CLIENT_EARLY_TRAFFIC_SECRET"])
    if early is not None:
        s.send(0, CCS + early_sealer.seal(23, REQUEST[:40]) + early_sealer.seal(23, REQUEST[40:]))
        if early == "accepted":
            client_plain += REQUEST
    shs = Sealer13(suite, secrets["SERVER_HANDSHAKE_TRAFFIC_SECRET"])
    chs = Sealer13(suite, secrets["CLIENT_HANDSHAKE_TRAFFIC_SECRET"])
    sap = Sealer13(suite, secrets["SERVER_TRAFFIC_SECRET_0"])
    cap = Sealer13(suite, secrets["CLIENT_TRAFFIC_SECRET_0"])
    flight = (
        encrypted_extensions(alpn, early_data=early == "accepted")
        + opaque_message(11, 2500, rng)
        + opaque_message(15, 260, rng)
        + message(20, rng.randbytes(hash_len))
    )
    # The server's flight in records of 1000 bytes: the Certificate spans three of them.
    sealed = b"".join(
        shs.seal(22, flight[i : i + 1000], padding) for i in range(0, len(flight), 1000)
    )
    s.send(1, record(22, server_hello(srand, suite, psk=early is not None)) + CCS + sealed)
    # 0.5-RTT data: the server may send before the client's Finished.
    s.send(1, sap.seal(23, RESPONSE[:20], padding))
    server_plain += RESPONSE[:20]
    if early == "accepted":
        s.send(0, early_sealer.seal(22, message(5, b"")))
    s.send(
        0,
        (b"" if early is not None or hello_retry else CCS)
        + chs.seal(22, message(20, rng.randbytes(hash_len))),
    )
    s.send(1, sap.seal(22, opaque_message(4, 200, rng)) + sap.seal(22, opaque_message(4, 200, rng)))
    if early != "accepted":
        s.send(0, cap.seal(23, REQUEST, padding))
        client_plain += REQUEST
    s.send(1, sap.seal(23, RESPONSE[20:], padding))
    server_plain += RESPONSE[20:]
    if key_update:
        s.send(0, cap.seal(22, message(24, b"\x01")))
        cap.update()
        s.send(0, cap.seal(23, b"after the client's key update"))
        client_plain += b"after the client's key update"
        s.send(1, sap.seal(22, message(24, b"\x00")))
        sap.update()
        s.send(1, sap.seal(23, b"after the server's key update"))
        server_plain += b"after the server's key update"
    s.send(0, cap.seal(21, b"\x01\x00"))
    s.send(1, sap.seal(21, b"\x01\x00"))
    s.plaintext = (client_plain, server_plain)
    return s


def tls12_session(
    suite: int = 0xC02F,
    *,
    seed: int = 2,
    resumed: bool = False,
    alpn: str | None = "http/1.1",
) -> Session:
    rng = random.Random(seed)
    crand, srand, master = rng.randbytes(32), rng.randbytes(32), rng.randbytes(48)
    session_id = rng.randbytes(32)
    info = SUITES[suite]
    # RFC 5246 §6.3: client_write_MAC_key, server_write_MAC_key (none for AEAD suites),
    # client_write_key, server_write_key, client_write_IV, server_write_IV, in that order.
    k, i = info.key_length, 12 if info.aead == "CHACHA20-POLY1305" else 4
    block = prf(master, b"key expansion", srand + crand, 2 * k + 2 * i, info.hash)
    client = Sealer12(suite, block[:k], block[2 * k : 2 * k + i])
    server = Sealer12(suite, block[k : 2 * k], block[2 * k + i : 2 * k + 2 * i])
    s = Session(client_random=crand, keylog=keylog_line("CLIENT_RANDOM", crand, master))
    hello = client_hello(crand, session_id=session_id if resumed else b"", versions=None)
    s.send(0, record(22, hello, b"\x03\x01"))
    sh = server_hello(srand, suite, version=0x0303, session_id=session_id, alpn=alpn)
    if resumed:  # RFC 5246 §7.3: the abbreviated handshake, server first
        s.send(1, record(22, sh) + CCS + server.seal(22, message(20, rng.randbytes(12))))
        s.send(0, CCS + client.seal(22, message(20, rng.randbytes(12))))
    else:
        rest = opaque_message(11, 2000, rng) + opaque_message(12, 300, rng) + message(14, b"")
        s.send(1, records(22, sh + rest))
        s.send(
            0,
            record(22, opaque_message(16, 66, rng))
            + CCS
            + client.seal(22, message(20, rng.randbytes(12))),
        )
        s.send(
            1,
            record(22, opaque_message(4, 180, rng))
            + CCS
            + server.seal(22, message(20, rng.randbytes(12))),
        )
    s.send(0, client.seal(23, REQUEST[:30]) + client.seal(23, REQUEST[30:]))
    s.send(1, server.seal(23, RESPONSE))
    s.send(0, client.seal(21, b"\x01\x00"))
    s.plaintext = (REQUEST, RESPONSE)
    return s
