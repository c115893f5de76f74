"""Every diagnostic the TLS stage reports: its code, severity and words, in one place.

A key holds the code, then ``/variant`` when one code has several wordings. Messages say
what happened, to which direction, and what the user can do. They are
templates filled with counts, sizes, labels and the first 16 hex digits of the client random
(public: it travels in the clear), never with key material.
"""

from __future__ import annotations

from agentshark.errors import Diagnostic, Severity

__all__ = ["CATALOGUE", "diagnostic"]

_ONE_WAY = "the rest of the {who}'s stream is not decrypted"

CATALOGUE: dict[str, tuple[Severity, str]] = {
    "tls.no_keys": (
        "warning",
        "{keylog} has no secret for client random {random}…: this TLS session stays encrypted "
        "(was SSLKEYLOGFILE set before the client started? pass the key log with --keylog){ech}",
    ),
    "tls.no_keys/no_keylog": (
        "warning",
        "no key log was given, so this TLS session (client random {random}…) stays encrypted: "
        "set SSLKEYLOGFILE=keys.log before the client starts and pass --keylog keys.log{ech}",
    ),
    "tls.missing_secret": (
        "warning",
        "the key log has secrets for client random {random}… but no {label}: " + _ONE_WAY,
    ),
    "tls.wrong_secret": (
        "warning",
        "the logged {label} is {size} bytes but {suite} needs {needed}: the key log entry "
        "belongs to another session; " + _ONE_WAY,
    ),
    "tls.decrypt_failed": (
        "warning",
        "a record of the {who}'s stream does not decrypt with the logged secrets (a key log "
        "entry of another session, or a damaged capture): " + _ONE_WAY,
    ),
    "tls.no_handshake": (
        "warning",
        "the capture has no ClientHello for this connection (it starts later): without the "
        "client random no key log entry can be found, so the connection stays encrypted; its "
        "records are counted",
    ),
    "tls.unsupported": (
        "warning",
        "{what} is not decrypted (agentshark decrypts TLS 1.2 and 1.3 with AES-GCM and "
        "ChaCha20-Poly1305); the connection is reported with its handshake and record counts",
    ),
    "tls.gap": (
        "warning",
        "{size} bytes of the {who}'s stream were not captured during the handshake, before "
        "its records could be proven by their keys{what}: its records cannot be found again, "
        "so " + _ONE_WAY,
    ),
    "tls.resynced": (
        "warning",
        "{gap} bytes of the {who}'s stream were not captured: {records} lost "
        "({lost} bytes of ciphertext{searched}), holding {size} bytes of plaintext; "
        "decryption resumed at TCP offset {offset} with record sequence number {seq}{keys}",
    ),
    "tls.gap_unresolved": (
        "warning",
        "{gap} bytes of the {who}'s stream were not captured, and the stream ended {after} "
        "before a record after them decrypted: up to {size} bytes of plaintext are lost",
    ),
    "tls.resync_failed": (
        "warning",
        "{gap} bytes of the {who}'s stream were not captured, and {why} under the sequence "
        "numbers that fit (up to {size} bytes of plaintext lost so far): " + _ONE_WAY,
    ),
    "tls.keys_by_trial": (
        "info",
        "the ClientHello of this connection was not captured: its session in the key log "
        "(client random {random}…, {suite}) was found by trial decryption, a protected "
        "record's tag verifying under its keys",
    ),
    "tls.trial_bound": (
        "warning",
        "the ClientHello of this connection was not captured and {total} sessions of the key "
        "log could be its own: only the newest {limit} were tried",
    ),
    "tls.trial_failed/random": (
        "warning",
        "the ClientHello of this connection was not captured, and the {who}'s first protected "
        "record decrypts under none of the {count} sessions of the key log that fit its "
        "cipher suite: the connection stays encrypted",
    ),
    "tls.trial_failed/suite": (
        "warning",
        "the ServerHello of this connection was not captured, and the {who}'s first "
        "protected record decrypts under none of the {count} keys the logged secrets give "
        "with the suites the ClientHello offered: " + _ONE_WAY,
    ),
    "tls.suite_by_trial": (
        "info",
        "the ServerHello of this connection was not captured: its cipher suite, {suite} "
        "(TLS 1.3), was found by trial decryption among those the ClientHello offered, a "
        "protected record's tag verifying under it",
    ),
    "tls.handshake_cut": (
        "warning",
        "a handshake message of the {who}'s stream was cut by a capture gap: the handshake "
        "messages that follow it in the same records are not read",
    ),
    "tls.finished_unseen": (
        "info",
        "the {who}'s Finished was lost to a capture gap: its records decrypt under its "
        "application traffic keys from here on",
    ),
    "tls.bad_record": (
        "warning",
        "not a TLS stream: {why}; the rest of the {who}'s stream is not read",
    ),
    "tls.truncated_record": (
        "info",
        "the {who}'s stream ends inside a record ({size} bytes of it were captured)",
    ),
    "tls.malformed_handshake": (
        "warning",
        "{why}: this connection cannot be followed further and stays encrypted",
    ),
    "tls.malformed_alert": ("warning", "an alert record holds {size} bytes, not 2"),
    "tls.unexpected_message": (
        "warning",
        "a {message} in the {who}'s stream: the capture may have client and server swapped; "
        "the connection stays encrypted",
    ),
    "tls.unexpected_record": ("warning", "{what} in the {who}'s stream"),
    "tls.renegotiation": (
        "warning",
        "the session was renegotiated: its new keys are not followed, so " + _ONE_WAY,
    ),
    "tls.early_data_rejected": (
        "info",
        "the server did not accept the client's 0-RTT data: {count} records of early data "
        "were never read by the server and are not reported",
    ),
    "tls.early_data_skipped": (
        "warning",
        "{count} records of 0-RTT data could not be decrypted{why}; {fate}",
    ),
    "tls.early_data_unconfirmed": (
        "info",
        "{count} records of 0-RTT data are reported although the capture does not show "
        "whether the server accepted them",
    ),
    "tls.early_data_overflow": (
        "warning",
        "more than {size} bytes of 0-RTT data came before the ServerHello: the client's "
        "stream is not decrypted",
    ),
}


def diagnostic(
    key: str, location: str, *, severity: Severity | None = None, **fields: object
) -> Diagnostic:
    """The catalogue's diagnostic ``key`` with its template filled from ``fields``."""
    default, template = CATALOGUE[key]
    return Diagnostic(
        code=key.partition("/")[0],
        location=location,
        message=template.format(**fields),
        severity=severity or default,
    )
