"""The TLS record layer: one direction's bytes -> records -> decrypted record contents.

Framing (RFC 8446 §5.1, RFC 5246 §6.2.1)::

    ContentType type (1) | ProtocolVersion legacy_record_version (2) | uint16 length | fragment

:class:`RecordReader` cuts a byte stream into whole records, each returned with its 5-byte
header. A record may span TCP segments and a segment may hold many records; only a partial
record is buffered. A header that cannot be a TLS record (unknown content type, a version
whose major byte is not 3, a length above 2^14 + 2048, RFC 5246 §6.2.3) stops the reader:
without a trusted length there is no next record to find.

Protection (the ``open`` methods): AEAD only.

- TLS 1.3 (RFC 8446 §5.2, §5.3): the nonce is the write IV XOR the 64-bit record sequence
  number, the additional data is the record header, and the plaintext is
  ``content || ContentType type || zeros``.
- TLS 1.2 AES-GCM (RFC 5288 §3): nonce = 4-byte salt (the write IV) + the 8-byte explicit
  nonce that starts each record; additional data = ``seq_num(8) + type + version +
  length`` of the plaintext (RFC 5246 §6.2.3.3).
- TLS 1.2 ChaCha20-Poly1305 (RFC 7905 §2): nonce = the 12-byte write IV XOR the sequence
  number; the additional data as for GCM.

Sequence numbers advance only when a record decrypts, so a failed ``open`` can be tried
again with other keys (0-RTT trial decryption, RFC 8446 §4.2.10).
"""

from __future__ import annotations

from cryptography.exceptions import InvalidTag

from agentshark.tls.keyschedule import CipherSuite, new_aead, traffic_key_iv

__all__ = [
    "ALERT",
    "APPLICATION_DATA",
    "CHANGE_CIPHER_SPEC",
    "HANDSHAKE",
    "HEARTBEAT",
    "MAX_CIPHERTEXT",
    "DecryptError",
    "RecordReader",
    "Tls12Protection",
    "Tls13Protection",
]

CHANGE_CIPHER_SPEC, ALERT, HANDSHAKE, APPLICATION_DATA, HEARTBEAT = 20, 21, 22, 23, 24
MAX_CIPHERTEXT = (1 << 14) + 2048  # TLSCiphertext.length limit of RFC 5246 §6.2.3
_TAG = 16  # every AEAD we decrypt has a 16-byte tag


class DecryptError(Exception):
    """A record did not decrypt: wrong keys, a damaged record, or no content type."""


class RecordReader:
    """Whole records out of one direction's byte stream.

    ``feed`` returns the records the data completed, each as ``bytes`` holding its header.
    When the stream cannot be a TLS stream, ``error`` says why (in words that quote no
    content) and ``feed`` returns nothing more. ``buffered`` is the size of the partial
    record waiting for more bytes.
    """

    __slots__ = ("_buf", "_need", "error")

    def __init__(self) -> None:
        self._buf = bytearray()
        self._need = 5  # bytes the buffer must hold before it is worth parsing again
        self.error: str | None = None

    @property
    def buffered(self) -> int:
        return len(self._buf)

    def stop(self) -> None:
        """Read nothing more (after a gap, or at the end of the stream)."""
        self._buf.clear()
        if self.error is None:
            self.error = "reading stopped"

    def feed(self, data: bytes) -> list[bytes]:
        if self.error is not None:
            return []
        buf = self._buf
        if buf:
            buf += data
            if len(buf) < self._need:
                return []
            data = bytes(buf)
            buf.clear()
        n = len(data)
        if (
            n > 5
            and data[1] == 3
            and 20 <= data[0] <= 24
            and (data[3] << 8 | data[4]) + 5 == n <= MAX_CIPHERTEXT + 5
        ):
            return [data]  # the usual case: one record, one segment, no copy
        out: list[bytes] = []
        pos = 0
        while n - pos >= 5:
            length = data[pos + 3] << 8 | data[pos + 4]
            if not 20 <= data[pos] <= 24 or data[pos + 1] != 3 or length > MAX_CIPHERTEXT:
                self.error = _describe(data[pos], data[pos + 1], length)
                return out
            end = pos + 5 + length
            if end > n:
                self._need = 5 + length
                break
            out.append(data[pos:end])
            pos = end
        else:
            self._need = 5
        if pos < n:
            buf += data[pos:] if pos else data
        return out


def _describe(content_type: int, major: int, length: int) -> str:
    if not 20 <= content_type <= 24:
        return f"a record header has content type {content_type}, not one of TLS's 20-24"
    if major != 3:
        return f"a record header has protocol version major {major}, not 3"
    return f"a record is {length} bytes long, above the limit of {MAX_CIPHERTEXT}"


class Tls13Protection:
    """Decrypts one direction's records under one TLS 1.3 traffic secret (RFC 8446 §5.2)."""

    __slots__ = ("_decrypt", "_iv", "secret", "seq", "suite")

    def __init__(self, suite: CipherSuite, secret: bytes) -> None:
        key, iv = traffic_key_iv(secret, suite)
        self.suite = suite
        self.secret = secret  # kept for KeyUpdate; never shown
        self._decrypt = new_aead(suite, key).decrypt
        self._iv = int.from_bytes(iv, "big")
        self.seq = 0

    def __repr__(self) -> str:
        return f"Tls13Protection({self.suite.name}, seq={self.seq})"

    def open(self, record: bytes) -> tuple[int, bytes]:
        """``(content type, content)`` of an ``application_data`` record, padding removed."""
        seq = self.seq
        try:
            inner = self._decrypt((self._iv ^ seq).to_bytes(12, "big"), record[5:], record[:5])
        except (InvalidTag, ValueError, OverflowError):
            raise DecryptError("the record does not decrypt") from None
        self.seq = seq + 1
        ctype = inner[-1] if inner else 0  # one record per call on the hot path: index once
        if ctype:
            return ctype, inner[:-1]
        inner = inner.rstrip(b"\0")  # RFC 8446 §5.4: zeros after the content type
        if not inner:
            raise DecryptError("a decrypted record holds only padding, no content type")
        return inner[-1], inner[:-1]


class Tls12Protection:
    """Decrypts one direction's records of a TLS 1.2 AEAD session (RFC 5288, RFC 7905)."""

    __slots__ = ("_chacha", "_decrypt", "_iv", "_salt", "seq", "suite")

    def __init__(self, suite: CipherSuite, key: bytes, iv: bytes) -> None:
        self.suite = suite
        self._decrypt = new_aead(suite, key).decrypt
        self._chacha = suite.aead == "CHACHA20-POLY1305"
        self._salt = iv
        self._iv = int.from_bytes(iv, "big")
        self.seq = 0

    def __repr__(self) -> str:
        return f"Tls12Protection({self.suite.name}, seq={self.seq})"

    def open(self, record: bytes) -> tuple[int, bytes]:
        """``(content type, content)``: the type is the record header's own."""
        seq = self.seq
        if self._chacha:
            size = len(record) - 5 - _TAG
            nonce = (self._iv ^ seq).to_bytes(12, "big")
            body = record[5:]
        else:
            size = len(record) - 13 - _TAG
            nonce = self._salt + record[5:13]
            body = record[13:]
        if size < 0:
            raise DecryptError("the record is too short to hold a nonce and tag")
        aad = seq.to_bytes(8, "big") + record[:3] + size.to_bytes(2, "big")
        try:
            content = self._decrypt(nonce, body, aad)
        except (InvalidTag, ValueError, OverflowError):
            raise DecryptError("the record does not decrypt") from None
        self.seq = seq + 1
        return record[0], content
