"""tcpdump as a child process writing pcap to a pipe, for :mod:`agentshark.pipeline.capture`.

The command is ``tcpdump -i IFACE -s 0 -B 65536 -U --immediate-mode -n -w - FILTER``: the
whole packets (``-s 0``), each written to the pipe as it is captured (``-U``) and handed over by
libpcap at once rather than in blocks a second apart (``--immediate-mode``). The child runs
in a process group of its own, so that a Ctrl-C in the terminal reaches agentshark only,
which stops the child (SIGTERM: tcpdump writes what it has, prints its counters and exits)
and reads the pipe to its end.

``-B 65536``: the kernel's capture buffer, 64 MiB. In immediate mode libpcap uses a
TPACKET_V2 ring of fixed-size frames, one per packet, each as large as the snap length
allows (256 KiB with ``-s 0``): tcpdump's default 2 MiB holds 4 packets, and on a loaded
machine (here: load 15 on 2 cores) a burst of a response's chunks overflowed it, the kernel
dropping the last packets of a call ("4 packets dropped by kernel"). 64 MiB holds 128.
Drops are still counted: :meth:`TcpdumpChild.dropped` reads tcpdump's own count.

A child that cannot capture says why on its stderr before it prints ``listening on``;
:func:`failure` turns the messages of tcpdump 4.x (libpcap 1.x) into one line saying what
to do: capture privileges (root, or ``setcap cap_net_raw,cap_net_admin=eip`` on tcpdump),
an interface that does not exist (the ones that do), a filter it does not accept.
"""

from __future__ import annotations

import os
import re
import select
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Sequence

__all__ = ["CaptureError", "TcpdumpChild", "capture_filter", "failure", "tcpdump_command"]

START_TIMEOUT = 10.0  # seconds tcpdump may take to say it listens
STOP_TIMEOUT = 5.0  # seconds it may take to exit once told to
BUFFER_KIB = 65536  # tcpdump -B: the kernel's capture buffer (see the module docstring)
_DROPPED = re.compile(r"(\d+) packets? dropped by kernel")


class CaptureError(Exception):
    """The capture cannot run: the message says why and what to do, in one line."""


def capture_filter(ports: Sequence[int], bpf: str | None) -> str:
    """The BPF expression: TCP (what agentshark decodes), on ``ports`` if given, and
    ``bpf`` if given."""
    parts = [f"({bpf})"] if bpf else []
    if ports:
        parts.append("tcp and (" + " or ".join(f"port {p}" for p in ports) + ")")
    elif not bpf:
        parts.append("tcp")
    return " and ".join(parts)


def tcpdump_command(tcpdump: str, interface: str, expression: str) -> list[str]:
    return [
        *(tcpdump, "-i", interface, "-s", "0", "-B", str(BUFFER_KIB)),
        *("-U", "--immediate-mode", "-n", "-w", "-"),
    ] + ([expression] if expression else [])


def failure(stderr: str, *, interface: str, tcpdump: str, expression: str) -> str:
    """What a tcpdump that exited before capturing said, as one line of advice."""
    text = " ".join(
        line.strip().removeprefix("tcpdump: ") for line in stderr.splitlines() if line.strip()
    )
    if "permission" in text.lower() or "Operation not permitted" in text:
        return (
            f"no permission to capture on {interface} ({text}): run as root "
            f"(sudo agentshark capture ...), or let tcpdump capture for your user: "
            f"sudo setcap cap_net_raw,cap_net_admin=eip {tcpdump}"
        )
    if "No such device" in text or "doesn't exist" in text or "no such device" in text:
        names = ", ".join(name for _, name in socket.if_nameindex())
        return (
            f"-i {interface}: no such interface (tcpdump: {text}); the interfaces here: "
            f"{names} (`tcpdump -D` lists those it can capture on)"
        )
    if "filter" in text or "syntax error" in text:
        return f"tcpdump does not accept the filter {expression!r}: {text}"
    return f"tcpdump could not start capturing: {text or 'it exited without saying why'}"


def find_tcpdump(tcpdump: str) -> str:
    """The path of ``tcpdump`` (a name or a path), or a CaptureError saying how to get it."""
    found = shutil.which(tcpdump)
    if found is None:
        raise CaptureError(
            f"{tcpdump}: not found; agentshark capture runs tcpdump: install it "
            "(apt-get install tcpdump, dnf install tcpdump, apk add tcpdump; macOS has it) "
            "or give its path with --tcpdump PATH"
        )
    return found


