"""TlsConnection when the capture lost a hello: the keys are found by trial decryption.

A key log names each session by its ClientHello random, and the ServerHello names the
cipher suite. When the capture lost one of them, the keys are still in the key log: what is
missing is which. Candidates are tried on a protected record, and the record's AEAD tag is
the proof (a wrong key passes with probability 2^-128 per try): nothing is reported that a
tag did not verify, and plaintext is never guessed.

Lost ClientHello, ServerHello seen (suite and version known)
    TLS 1.3: the server's first protected record follows its ServerHello and is under its
    handshake traffic secret at sequence number 0 (RFC 8446 §7.3): every session of the key
    log with a ``SERVER_HANDSHAKE_TRAFFIC_SECRET`` of the suite's hash length is tried on it
    (the newest session first, at most ``MAX_CANDIDATES``). TLS 1.2: the key block is
    ``PRF(master_secret, "key expansion", server_random + client_random)`` (RFC 5246 §6.3);
    the key log line gives the client random with its master secret, and the ServerHello the
    server random, so every ``CLIENT_RANDOM`` line yields a key block tried on the server's
    first record after its ChangeCipherSpec (its Finished, RFC 5246 §7.4.9). The record that
    verifies names the session; the client's bytes, held since its gap, are then searched
    under its keys (``tls.resync``). ``tls.keys_by_trial`` says so.
Lost ServerHello, ClientHello seen (the client random known)
    TLS 1.3: the suite is one the ClientHello offered whose hash length is the logged
    secret's; each is tried, under the handshake traffic secret then the application one,
    on the first protected record of the direction that has one (the server's after its
    gap, searched by ``tls.resync``; the client's, framed). ``tls.suite_by_trial`` names
    the suite found. TLS 1.2 cannot be recovered: its key block needs the server random,
    which only the lost ServerHello carried (``tls.gap`` says so).

None of this runs when the hellos are seen.
"""

from __future__ import annotations

from agentshark.tls.direction import Direction, Mode
from agentshark.tls.events import TlsPlaintext
from agentshark.tls.host import Host, Out
from agentshark.tls.info import version_name
from agentshark.tls.keylog import TLS12_LABEL
from agentshark.tls.keyschedule import SUITES, CipherSuite, tls12_key_block
from agentshark.tls.records import (
    ALERT,
    APPLICATION_DATA,
    CHANGE_CIPHER_SPEC,
    DecryptError,
    RecordReader,
    Tls12Protection,
    Tls13Protection,
)
from agentshark.tls.resync import Keys, Resync, smallest_record

__all__ = ["MAX_CANDIDATES", "KeyTrial"]

MAX_CANDIDATES = 4096  # key log sessions tried for one connection whose ClientHello was lost
TLS13 = 0x0304
_HANDSHAKE = ("CLIENT_HANDSHAKE_TRAFFIC_SECRET", "SERVER_HANDSHAKE_TRAFFIC_SECRET")
_APPLICATION = ("CLIENT_TRAFFIC_SECRET_0", "SERVER_TRAFFIC_SECRET_0")


