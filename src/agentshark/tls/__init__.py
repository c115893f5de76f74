"""TLS: the bytes of a TCP connection + a key log -> plaintext streams, alerts, TlsInfo.

Input: the in-order bytes of each direction of one TCP connection (``net``'s StreamData,
StreamGap and StreamEnded, given as ``feed``/``gap``/``end`` calls), and a :class:`KeyLog`
filled from SSLKEYLOGFILE text (RFC 9850) read by ``sources.keylog`` or carried in pcapng
Decryption Secrets Blocks.

Output: :class:`TlsPlaintext` (decrypted application data, per direction, in order),
:class:`TlsGap` (plaintext lost to a capture gap), :class:`TlsAlert` and ``Diagnostic``
events, and a :class:`TlsInfo` per connection
(version, cipher suite, SNI, ALPN offered and selected, resumption, 0-RTT, HelloRetryRequest,
KeyUpdates, record counts). Key material never leaves this package.

Modules, in the order data flows::

    records       bytes -> records; AEAD record protection (TLS 1.2 GCM/ChaCha20, TLS 1.3)
    handshake     handshake records -> messages -> ClientHello, ServerHello, EncryptedExtensions
    keylog        key log text -> secrets by client random
    keyschedule   secrets -> traffic keys and IVs (HKDF-Expand-Label, the TLS 1.2 PRF)
    direction     the state of one direction: mode, framing, current keys
    early         0-RTT data held until the server is known to have read it
    resync        after a gap: the next record boundary and sequence number, proven by the tag
    session       TlsConnection: the state machine that ties them together, with its parts
                  lost (gaps) and zero_rtt (early data) as mixins typed by host
    events, info, diagnostics   what comes out: events, TlsInfo, the diagnostic catalogue
"""

from agentshark.tls.events import TlsAlert, TlsEvent, TlsGap, TlsPlaintext
from agentshark.tls.info import TlsInfo
from agentshark.tls.keylog import KeyLog
from agentshark.tls.session import TlsConnection

__all__ = [
    "KeyLog",
    "TlsAlert",
    "TlsConnection",
    "TlsEvent",
    "TlsGap",
    "TlsInfo",
    "TlsPlaintext",
]
