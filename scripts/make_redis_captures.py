"""Make a loopback capture of the official Redis client for Python (redis-py) talking to a
real Redis server, in ``tests/data/captures/redis_py/``.

    python3 scripts/make_redis_captures.py             # needs root (tcpdump)
    python3 scripts/make_redis_captures.py --out DIR   # the parent of the case folder

The server is Debian's ``redis-server`` (scripts/redis.sh installs it), started here on
127.0.0.1 with a password, no persistence. ``tcpdump -i lo`` writes its port only. The
client: a RESP2 connection (AUTH with the password) doing SET/GET, a command that fails, a
pipeline of three INCR, a list used as a queue (LPUSH, BRPOP), a stream with a consumer
group (XADD, XGROUP CREATE, XREADGROUP, XACK) and a PUBLISH to a channel that a second
connection SUBSCRIBEd to; then a RESP3 connection (HELLO 3 with AUTH) reading a hash (a map
reply).

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
import time
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH_DIR))
import genlib  # noqa: E402

CAPTURES_DIR = Path(__file__).resolve().parent.parent / "tests" / "data" / "captures"
PORT = 63799
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


def session() -> dict[str, Any]:
    import redis

    log: dict[str, list[dict[str, Any]]] = {}
    record_client(log)
    r = redis.Redis(host="127.0.0.1", port=PORT, password=PASSWORD, protocol=2)
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
    r3 = redis.Redis(host="127.0.0.1", port=PORT, password=PASSWORD, protocol=3)
    r3.hset("profile", mapping={"name": "agent", "runs": "3"})
    r3.hgetall("profile")
    r3.close()
    r.close()
    return log


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=CAPTURES_DIR)
    args = parser.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("make_redis_captures.py: run as root (tcpdump)")
    server_bin = shutil.which("redis-server")
    if server_bin is None:
        raise SystemExit("make_redis_captures.py: no redis-server; run scripts/redis.sh")
    tcpdump = genlib.ensure_tcpdump()
    folder = args.out / "redis_py"
    pcap = folder / "capture.pcap"
    server = subprocess.Popen(
        [server_bin, "--port", str(PORT), "--bind", "127.0.0.1", "--save", "",
         "--appendonly", "no", "--requirepass", PASSWORD, "--daemonize", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        time.sleep(0.5)
        capture = genlib.Tcpdump(tcpdump, pcap, PORT, buffer_kib=65536)
        capture.start()
        log = session()
        counters = capture.stop()
    finally:
        server.terminate()
        server.wait(10)
    version = subprocess.run([server_bin, "--version"], capture_output=True, text=True).stdout
    genlib.write_json(
        folder / "truth.json",
        {
            "made_by": "scripts/make_redis_captures.py",
            "server": f"127.0.0.1:{PORT}",
            "password": PASSWORD,
            "connections": log,
        },
    )
    genlib.write_json(
        folder / "run.json",
        {
            "tcpdump": counters,
            "capture_complete": genlib.capture_complete(counters),
            "packets": genlib.pcap_packet_count(pcap),
            "software": {**genlib.package_versions("redis"), "redis-server": version.strip()},
        },
    )
    genlib.log(f"redis_py: {sum(map(len, log.values()))} records, {counters}")


if __name__ == "__main__":
    main()
