"""Make a loopback capture of the official Redis client for Python (redis-py) talking to a
real Redis server, in ``tests/data/captures/redis_py/`` (and ``redis_py_tls/``).

    python3 scripts/make_redis_captures.py             # needs root (tcpdump)
    python3 scripts/make_redis_captures.py --out DIR   # the parent of the case folder
    python3 scripts/make_redis_captures.py --tls       # redis_py_tls only

The server is Debian's ``redis-server`` (scripts/redis.sh installs it), started here on
127.0.0.1 with a password, no persistence. ``tcpdump -i lo`` writes its port only. The
client: a RESP2 connection (AUTH with the password) doing SET/GET, a command that fails, a
pipeline of three INCR, a list used as a queue (LPUSH, BRPOP), a stream with a consumer
group (XADD, XGROUP CREATE, XREADGROUP, XACK) and a PUBLISH to a channel that a second
connection SUBSCRIBEd to; then a RESP3 connection (HELLO 3 with AUTH) reading a hash (a map
reply).

``redis_py_tls`` is the same session over TLS: the server listens with ``--tls-port`` only
(a throw-away self-signed certificate, ``genlib.make_test_certs``; client certificates not
asked for), redis-py connects with ``ssl=True`` trusting that certificate, and its
``ssl.create_default_context()`` writes the session keys to ``keys.log`` (``SSLKEYLOGFILE``,
which sets the context's ``keylog_filename``).

``truth.json`` is the client's own record, from wrappers around redis-py's
``Connection.send_command``, ``pack_commands`` (pipelines) and ``read_response``: per
connection (its local port), every command's arguments in the order sent and every reply
as redis-py parsed it (or the error it raised), never read back from the pcap; and the
password, which the report must never show.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH_DIR))
import genlib  # noqa: E402

CAPTURES_DIR = Path(__file__).resolve().parent.parent / "tests" / "data" / "captures"
PORT = 63799
TLS_PORT = 54356  # redis_py_tls
PASSWORD = "redis-s3cret-never-shown"  # a throw-away server's password


def plain(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, dict):
        return [[plain(k), plain(v)] for k, v in value.items()]
    if isinstance(value, list | tuple | set):
        return [plain(v) for v in value]
    return value


def record_client(log: dict[str, list[dict[str, Any]]]) -> None:
    """Wrap redis-py's Connection so that every command and reply is logged by port."""
    import redis.connection

    conn_cls = redis.connection.Connection
    send: Any = conn_cls.send_command
    pack_many: Any = conn_cls.pack_commands
    read: Any = conn_cls.read_response

    def port(self: Any) -> str:
        sock = getattr(self, "_sock", None)
        return str(sock.getsockname()[1]) if sock is not None else "?"

    def send_command(self: Any, *args: Any, **kw: Any) -> Any:
        log.setdefault(port(self), []).append({"command": [plain(a) for a in args]})
        return send(self, *args, **kw)

    def pack_commands(self: Any, commands: Any) -> Any:  # a pipeline
        entries = log.setdefault(port(self), [])
        entries.extend({"command": [plain(a) for a in args]} for args in commands)
        return pack_many(self, commands)

    def read_response(self: Any, *a: Any, **kw: Any) -> Any:
        entries = log.setdefault(port(self), [])
        try:
            reply = read(self, *a, **kw)
        except redis.ResponseError as exc:
            entries.append({"error": str(exc)})
            raise
        entries.append({"reply": plain(reply)})
        return reply

    conn_cls.send_command = send_command  # type: ignore[method-assign]
    conn_cls.pack_commands = pack_commands  # type: ignore[method-assign]
    conn_cls.read_response = read_response  # type: ignore[method-assign]


