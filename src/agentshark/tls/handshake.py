"""Handshake messages: record fragments -> messages -> the hello fields a reader needs.

Handshake messages (RFC 8446 §4, RFC 5246 §7.4) are ``HandshakeType msg_type (1) | uint24
length | body``; a message may span records and a record may hold several (RFC 8446 §5.1).
:class:`HandshakeReader` reassembles them, keeping the bodies of the messages we parse and
skipping the others (certificates can be large) by their length.

The parsers read the ClientHello (random, session id, SNI, ALPN offered, supported
versions, early_data, ECH), the ServerHello (random, cipher suite, negotiated version,
HelloRetryRequest, ALPN in TLS 1.2, pre_shared_key) and EncryptedExtensions (ALPN and
early_data in TLS 1.3). They are hand-written: no maintained library parses TLS messages
without being an endpoint. A message that does not parse raises :class:`HandshakeError`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

__all__ = [
    "CLIENT_HELLO",
    "ENCRYPTED_EXTENSIONS",
    "END_OF_EARLY_DATA",
    "FINISHED",
    "HELLO_RETRY_RANDOM",
    "KEY_UPDATE",
    "NEW_SESSION_TICKET",
    "SERVER_HELLO",
    "SERVER_HELLO_DONE",
    "ClientHello",
    "EncryptedExtensions",
    "HandshakeError",
    "HandshakeReader",
    "ServerHello",
    "parse_client_hello",
    "parse_encrypted_extensions",
    "parse_key_update",
    "parse_server_hello",
]

HELLO_REQUEST, CLIENT_HELLO, SERVER_HELLO, NEW_SESSION_TICKET, END_OF_EARLY_DATA = 0, 1, 2, 4, 5
ENCRYPTED_EXTENSIONS, SERVER_HELLO_DONE, FINISHED, KEY_UPDATE = 8, 14, 20, 24
_KEPT = frozenset({CLIENT_HELLO, SERVER_HELLO, ENCRYPTED_EXTENSIONS, KEY_UPDATE})
MAX_MESSAGE = 1 << 20  # a kept message larger than this is not a real hello

# RFC 8446 §4.1.3: a HelloRetryRequest is a ServerHello whose random is SHA-256 of the
# string "HelloRetryRequest".
HELLO_RETRY_RANDOM = hashlib.sha256(b"HelloRetryRequest").digest()

_SERVER_NAME, _ALPN, _PRE_SHARED_KEY, _EARLY_DATA, _SUPPORTED_VERSIONS = 0, 16, 41, 42, 43
_ENCRYPTED_CLIENT_HELLO = 0xFE0D  # draft-ietf-tls-esni


class HandshakeError(ValueError):
    """A handshake message that does not parse; the message says what is wrong."""


class HandshakeReader:
    """Messages out of the handshake fragments of one direction.

    ``feed`` returns ``(msg_type, body)`` for each message the fragment completed; ``body``
    is empty for types not in ``_KEPT``, whose bytes are skipped without being held.
    """

    __slots__ = ("_buf", "_skip", "_skip_type")

    def __init__(self) -> None:
        self._buf = bytearray()
        self._skip = 0  # bytes of a skipped message's body still to come
        self._skip_type = -1

    @property
    def partial(self) -> bool:
        """True when a message has started and not ended."""
        return bool(self._buf) or self._skip > 0

    def feed(self, fragment: bytes) -> list[tuple[int, bytes]]:
        out: list[tuple[int, bytes]] = []
        view = memoryview(fragment)
        if self._skip:
            taken = min(self._skip, len(view))
            self._skip -= taken
            view = view[taken:]
            if self._skip:
                return out
            out.append((self._skip_type, b""))
        buf = self._buf
        buf += view
        pos = 0
        while len(buf) - pos >= 4:
            msg_type = buf[pos]
            length = int.from_bytes(buf[pos + 1 : pos + 4], "big")
            if msg_type not in _KEPT:
                available = len(buf) - pos - 4
                if available < length:
                    self._skip, self._skip_type = length - available, msg_type
                    pos = len(buf)
                    break
                out.append((msg_type, b""))
                pos += 4 + length
                continue
            if length > MAX_MESSAGE:
                raise HandshakeError(f"a handshake message of type {msg_type} is {length} bytes")
            if len(buf) - pos - 4 < length:
                break
            out.append((msg_type, bytes(buf[pos + 4 : pos + 4 + length])))
            pos += 4 + length
        del buf[:pos]
        return out


class _Cursor:
    """Reads big-endian integers and length-prefixed vectors; raises HandshakeError."""

    __slots__ = ("data", "pos", "what")

    def __init__(self, data: bytes, what: str) -> None:
        self.data = data
        self.pos = 0
        self.what = what

    def take(self, n: int) -> bytes:
        end = self.pos + n
        if end > len(self.data):
            raise HandshakeError(
                f"{self.what} ends early (needs {end} bytes, has {len(self.data)})"
            )
        chunk = self.data[self.pos : end]
        self.pos = end
        return chunk

    def uint(self, n: int) -> int:
        return int.from_bytes(self.take(n), "big")

    def vector(self, length_bytes: int) -> bytes:
        return self.take(self.uint(length_bytes))

    @property
    def left(self) -> int:
        return len(self.data) - self.pos


def _extensions(c: _Cursor) -> dict[int, bytes]:
    """The extensions block, if any (it is optional before TLS 1.3, RFC 5246 §7.4.1.2)."""
    if not c.left:
        return {}
    block = _Cursor(c.vector(2), c.what + " extensions")
    found: dict[int, bytes] = {}
    while block.left:
        ext_type = block.uint(2)
        found.setdefault(ext_type, block.vector(2))
    return found


def _names(data: bytes, what: str) -> tuple[str, ...]:
    """A ProtocolNameList (RFC 7301 §3.1)."""
    c = _Cursor(data, what)
    listed = _Cursor(c.vector(2), what)
    names: list[str] = []
    while listed.left:
        names.append(listed.vector(1).decode("ascii", "replace"))
    return tuple(names)


def _server_name(data: bytes) -> str | None:
    """The host_name of a server_name extension (RFC 6066 §3)."""
    listed = _Cursor(_Cursor(data, "server_name").vector(2), "server_name")
    while listed.left:
        name_type = listed.uint(1)
        name = listed.vector(2)
        if name_type == 0:
            return name.decode("ascii", "replace")
    return None


@dataclass(frozen=True, slots=True)
class ClientHello:
    random: bytes
    session_id: bytes
    cipher_suites: tuple[int, ...]
    server_name: str | None
    alpn: tuple[str, ...]
    versions: tuple[int, ...]  # supported_versions, or (legacy_version,)
    early_data: bool  # the client sends 0-RTT data (RFC 8446 §4.2.10)
    psk: bool
    ech: bool  # the encrypted_client_hello extension: the keys are the inner hello's


def parse_client_hello(body: bytes) -> ClientHello:
    """RFC 8446 §4.1.2 (and RFC 5246 §7.4.1.2, of which it is a superset)."""
    c = _Cursor(body, "ClientHello")
    legacy_version = c.uint(2)
    random = c.take(32)
    session_id = c.vector(1)
    suites_raw = c.vector(2)
    suites = tuple(
        int.from_bytes(suites_raw[i : i + 2], "big") for i in range(0, len(suites_raw) - 1, 2)
    )
    c.vector(1)  # legacy_compression_methods
    ext = _extensions(c)
    versions: tuple[int, ...] = (legacy_version,)
    if _SUPPORTED_VERSIONS in ext:
        raw = _Cursor(ext[_SUPPORTED_VERSIONS], "supported_versions").vector(1)
        versions = tuple(int.from_bytes(raw[i : i + 2], "big") for i in range(0, len(raw) - 1, 2))
    return ClientHello(
        random=random,
        session_id=session_id,
        cipher_suites=suites,
        server_name=_server_name(ext[_SERVER_NAME]) if ext.get(_SERVER_NAME) else None,
        alpn=_names(ext[_ALPN], "ALPN") if _ALPN in ext else (),
        versions=versions,
        early_data=_EARLY_DATA in ext,
        psk=_PRE_SHARED_KEY in ext,
        ech=_ENCRYPTED_CLIENT_HELLO in ext,
    )


@dataclass(frozen=True, slots=True)
class ServerHello:
    random: bytes
    session_id: bytes
    cipher_suite: int
    version: int  # negotiated: supported_versions (RFC 8446 §4.2.1), else legacy_version
    retry: bool  # a HelloRetryRequest (RFC 8446 §4.1.4)
    alpn: str | None  # TLS 1.2 only; TLS 1.3 sends it in EncryptedExtensions
    psk: bool  # TLS 1.3: the server accepted a pre-shared key (resumption)


def parse_server_hello(body: bytes) -> ServerHello:
    """RFC 8446 §4.1.3 (and RFC 5246 §7.4.1.3)."""
    c = _Cursor(body, "ServerHello")
    version = c.uint(2)
    random = c.take(32)
    session_id = c.vector(1)
    suite = c.uint(2)
    c.uint(1)  # legacy_compression_method
    ext = _extensions(c)
    if _SUPPORTED_VERSIONS in ext:
        version = _Cursor(ext[_SUPPORTED_VERSIONS], "supported_versions").uint(2)
    alpn = None
    if _ALPN in ext:
        names = _names(ext[_ALPN], "ALPN")
        alpn = names[0] if names else None
    return ServerHello(
        random=random,
        session_id=session_id,
        cipher_suite=suite,
        version=version,
        retry=random == HELLO_RETRY_RANDOM,
        alpn=alpn,
        psk=_PRE_SHARED_KEY in ext,
    )


@dataclass(frozen=True, slots=True)
class EncryptedExtensions:
    alpn: str | None
    early_data: bool  # the server accepted 0-RTT data (RFC 8446 §4.2.10)


def parse_encrypted_extensions(body: bytes) -> EncryptedExtensions:
    """RFC 8446 §4.3.1."""
    c = _Cursor(body, "EncryptedExtensions")
    if c.left < 2:
        raise HandshakeError("EncryptedExtensions has no extensions block")
    ext = _extensions(c)
    alpn = None
    if _ALPN in ext:
        names = _names(ext[_ALPN], "ALPN")
        alpn = names[0] if names else None
    return EncryptedExtensions(alpn=alpn, early_data=_EARLY_DATA in ext)


def parse_key_update(body: bytes) -> bool:
    """RFC 8446 §4.6.3: whether the sender asks the peer to update its keys too."""
    if len(body) != 1 or body[0] > 1:
        raise HandshakeError("KeyUpdate is not one byte of 0 or 1")
    return body[0] == 1
