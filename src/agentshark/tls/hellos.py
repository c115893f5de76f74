"""The hellos and the keys of :class:`~agentshark.tls.session.TlsConnection` (a mixin: see
``tls.host``): what the ClientHello, ServerHello and EncryptedExtensions say, and the switch
of each side to its handshake, application (TLS 1.3, RFC 8446 §7.3) or key-block (TLS 1.2,
RFC 5246 §6.3) protection, with the key log's secrets looked up when they are needed."""

from __future__ import annotations

from agentshark.tls import handshake as hs
from agentshark.tls.direction import Direction, Mode
from agentshark.tls.host import Host, Out
from agentshark.tls.info import version_name
from agentshark.tls.keylog import TLS12_LABEL
from agentshark.tls.keyschedule import SUITES, CipherSuite, suite_name, tls12_key_block
from agentshark.tls.records import Tls12Protection, Tls13Protection

__all__ = ["HelloSteps"]

TLS12, TLS13 = 0x0303, 0x0304


class HelloSteps:
    """The hello and key steps of TlsConnection."""

    __slots__ = ()
    # set here, declared for the type checker (the slots are TlsConnection's)
    _ch: hs.ClientHello | None
    _sh: hs.ServerHello | None
    _random: bytes | None
    _suite: CipherSuite | None

    # -- hellos -----------------------------------------------------------------------------

    def _client_hello(self: Host, d: Direction, ch: hs.ClientHello, out: Out) -> None:
        if self._ch is not None and d.mode is Mode.EARLY:  # the ClientHello after an HRR
            d.early.reject()  # RFC 8446 §4.1.2: early data is not retried after an HRR
            self._early_end(d, out)
        self._ch = ch
        self._random = ch.random
        info = self.info
        info.client_random = ch.random.hex()
        info.sni = ch.server_name
        info.alpn_offered = list(ch.alpn)
        if ch.early_data and TLS13 in ch.versions and d.mode is Mode.PLAIN:
            d.mode = Mode.EARLY
            d.untrack()
        elif d.mode is Mode.EARLY:
            d.mode = Mode.PLAIN

    def _server_hello(self: Host, sh: hs.ServerHello, out: Out) -> None:
        info = self.info
        info.version = version_name(sh.version)
        info.cipher_suite = suite_name(sh.cipher_suite)
        if sh.retry:
            info.hello_retry = True
            return  # the client answers with a second ClientHello; keys come later
        self._sh = sh
        ch = self._ch
        if sh.version == TLS13:
            info.resumed = sh.psk
        else:
            info.alpn = sh.alpn
            if ch is not None:  # an abbreviated handshake echoes the session id (RFC 5246 §7.3)
                info.resumed = bool(ch.session_id) and sh.session_id == ch.session_id
        suite = SUITES.get(sh.cipher_suite)
        if sh.version not in (TLS12, TLS13):
            what = info.version
        elif suite is None or suite.tls13 != (sh.version == TLS13):
            what = f"the cipher suite {info.cipher_suite}"
        elif ch is None:  # the ClientHello was lost: tls.trial may find the session
            self._suite = suite
            if not suite.tls13 and len(self._keylog):
                return  # tried on the server's Finished, after its ChangeCipherSpec
            if not suite.tls13 or not self._client_random_trial(self._dirs[1], suite, out):
                self._no_handshake(self._dirs[1], out)
            return
        else:
            self._suite = suite
            if suite.tls13:
                self._tls13_start(out)
            return
        self._note(out, self._dirs[1], "tls.unsupported", what=what)
        self._set_opaque()

    def _encrypted_extensions(self: Host, ee: hs.EncryptedExtensions, out: Out) -> None:
        self.info.alpn = ee.alpn
        if self.info.unknown:
            self.info.unknown = [fact for fact in self.info.unknown if fact != "alpn"]
        client = self._dirs[0]
        if client.mode is Mode.EARLY:
            if ee.early_data:
                client.early.accepted = self.info.early_data = True
                out += client.early.release()
            else:
                client.early.reject()

    # -- keys -------------------------------------------------------------------------------

    def _secret(self: Host, label: str, d: Direction, out: Out) -> bytes | None:
        """The logged secret, or None after saying (once) what is missing and what to do."""
        assert self._random is not None
        found = self._keylog.secrets(self._random)
        secret = found.get(label)
        if secret is None:
            random = self._random.hex()[:16]
            sources = self._keylog.sources
            if found:
                self._note(out, d, "tls.missing_secret", random=random, label=label)
                return None
            ech = (
                "; the client used Encrypted Client Hello, and key logs name the inner "
                "ClientHello's random, which a capture does not show"
                if self._ch is not None and self._ch.ech
                else ""
            )
            if not sources:
                self._note(out, d, "tls.no_keys/no_keylog", random=random, ech=ech)
            else:
                name = sources[0] if len(sources) == 1 else f"the key logs ({', '.join(sources)})"
                self._note(out, d, "tls.no_keys", keylog=name, random=random, ech=ech)
        return secret

    def _protection13(self: Host, label: str, d: Direction, out: Out) -> Tls13Protection | None:
        suite = self._suite
        secret = self._secret(label, d, out)
        if suite is None or secret is None:
            return None
        if len(secret) != suite.hash_length:
            size, needed = len(secret), suite.hash_length
            self._note(
                out, d, "tls.wrong_secret", label=label, size=size, suite=suite.name, needed=needed
            )
            return None
        return Tls13Protection(suite, secret)

    def _tls13_start(self: Host, out: Out) -> None:
        """After the ServerHello: both sides move to their handshake traffic keys."""
        server = self._dirs[1]
        if server.mode is not Mode.LOST:
            server.use(self._protection13("SERVER_HANDSHAKE_TRAFFIC_SECRET", server, out), 1)
        self._tls13_client_start(out)

    def _tls13_client_start(self: Host, out: Out) -> None:
        """The client moves to its handshake traffic keys with the server's (RFC 8446 §2)."""
        client = self._dirs[0]
        if client.mode is Mode.PLAIN:
            client.use(self._protection13("CLIENT_HANDSHAKE_TRAFFIC_SECRET", client, out), 1)
        elif client.mode is Mode.EARLY:
            keys = self._protection13("CLIENT_HANDSHAKE_TRAFFIC_SECRET", client, out)
            if keys is None:
                client.use(None, 1)
                client.early.clear()
                return
            client.protection, client.stage = keys, 1  # tried after the early keys
            client.early.keys = self._protection13_quiet("CLIENT_EARLY_TRAFFIC_SECRET")
            for rec, ts in client.early.take_raw():
                if client.mode is Mode.EARLY:
                    self._early_record(client, rec, ts, out)

    def _protection13_quiet(self: Host, label: str) -> Tls13Protection | None:
        """Keys for a secret the session may well not have (0-RTT): no diagnostic if absent."""
        assert self._random is not None and self._suite is not None
        secret = self._keylog.secrets(self._random).get(label)
        if secret is None or len(secret) != self._suite.hash_length:
            return None
        return Tls13Protection(self._suite, secret)

    def _tls12_start(self: Host, d: Direction, out: Out) -> None:
        """A ChangeCipherSpec: this side's next records are protected (RFC 5246 §7.1)."""
        suite, random, sh = self._suite, self._random, self._sh
        if suite is not None and random is None and d.index == 1:  # the ClientHello was lost
            if not self._client_random_trial(d, suite, out):
                self._no_handshake(d, out)
            return
        if suite is None or random is None or sh is None:
            d.use(None, 1)
            return
        master = self._secret(TLS12_LABEL, d, out)
        if master is None:
            self._set_opaque()
            return
        keys = tls12_key_block(master, random, sh.random, suite)
        if d.index == 0:
            d.use(Tls12Protection(suite, keys.client_key, keys.client_iv), 1)
        else:
            d.use(Tls12Protection(suite, keys.server_key, keys.server_iv), 1)