class KeyTrial:
    """The lost-hello handling of TlsConnection (a mixin: see ``tls.host``)."""

    __slots__ = ()
    _random: bytes | None  # set here by a trial: TlsConnection's slots
    _hello_done: bool
    _suite: CipherSuite | None

    # -- lost ClientHello -------------------------------------------------------------------

    def _hold_client(self: Host, d: Direction, size: int) -> bool:
        """A gap in the client's stream before its ClientHello was read: hold what follows
        until the server's records name the session (True), if a key log may hold it."""
        if d.index or self._random is not None or d.mode is not Mode.PLAIN:
            return False
        if not len(self._keylog) or (self._sh is not None and self._suite is None):
            return False
        d.lose(d.rec_end + 1)
        lost = d.reader.buffered + size
        d.resync = Resync([], tls13=False, smallest=0, lost=lost, gap=size)
        d.reader = RecordReader()
        return True

    def _client_random_trial(self: Host, d: Direction, suite: CipherSuite, out: Out) -> bool:
        """The server's next protected record is tried under every session of the key log
        that fits ``suite`` (False when there is none to try)."""
        keys: list[Keys] = []
        if suite.tls13:
            label = _HANDSHAKE[1]
            found = self._keylog.candidates(label, suite.hash_length)
            for random, secret in found[:MAX_CANDIDATES]:
                p13 = Tls13Protection(suite, secret)
                keys.append(_candidate(p13, 1, "ClientHello", "client random", random))
        else:
            assert self._sh is not None
            label, server_random = TLS12_LABEL, self._sh.random
            found = self._keylog.candidates(label, 48)
            for random, master in found[:MAX_CANDIDATES]:
                block = tls12_key_block(master, random, server_random, suite)
                p12 = Tls12Protection(suite, block.server_key, block.server_iv)
                keys.append(_candidate(p12, 1, "ClientHello", "client random", random))
        if not keys:
            return False
        if len(found) > MAX_CANDIDATES:
            self._note(
                out, d, "tls.trial_bound", connection=True, total=len(found), limit=MAX_CANDIDATES
            )
        d.mode, d.stage, d.trial = Mode.TRIAL, 1, keys
        return True

    def _client_keys(self: Host, client: Direction, out: Out) -> None:
        """The session is known: the client's held bytes are searched under its keys."""
        resync, suite, random = client.resync, self._suite, self._random
        if resync is None or not resync.waiting or suite is None or random is None:
            return
        secrets = self._keylog.secrets(random)
        keys: list[Keys] = []
        if suite.tls13:
            for label, stage in ((_HANDSHAKE[0], 1), (_APPLICATION[0], 2)):
                secret = secrets.get(label)
                if secret is not None and len(secret) == suite.hash_length:
                    keys.append(_candidate(Tls13Protection(suite, secret), stage, "ClientHello"))
        else:
            assert self._sh is not None
            master = secrets[TLS12_LABEL]  # the trial found the session by this line
            block = tls12_key_block(master, random, self._sh.random, suite)
            p12 = Tls12Protection(suite, block.client_key, block.client_iv)
            keys.append(_candidate(p12, 1, "ClientHello"))
        if not keys:
            self._note(out, client, "tls.missing_secret", random=random.hex()[:16], label="any")
            client.stop()
            return
        chacha = suite.aead == "CHACHA20-POLY1305"
        resync.arm(keys, tls13=suite.tls13, smallest=smallest_record(suite.tls13, chacha))
        for data, ts, acked in resync.take_held():  # each with its own time and ack
            if client.resync is not None:
                self._acked = acked
                out += self._resync(client, data, ts)
                continue
            found = self.feed(0, data, ts)
            for ev in found:
                if type(ev) is TlsPlaintext:
                    ev.acked = acked
            out += found

    def _give_up_held(self: Host, d: Direction, out: Out) -> None:
        """The held client stream will never get its keys: say so, read no more of it."""
        resync = d.resync
        if resync is not None and resync.waiting:
            what = self._handshake_lost(d)
            self._note(out, d, "tls.gap", per_direction=True, size=resync.gap_bytes, what=what)
            d.stop()

    # -- lost ServerHello -------------------------------------------------------------------

    def _suite_keys(self: Host, d: Direction) -> list[Keys]:
        """Keys under each TLS 1.3 suite the ClientHello offered, for a connection whose
        ServerHello was lost: the direction's handshake secret first, then its application
        secret, each with the suites whose hash length is the secret's."""
        ch = self._ch
        if ch is None or self._sh is not None or self._suite is not None or self._random is None:
            return []
        if TLS13 not in ch.versions:
            return []
        secrets = self._keylog.secrets(self._random)
        offered = [SUITES[c] for c in ch.cipher_suites if c in SUITES and SUITES[c].tls13]
        keys: list[Keys] = []
        for label, stage in ((_HANDSHAKE[d.index], 1), (_APPLICATION[d.index], 2)):
            secret = secrets.get(label)
            for suite in offered:
                if secret is not None and len(secret) == suite.hash_length:
                    p13 = Tls13Protection(suite, secret)
                    keys.append(_candidate(p13, stage, "ServerHello", "cipher suite"))
        return keys

    # -- the trial --------------------------------------------------------------------------

    def _trial_record(self: Host, d: Direction, rec: bytes, ts: float, out: Out) -> None:
        """A record of a direction in ``Mode.TRIAL``: the first protected one is tried under
        each candidate at its sequence number; the first whose tag verifies is the key."""
        ctype = rec[0]
        tls13 = d.trial[0].protection.suite.tls13
        if tls13 and ctype == CHANGE_CIPHER_SPEC:
            return  # middlebox compatibility (RFC 8446 §D.4)
        if tls13 and ctype == ALERT:
            self._alert(d, rec[5:], ts, out, encrypted=False)
            return
        if tls13 and ctype != APPLICATION_DATA:
            what = f"a record of type {ctype} in the clear after the ServerHello"
            self._note(out, d, "tls.unexpected_record", per_direction=True, what=what)
            return
        for keys in d.trial:
            protection = keys.protection
            protection.seq = keys.expected
            try:
                inner, content = protection.open(rec)
            except DecryptError:
                continue
            d.trial = []
            d.use(protection, keys.stage)
            self._by_trial(d, keys, out)
            self._content(d, inner, content, ts, out)
            self._after_trial(d, keys, out)
            return
        count, trial = len(d.trial), d.trial[0].trial
        d.trial = []
        if trial == "client random":
            self._note(out, d, "tls.trial_failed/random", count=count)
            self._set_opaque()
            self._give_up_held(self._dirs[0], out)
        else:  # the other direction may still find the suite
            self._note(out, d, "tls.trial_failed/suite", per_direction=True, count=count)
            d.use(None, 0)

    def _by_trial(self: Host, d: Direction, keys: Keys, out: Out) -> None:
        """A record verified under candidate ``keys``: take what that proves."""
        suite = keys.protection.suite
        if keys.trial == "client random" and self._random is None:
            self._random = keys.random
            info = self.info
            info.client_random = keys.random.hex()
            info.unknown += ["sni", "alpn_offered"]  # in the lost ClientHello
            if not suite.tls13:  # RFC 5246 §7.3: a full handshake has a ServerHelloDone
                info.resumed = not self._hello_done
            self._note(
                out,
                d,
                "tls.keys_by_trial",
                connection=True,
                random=keys.random.hex()[:16],
                suite=suite.name,
            )
        elif keys.trial == "cipher suite" and self._suite is None:
            self._suite = suite
            info = self.info
            info.version = version_name(TLS13)
            info.cipher_suite = suite.name
            # in the ServerHello (and a HelloRetryRequest before it); alpn: until EE is read
            info.unknown += ["resumed", "alpn", "hello_retry"]
            self._note(out, d, "tls.suite_by_trial", connection=True, suite=suite.name)
            other = self._dirs[1 - d.index]
            if other.resync is not None and not other.resync.waiting:
                kept = [k for k in other.resync.keys if k.protection.suite is suite]
                other.resync.arm(kept, tls13=True, smallest=smallest_record(True, False))

    def _after_trial(self: Host, d: Direction, keys: Keys, out: Out) -> None:
        """After the record found by trial was read: the other direction gets its keys."""
        suite = keys.protection.suite
        client = self._dirs[0]
        if d.index == 0 or self._suite is not suite or self._random is None:
            return
        if suite.tls13 and client.resync is None:
            if client.stage == 0:
                self._tls13_client_start(out)
        elif keys.trial == "client random":
            self._client_keys(client, out)


def _candidate(
    protection: Tls12Protection | Tls13Protection,
    stage: int,
    change: str,
    trial: str = "",
    random: bytes = b"",
) -> Keys:
    return Keys(
        protection=protection, expected=0, stage=stage, change=change, trial=trial, random=random
    )