def session(port: int = PORT, tls: dict[str, Any] | None = None) -> dict[str, Any]:
    """The client's session; ``tls``: redis-py's ``ssl`` arguments."""
    import redis

    log: dict[str, list[dict[str, Any]]] = {}
    record_client(log)
    kw = tls or {}
    r = redis.Redis(host="127.0.0.1", port=port, password=PASSWORD, protocol=2, **kw)
    r.set("greeting", "hello")
    r.get("greeting")
    with contextlib.suppress(redis.ResponseError):
        r.incr("greeting")
    pipe = r.pipeline(transaction=False)
    for _ in range(3):
        pipe.incr("counter")
    pipe.execute()
    r.lpush("jobs", '{"task": "summarize", "id": 17}')
    r.brpop(["jobs"], timeout=1)
    entry = r.xadd(
        "events", {"task": "t1", "traceparent": "00-" + "ab" * 16 + "-" + "cd" * 8 + "-01"}
    )
    r.xgroup_create("events", "workers", id="0")
    r.xreadgroup("workers", "w1", {"events": ">"}, count=1)
    r.xack("events", "workers", entry)
    sub = r.pubsub()  # type: ignore[no-untyped-call]
    sub.subscribe("news")
    sub.get_message(timeout=1.0)  # the subscribe confirmation
    r.publish("news", "agent 7 finished")
    sub.get_message(timeout=1.0)
    sub.close()
    r3 = redis.Redis(host="127.0.0.1", port=port, password=PASSWORD, protocol=3, **kw)
    r3.hset("profile", mapping={"name": "agent", "runs": "3"})
    r3.hgetall("profile")
    r3.close()
    r.close()
    return log


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=CAPTURES_DIR)
    parser.add_argument("--tls", action="store_true", help="redis_py_tls only")
    args = parser.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("make_redis_captures.py: run as root (tcpdump)")
    server_bin = shutil.which("redis-server")
    if server_bin is None:
        raise SystemExit("make_redis_captures.py: no redis-server; run scripts/redis.sh")
    tcpdump = genlib.ensure_tcpdump()
    if not args.tls:
        capture(tcpdump, server_bin, args.out / "redis_py", tls=False)
    capture(tcpdump, server_bin, args.out / "redis_py_tls", tls=True)


def capture(tcpdump: str, server_bin: str, folder: Path, *, tls: bool) -> None:
    pcap, keylog = folder / "capture.pcap", folder / "keys.log"
    port = TLS_PORT if tls else PORT
    argv = [server_bin, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
            "--appendonly", "no", "--requirepass", PASSWORD, "--daemonize", "no"]  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="agentshark-redis-") as tmp:
        client: dict[str, Any] | None = None
        if tls:
            certs = genlib.make_test_certs(Path(tmp))
            argv[1:3] = ["--port", "0", "--tls-port", str(port)]
            cert, key = str(certs["rsa"]), str(certs["rsa_key"])
            argv += ["--tls-cert-file", cert, "--tls-key-file", key, "--tls-ca-cert-file", cert,
                     "--tls-auth-clients", "no"]  # fmt: skip
            client = {"ssl": True, "ssl_ca_certs": str(certs["rsa"])}
            keylog.parent.mkdir(parents=True, exist_ok=True)
            keylog.unlink(missing_ok=True)
            os.environ["SSLKEYLOGFILE"] = str(keylog)  # read by ssl.create_default_context
        server = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        dump = genlib.Tcpdump(tcpdump, pcap, port, buffer_kib=65536)
        try:
            genlib.wait_listening(port, server)
            dump.start()
            log = session(port, client)
            counters = dump.stop()
        finally:
            dump.abort()  # a run that failed leaves no tcpdump behind
            os.environ.pop("SSLKEYLOGFILE", None)
            server.terminate()
            server.wait(10)
    if tls and not keylog.exists():
        raise genlib.ToolError("redis-py wrote no key log (SSLKEYLOGFILE)")
    version = subprocess.run([server_bin, "--version"], capture_output=True, text=True).stdout
    genlib.write_json(
        folder / "truth.json",
        {
            "made_by": "scripts/make_redis_captures.py",
            "server": f"127.0.0.1:{port}",
            "tls": tls,
            "password": PASSWORD,
            "connections": log,
        },
    )
    software = {**genlib.package_versions("redis"), "redis-server": version.strip()}
    extra = {"keylog": genlib.keylog_labels(keylog)} if tls else {}
    genlib.write_json(folder / "run.json", genlib.run_record(counters, pcap, software, **extra))
    genlib.log(f"{folder.name}: {sum(map(len, log.values()))} records, {counters}")


if __name__ == "__main__":
    main()
