"""What the parts of :class:`~agentshark.tls.session.TlsConnection` kept in other modules
(``hellos``: the hellos and keys; ``lost``: gaps; ``trial``: lost hellos; ``zero_rtt``:
early data) may use of the connection.

They are mixins of TlsConnection; :class:`Host` is the self type their methods declare, so
that the type checker holds them to what the connection really has.
"""

from __future__ import annotations

from typing import Protocol

from agentshark.errors import Severity
from agentshark.tls import handshake as hs
from agentshark.tls.direction import Direction
from agentshark.tls.events import TlsEvent
from agentshark.tls.info import TlsInfo
from agentshark.tls.keylog import KeyLog
from agentshark.tls.keyschedule import CipherSuite
from agentshark.tls.records import Tls13Protection
from agentshark.tls.resync import Keys, Resumed, Resync

__all__ = ["Host", "Out"]

Out = list[TlsEvent]


class Host(Protocol):
    info: TlsInfo
    _keylog: KeyLog
    _ch: hs.ClientHello | None
    _sh: hs.ServerHello | None
    _suite: CipherSuite | None
    _random: bytes | None
    _hello_done: bool
    _acked: int
    _dirs: tuple[Direction, Direction]

    def feed(self, direction: int, data: bytes, ts: float, acked: int = -1) -> list[TlsEvent]: ...

    def _content(self, d: Direction, ctype: int, content: bytes, ts: float, out: Out) -> None: ...

    def _failed(self, d: Direction, out: Out) -> None: ...

    def _alert(
        self, d: Direction, content: bytes, ts: float, out: Out, *, encrypted: bool
    ) -> None: ...

    def _set_opaque(self) -> None: ...

    def _tls13_start(self, out: Out) -> None: ...

    def _tls13_client_start(self, out: Out) -> None: ...

    def _secret(self, label: str, d: Direction, out: Out) -> bytes | None: ...

    def _protection13(self, label: str, d: Direction, out: Out) -> Tls13Protection | None: ...

    def _client_random_trial(self, d: Direction, suite: CipherSuite, out: Out) -> bool: ...

    def _no_handshake(self, d: Direction, out: Out) -> None: ...

    def _early_record(self, d: Direction, rec: bytes, ts: float, out: Out) -> None: ...

    def _resync(self, d: Direction, data: bytes, ts: float) -> list[TlsEvent]: ...

    def _resync_keys(self, d: Direction) -> list[Keys]: ...

    def _handshake_lost(self, d: Direction) -> str: ...

    def _suite_keys(self, d: Direction) -> list[Keys]: ...

    def _give_up_held(self, d: Direction, out: Out) -> None: ...

    def _client_keys(self, client: Direction, out: Out) -> None: ...

    def _by_trial(self, d: Direction, keys: Keys, out: Out) -> None: ...

    def _after_trial(self, d: Direction, keys: Keys, out: Out) -> None: ...

    def _protection13_quiet(self, label: str) -> Tls13Protection | None: ...

    def _early_end(self, d: Direction, out: Out, *, end_of_early_data: bool = False) -> None: ...

    def _resumed(self, d: Direction, found: Resumed, gap: int, ts: float, out: Out) -> None: ...

    def _unresolved(self, d: Direction, resync: Resync, ts: float, out: Out) -> int: ...

    def _note(
        self,
        out: Out,
        d: Direction,
        code: str,
        *,
        per_direction: bool = False,
        every: bool = False,
        connection: bool = False,
        severity: Severity | None = None,
        **fields: object,
    ) -> None: ...
