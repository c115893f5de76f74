"""What a TLS connection's handshake said, for reports. Holds no key material."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["TlsInfo", "version_name"]

_VERSIONS = {
    0x0300: "SSL 3.0",
    0x0301: "TLS 1.0",
    0x0302: "TLS 1.1",
    0x0303: "TLS 1.2",
    0x0304: "TLS 1.3",
}


def version_name(version: int) -> str:
    return _VERSIONS.get(version, f"0x{version:04x}")


@dataclass(slots=True, kw_only=True)
class TlsInfo:
    """Facts of one TLS connection, filled in as its records are read.

    ``alpn`` is the protocol the server selected: from the ServerHello in TLS 1.2, from
    EncryptedExtensions in TLS 1.3 (so known only when the server's handshake decrypts).
    ``decrypted`` is True once any record of the connection decrypted; ``records`` counts
    records per direction (0 client -> server, 1 server -> client), decrypted or not.
    ``client_random`` is public (it travels in the clear): it is how a key log is searched.
    ``unknown`` names the facts the capture lost with a hello (``tls.trial``): there, None
    or an empty list says nothing (``sni``: not "no SNI sent"); in JSON only when not empty.
    """

    version: str | None = None
    cipher_suite: str | None = None
    sni: str | None = None
    alpn_offered: list[str] = field(default_factory=list)
    alpn: str | None = None
    client_random: str | None = None
    decrypted: bool = False
    resumed: bool | None = None
    early_data: bool = False  # 0-RTT data was sent and the server accepted it
    hello_retry: bool = False
    key_updates: int = 0
    records: list[int] = field(default_factory=lambda: [0, 0])
    unknown: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "version": self.version,
            "cipher_suite": self.cipher_suite,
            "sni": self.sni,
            "alpn_offered": list(self.alpn_offered),
            "alpn": self.alpn,
            "client_random": self.client_random,
            "decrypted": self.decrypted,
            "resumed": self.resumed,
            "early_data": self.early_data,
            "hello_retry": self.hello_retry,
            "key_updates": self.key_updates,
            "records": list(self.records),
        }
        if self.unknown:
            out["unknown"] = sorted(self.unknown)
        return out
