"""Which keys open a connection's packets: per packet-number space and direction.

Initial keys come from the client's first DCID (the Retry's SCID after a Retry, RFC 9000
§17.2.5.2); the others from the key log's secrets for the ClientHello's random, with the suite
of the ServerHello. When the ServerHello was not captured (or for 0-RTT, which comes before it)
the suites a secret of that length can belong to are tried, and the one whose tag verifies is
kept. 1-RTT keys follow Key Updates (RFC 9001 §6): a packet whose key phase bit differs from
the current phase is tried with the next keys, then with the previous ones (a late packet of
the phase before).
"""

from __future__ import annotations

from agentshark.quic.protection import INITIAL_SUITE, PacketKeys, initial_secrets
from agentshark.tls.keylog import KeyLog
from agentshark.tls.keyschedule import SUITES, CipherSuite

__all__ = ["APP", "HANDSHAKE", "INITIAL", "SECRET_LABELS", "KeyRing"]

INITIAL, HANDSHAKE, APP = 0, 1, 2
SECRET_LABELS = {
    (HANDSHAKE, 0): "CLIENT_HANDSHAKE_TRAFFIC_SECRET",
    (HANDSHAKE, 1): "SERVER_HANDSHAKE_TRAFFIC_SECRET",
    (APP, 0): "CLIENT_TRAFFIC_SECRET_0",
    (APP, 1): "SERVER_TRAFFIC_SECRET_0",
}
EARLY_LABEL = "CLIENT_EARLY_TRAFFIC_SECRET"
# TLS 1.3 suites by secret length (the hash's): what to try when no ServerHello says which.
_BY_LENGTH = {32: (SUITES[0x1301], SUITES[0x1303]), 48: (SUITES[0x1302],)}


class _Phases:
    """The 1-RTT keys of one direction: the current phase, and the one before."""

    __slots__ = ("bit", "current", "previous")

    def __init__(self, keys: PacketKeys) -> None:
        self.bit = 0
        self.current = keys
        self.previous: PacketKeys | None = None


class KeyRing:
    """The keys of one connection; ``suite`` is set from the ServerHello when it is read."""

    __slots__ = (
        "_app",
        "_early",
        "_handshake",
        "_initial",
        "client_random",
        "key_updates",
        "keylog",
        "odcid",
        "suite",
    )

    def __init__(self, keylog: KeyLog, odcid: bytes) -> None:
        self.keylog = keylog
        self.odcid = odcid
        self.client_random: bytes | None = None
        self.suite: CipherSuite | None = None
        self.key_updates = [0, 0]
        self._initial: dict[int, tuple[PacketKeys, PacketKeys]] = {}
        self._handshake: list[PacketKeys | None] = [None, None]
        self._app: list[_Phases | None] = [None, None]
        self._early: PacketKeys | None = None

    def retry(self, scid: bytes) -> None:
        """A Retry: the client's next Initials are protected under its SCID (§17.2.5.2)."""
        self.odcid = scid
        self._initial.clear()

    def initial(self, direction: int, version: int) -> PacketKeys:
        pair = self._initial.get(version)
        if pair is None:
            client, server = initial_secrets(self.odcid, version)
            pair = self._initial[version] = (
                PacketKeys(client, INITIAL_SUITE, version),
                PacketKeys(server, INITIAL_SUITE, version),
            )
        return pair[direction]

    def secret(self, label: str) -> bytes | None:
        if self.client_random is None:
            return None
        return self.keylog.secrets(self.client_random).get(label)

    def candidates(self, label: str, version: int) -> list[PacketKeys]:
        """The keys a logged secret can give: the ServerHello's suite, or every suite of the
        secret's length (empty: no secret)."""
        secret = self.secret(label)
        if secret is None:
            return []
        suites = (self.suite,) if self.suite is not None else _BY_LENGTH.get(len(secret), ())
        return [
            PacketKeys(secret, suite, version)
            for suite in suites
            if suite.hash_length == len(secret)
        ]

    def handshake(self, direction: int) -> PacketKeys | None:
        return self._handshake[direction]

    def set_handshake(self, direction: int, keys: PacketKeys) -> None:
        self._handshake[direction] = keys

    def early(self) -> PacketKeys | None:
        return self._early

    def set_early(self, keys: PacketKeys) -> None:
        self._early = keys

    def app(self, direction: int, phase: int) -> list[PacketKeys]:
        """The keys to try for a 1-RTT packet of ``phase`` (empty: not known yet)."""
        st = self._app[direction]
        if st is None:
            return []
        if phase == st.bit:
            return [st.current]
        return [st.current.updated(), *([st.previous] if st.previous is not None else [])]

    def set_app(
        self, direction: int, keys: PacketKeys, *, phase: int = 0, updates: int = 0
    ) -> None:
        """The direction's 1-RTT keys: of key ``phase``, ``updates`` Key Updates past the
        logged secret (a connection seen mid-way, opened by trial, may be past some)."""
        st = self._app[direction] = _Phases(keys)
        st.bit = phase
        self.key_updates[direction] += updates

    def opened(self, direction: int, phase: int, keys: PacketKeys) -> None:
        """``keys`` opened a 1-RTT packet of ``phase``: a Key Update when they are new."""
        st = self._app[direction]
        if st is None or phase == st.bit or keys is st.previous:
            return
        st.previous, st.current, st.bit = st.current, keys, phase
        self.key_updates[direction] += 1
