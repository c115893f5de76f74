"""mitmproxy's embedded master on a thread of its own, with the :class:`Recorder` addon.

Only the addons a gateway needs are loaded (core, the proxy server, the layer and TLS
configuration, the refusal of cleartext HTTP/2), none that prints flows: mitmproxy's own log
(and its addons' warnings on the root logger) goes through the one redactor to standard
error, warnings and errors only, so no upstream key is ever written there.

Modes (https://docs.mitmproxy.org/stable/concepts-modes/):

- reverse (``--upstream``/``--route``): clients use the listen address as their base URL;
  mitmproxy runs in ``reverse:`` mode to the first route and the addon sends each request
  where its route says. Connections upstream are made when a request needs one (``lazy``).
- forward (``--forward``): mitmproxy's ``regular`` mode, for clients that honour
  ``HTTPS_PROXY``; TLS is intercepted with the CA kept in ``confdir`` (made on first use:
  ``mitmproxy-ca-cert.pem`` is the certificate clients trust, ``agentshark ca``).

The upstream's certificate is verified against the system's CAs, or ``upstream_ca``
(``ssl_verify_upstream_trusted_ca``); ``insecure`` turns verification off. ``keylog``
appends the TLS secrets of the proxy's sessions (both sides) in SSLKEYLOGFILE format.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import threading
from collections.abc import Callable
from pathlib import Path

from mitmproxy import ctx, master, options
from mitmproxy.addons import core, disable_h2c, next_layer, proxyserver, tlsconfig
from mitmproxy.net import tls

from agentshark.model import Exchange
from agentshark.output.redact import Redactor
from agentshark.proxy.addon import Recorder
from agentshark.proxy.config import GatewayConfig

__all__ = ["CA_CERT", "Gateway", "ensure_ca"]

CA_CERT = "mitmproxy-ca-cert.pem"  # in the confdir: the CA certificate clients trust
_CA_BASENAME = "mitmproxy"  # the name mitmproxy's TLS addon looks for in the confdir


def ensure_ca(confdir: Path) -> Path:
    """The CA certificate in ``confdir``, made (with its key) if there is none yet."""
    from mitmproxy.certs import CertStore

    confdir.mkdir(parents=True, exist_ok=True, mode=0o700)
    CertStore.from_store(confdir, _CA_BASENAME, 2048)
    return confdir / CA_CERT


class _Log(logging.Handler):
    """mitmproxy's warnings and errors, redacted, on standard error."""

    def __init__(self, redact: Redactor) -> None:
        super().__init__(logging.WARNING)
        self._redact = redact

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = self._redact.text(record.getMessage())
        except Exception:  # noqa: BLE001  # a log line must never break the proxy
            text = "(a log record that could not be formatted)"
        print(f"agentshark proxy: {text}", file=sys.stderr, flush=True)


class Gateway:
    """The proxy, started by :meth:`start` and stopped by :meth:`stop`; each exchange that
    ends is handed to ``sink`` on the proxy's thread."""

    def __init__(
        self, config: GatewayConfig, sink: Callable[[Exchange], None], redact: Redactor
    ) -> None:
        self.config = config
        self.recorder = Recorder(sink, config.routes)
        self.error: str | None = None
        self.addresses: list[tuple[str, int]] = []
        self._ready = threading.Event()
        self._master: master.Master | None = None
        self._thread = threading.Thread(target=self._main, name="agentshark-proxy", daemon=True)
        self._log = _Log(redact)

    def start(self, timeout: float = 30.0) -> bool:
        """Start listening; False (``error`` says why) when it could not."""
        logger = logging.getLogger("mitmproxy")
        logger.addHandler(self._log)
        logger.propagate = False
        logging.getLogger().addHandler(self._log)  # addons that log to the root logger
        if self.config.keylog:
            tls.log_master_secret = tls.make_master_secret_logger(self.config.keylog)
        self._thread.start()
        if not self._ready.wait(timeout):
            self.error = self.error or f"the proxy did not start within {timeout:.0f}s"
        return self.error is None

    def running(self) -> bool:
        """Whether the proxy's thread still runs."""
        return self._thread.is_alive()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop listening; the flows still open are handed over (incomplete) first."""
        if self._master is not None and self._thread.is_alive():
            with contextlib.suppress(RuntimeError):  # its loop closed in between: it stopped
                self._master.shutdown()
        self._thread.join(timeout)
        logging.getLogger("mitmproxy").removeHandler(self._log)
        logging.getLogger().removeHandler(self._log)

    def _main(self) -> None:
        try:
            asyncio.run(self._serve())
        except Exception as exc:  # noqa: BLE001  # said as the reason the proxy stopped
            self.error = self.error or f"the proxy stopped: {exc}"
        finally:
            self._ready.set()

    async def _serve(self) -> None:
        c = self.config
        opts = options.Options(listen_host=c.host, listen_port=c.port, mode=c.modes)
        m = master.Master(opts)
        m.addons.add(
            core.Core(),
            proxyserver.Proxyserver(),
            next_layer.NextLayer(),
            tlsconfig.TlsConfig(),
            disable_h2c.DisableH2C(),  # h2c (upgrade or prior knowledge): mitmproxy has none
            self.recorder,
            _Ready(self),
        )
        settings: dict[str, object] = {
            "confdir": str(c.confdir),
            "connection_strategy": "lazy",
            "ssl_insecure": c.insecure,
        }
        if c.upstream_ca:
            settings["ssl_verify_upstream_trusted_ca"] = c.upstream_ca
        if not c.routes:
            c.confdir.mkdir(parents=True, exist_ok=True, mode=0o700)
        opts.update(**settings)
        self._master = m
        asyncio.get_running_loop().set_exception_handler(self._loop_error)
        await m.run()

    def _loop_error(self, loop: asyncio.AbstractEventLoop, context: dict[str, object]) -> None:
        """Errors of tasks outside mitmproxy's run (the connections cancelled as it stops
        are not errors); said redacted."""
        exc = context.get("exception")
        if isinstance(exc, asyncio.CancelledError):
            return
        self._log.emit(
            logging.LogRecord(
                "asyncio", logging.ERROR, "", 0, str(exc or context.get("message")), None, None
            )
        )


class _Ready:
    """Says when the servers listen (or that they could not)."""

    def __init__(self, gateway: Gateway) -> None:
        self._gateway = gateway

    def running(self) -> None:
        g = self._gateway
        server = ctx.master.addons.get("proxyserver")
        addrs = server.listen_addrs() if server is not None else []
        g.addresses = [(str(a[0]), int(a[1])) for a in addrs]
        if not g.addresses:
            c = g.config
            g.error = f"cannot listen on {c.host}:{c.port} (is the port in use? try --listen)"
            ctx.master.shutdown()
        g._ready.set()
