"""Make the keep-alive capture of the fault suite: tests/data/faults/h1_keepalive.pcap.

    python3 scripts/make_fault_captures.py

The benchmark's generator (``bench/make_capture.py``: a hypercorn server replaying corpus
responses, httpx keep-alive clients, tcpdump on loopback, every response checked byte for byte
by the client) run small: only the pool entries whose request and response bodies are at most
3000 bytes, 4 connections of 60 exchanges each, stopped at 1.9 MB so the file can be committed.
A few hundred exchanges make the suite's "unaffected identical >= 99.5%" figure meaningful.
The credentials in the requests are the generator's fake ones. Writes the pcap and
``h1_keepalive.truth.json`` (the generator's counts, from the client's own records).
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import genlib  # noqa: E402

NAME = "faults_h1_keepalive"
OUT = ROOT / "tests" / "data" / "faults"
MAX_BODY = 3000


def main() -> int:
    genlib.reexec_in_gen_venv(Path(__file__))
    import make_capture  # the generator venv's imports: only once re-run in it

    load = make_capture.load_pool

    def small_pool(corpus: Path, pool_path: Path, rebuild: bool) -> dict[str, Any]:
        pool = load(corpus, pool_path, rebuild)
        entries = [
            e
            for e in pool["entries"]
            if len(e["req_body"]) <= MAX_BODY and len(e["resp_body"]) <= MAX_BODY
        ]
        return {**pool, "entries": entries}

    make_capture.load_pool = small_pool
    sys.argv = [
        "make_capture.py",
        *("--mb", "1.9", "--name", NAME, "--conns", "4", "--per-conn", "60"),
        *("--port", "18091", "--seed", "7"),
    ]
    status: int = make_capture.main()
    if status:
        return status
    OUT.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(genlib.OUT_DIR / f"{NAME}.pcap", OUT / "h1_keepalive.pcap")
    shutil.copyfile(genlib.OUT_DIR / f"{NAME}.truth.json", OUT / "h1_keepalive.truth.json")
    print(f"wrote {OUT / 'h1_keepalive.pcap'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
