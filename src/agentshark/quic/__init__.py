"""QUIC, read passively: UDP datagrams -> decrypted frames -> ordered stream bytes.

The stage sits beside ``tls``: its input is :class:`~agentshark.net.segment.UdpDatagram`
values (both directions, in capture order) and a :class:`~agentshark.tls.keylog.KeyLog`;
its output is :mod:`agentshark.quic.events` per connection (stream bytes in order with
their ``FIN``, resets, closes) and diagnostics, plus the handshake facts in a
:class:`~agentshark.tls.info.TlsInfo`.

- :mod:`~agentshark.quic.wire`: variable-length integers and packet headers (RFC 9000 §16,
  §17), versions 1 (RFC 9000) and 2 (RFC 9369).
- :mod:`~agentshark.quic.protection`: Initial secrets from the client's first DCID and
  packet keys from the key log's TLS 1.3 secrets with the QUIC labels (RFC 9001 §5), header
  protection (§5.4), packet-number recovery (RFC 9000 §A.3), Key Update (RFC 9001 §6).
- :mod:`~agentshark.quic.frames`: frames (RFC 9000 §19, RFC 9221 DATAGRAM).
- :mod:`~agentshark.quic.streams`: CRYPTO and STREAM bytes reassembled by offset.
- :mod:`~agentshark.quic.connection`: one connection, both directions.
- :mod:`~agentshark.quic.demux`: datagrams grouped into connections by connection IDs.

Everything here is hand-written over ``cryptography``'s AES, ChaCha20 and AEAD primitives:
the QUIC libraries (aioquic) are endpoints, whose packet code checks and answers as a peer
does and holds state a passive reader cannot have (its own keys, flow control, timers).
"""
