"""The per-byte cost of the gRPC path against the plain HTTP/2 path, in one run.

    python3 bench/make_grpc_capture.py --mb 50
    python3 bench/grpc_vs_h2.py [--reps 3] [--mb 50]

Runs ``agentshark exchanges --format json`` (with and without ``--events``) and ``agentshark
calls --format json`` on ``out/bench_grpc_<mb>mb.pcap`` and ``out/bench_h2c_<mb>mb.pcap``,
the two interleaved, ``--reps`` times each, and prints the medians: wall and CPU seconds
(user + system of the child: on a shared machine the CPU time is the steadier figure), MB/s
and exchanges/s by CPU time, and gRPC's cost per byte relative to h2. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
AGENTSHARK = BENCH.parent / ".venv" / "bin" / "agentshark"
MODES = {
    "exchanges": ["exchanges", "--format", "json"],
    "exchanges --events": ["exchanges", "--format", "json", "--events"],
    "calls": ["calls", "--format", "json"],
}


def measure(argv: list[str]) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--mb", type=int, default=50)
    parser.add_argument("--agentshark", default=str(AGENTSHARK))
    args = parser.parse_args()
    captures = {k: BENCH / "out" / f"bench_{k}_{args.mb}mb.pcap" for k in ("grpc", "h2c")}
    runs: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for _ in range(args.reps):
        for mode, argv in MODES.items():
            for name, path in captures.items():
                cmd = [args.agentshark, *argv, str(path), "--no-progress", "-o", "/dev/null"]
                runs.setdefault((mode, name), []).append(measure(cmd))
    head = "| command | capture | wall s | CPU s | MB/s (CPU) | exchanges/s (CPU) | gRPC / h2 |"
    print(head)
    print("|---|---|---|---|---|---|---|")
    for mode in MODES:
        per_byte = {}
        for name, path in captures.items():
            wall = statistics.median(r[0] for r in runs[mode, name])
            cpu = statistics.median(r[1] for r in runs[mode, name])
            mb = path.stat().st_size / 1e6
            per_byte[name] = cpu / mb
            exchanges = json.loads(path.with_suffix(".truth.json").read_text())["calls"]
            ratio = f"{per_byte['grpc'] / per_byte['h2c']:.2f}x" if name == "h2c" else ""
            print(
                f"| `{mode}` | {name} | {wall:.2f} | {cpu:.2f} | {mb / cpu:.1f} | "
                f"{exchanges / cpu:,.0f} | {ratio} |"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