class TcpdumpChild:
    """A running tcpdump: :meth:`read` gives the pcap bytes it wrote so far."""

    def __init__(self, interface: str, expression: str, *, tcpdump: str = "tcpdump") -> None:
        self.interface = interface
        self.expression = expression
        self.path = find_tcpdump(tcpdump)
        self.command = tcpdump_command(self.path, interface, expression)
        self.stderr = ""  # what it said (its counters at the end)
        self.eof = False
        self.stopped_at: float | None = None  # when it was told to stop
        self.by_itself = False  # whether its pipe closed before it was told to stop
        self._early: list[bytes] = []  # pcap bytes written before it said it listens
        self._proc = subprocess.Popen(
            self.command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            process_group=0,  # a Ctrl-C in the terminal reaches agentshark only
        )
        assert self._proc.stdout is not None and self._proc.stderr is not None
        self._out = self._proc.stdout.fileno()
        self._err: int | None = self._proc.stderr.fileno()
        os.set_blocking(self._out, False)
        os.set_blocking(self._err, False)
        self._started()

    @property
    def pid(self) -> int:
        return self._proc.pid

    def _started(self) -> None:
        """Wait until tcpdump says it listens; a CaptureError when it exits first."""
        deadline = time.monotonic() + START_TIMEOUT
        while "listening on" not in self.stderr:
            left = deadline - time.monotonic()
            if left <= 0:
                self._kill()
                raise CaptureError(
                    f"tcpdump did not start capturing within {START_TIMEOUT:.0f}s: "
                    f"{self.stderr.strip() or 'it said nothing'}"
                )
            self._early.extend(self._read_pipes(min(left, 0.1)))
            if self.eof and "listening on" not in self.stderr:
                self._proc.wait()
                raise CaptureError(
                    failure(
                        self.stderr,
                        interface=self.interface,
                        tcpdump=self.path,
                        expression=self.expression,
                    )
                )

    def read(self, timeout: float) -> list[bytes]:
        """The pcap bytes written since the last call, waiting up to ``timeout`` seconds for
        some; ``[]`` when none came (:attr:`eof` once the pipe is closed)."""
        if self._early:
            early, self._early = self._early, []
            return early
        return self._read_pipes(timeout)

    def _read_pipes(self, timeout: float) -> list[bytes]:
        if self.eof:
            return []
        fds = [self._out] if self._err is None else [self._out, self._err]
        ready, _, _ = select.select(fds, [], [], max(timeout, 0.0))
        out: list[bytes] = []
        if self._err is not None and self._err in ready:
            self._read_stderr()
        if self._out in ready:
            while True:
                try:
                    data = os.read(self._out, 1 << 20)
                except BlockingIOError:
                    break
                if not data:
                    self.eof = True
                    self.by_itself = self.stopped_at is None
                    break
                out.append(data)
        return out

    def _read_stderr(self) -> None:
        assert self._err is not None
        try:
            data = os.read(self._err, 1 << 16)
        except BlockingIOError:
            return
        if data:
            self.stderr += data.decode(errors="replace")
        else:
            self._err = None

    def stop(self) -> None:
        """Tell tcpdump to stop (it then writes what it holds and closes the pipe)."""
        if self.stopped_at is None:
            self.stopped_at = time.monotonic()
            if self._proc.poll() is None:
                self._proc.send_signal(signal.SIGTERM)

    def overdue(self) -> bool:
        """Told to stop too long ago: :meth:`close` kills it."""
        return self.stopped_at is not None and time.monotonic() - self.stopped_at > STOP_TIMEOUT

    def close(self) -> int:
        """Wait for the exit (killing a child that does not stop); its exit status."""
        self.stop()
        try:
            self._proc.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self._kill()
        while self._err is not None:
            self._read_stderr()
        assert self._proc.stdout is not None and self._proc.stderr is not None
        self._proc.stdout.close()
        self._proc.stderr.close()
        return self._proc.returncode

    def dropped(self) -> int | None:
        """Packets the kernel dropped, from the counters tcpdump printed when it stopped."""
        found = _DROPPED.search(self.stderr)
        return int(found.group(1)) if found else None

    def _kill(self) -> None:
        if self._proc.poll() is None:
            self._proc.kill()
        self._proc.wait()
