"""HTTP/3 against TLS 1.3 HTTP/2, per byte and per exchange, measured in one run.

    python3 bench/make_capture.py --h2 --mb 300     # out/bench_tls13_h2_300mb.pcap + .keys.log
    python3 bench/make_capture.py --h3 --mb 300     # out/bench_h3_300mb.pcap + .keys.log
    python3 bench/h3_vs_h2.py [--mb 300] [--reps 3] [--modes exchanges,calls,analyze]
    python3 bench/h3_vs_h2.py --h2 A.pcap --h3 B.pcap \\
        --build "before=PYTHONPATH=/tmp/old/src .venv/bin/python -m agentshark" \\
        --build after=.venv/bin/agentshark     # a change's before/after in the same run

The two captures are one workload (``make_capture.py``: same pool, seed, connections and SSE
pacing), one over TLS 1.3 with ALPN h2 on TCP, one over QUIC v1 with HTTP/3. Runs
``agentshark exchanges``, ``calls`` and ``analyze`` (``--format json -o /dev/null
--no-progress --keylog <capture>.keys.log --jobs 1``) on both, interleaved as ``pairs.py``
does (each rep runs every mode, build and capture in turn, so that a shared machine's load
falls on all alike), after the same untimed warm-up. Prints the medians: wall and CPU seconds
(user + system of the child and of its workers, with ``--jobs default``), MB/s and
exchanges/s by CPU time, the peak RSS of the child (or of its biggest worker), and HTTP/3's
cost against HTTP/2 per MB and per exchange (its CPU s per MB, or per exchange, over h2's:
above 1.00x HTTP/3 costs more), with the load average before and after. Raw samples go to
``out/h3_vs_h2.jsonl``. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

from pairs import BENCH, MODES, add_build_argument, measure, warmed_builds


def default_capture(kind: str, mb: int) -> Path:
    name = {"h2": "bench_tls13_h2", "h3": "bench_h3"}[kind]
    return BENCH / "out" / (f"{name}.pcap" if mb == 220 else f"{name}_{mb}mb.pcap")


def load_text() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--mb", type=int, default=300, help="picks the default captures")
    parser.add_argument("--h2", type=Path, help="the h2 capture (default by --mb)")
    parser.add_argument("--h3", type=Path, help="the h3 capture (default by --mb)")
    parser.add_argument("--modes", default="exchanges,calls,analyze", help=", ".join(MODES))
    parser.add_argument(
        "--jobs",
        default="1",
        help="agentshark's --jobs (default 1: one process, the per-byte cost; 'default': "
        "agentshark's own default, a worker per core for big inputs)",
    )
    add_build_argument(parser)
    args = parser.parse_args()
    jobs = [] if args.jobs == "default" else ["--jobs", args.jobs]
    modes = [m.strip() for m in args.modes.split(",")]
    captures = {
        "h2": args.h2 or default_capture("h2", args.mb),
        "h3": args.h3 or default_capture("h3", args.mb),
    }
    exchanges = {
        k: json.loads(p.with_suffix(".truth.json").read_text())["exchanges"]
        for k, p in captures.items()
    }
    builds = warmed_builds(args.build, modes)
    print(f"load average before: {load_text()}")
    runs: dict[tuple[str, str, str], list[tuple[float, float, float]]] = {}
    with (BENCH / "out" / "h3_vs_h2.jsonl").open("a") as raw:
        for rep in range(args.reps):
            for mode in modes:
                for label, argv, env in builds:
                    for name, path in captures.items():
                        keylog = ["--keylog", str(path.with_suffix(".keys.log"))]
                        cmd = [*argv, *MODES[mode], str(path), *keylog, "--no-progress", *jobs]
                        wall, cpu, rss = measure([*cmd, "-o", "/dev/null"], env)
                        runs.setdefault((label, mode, name), []).append((wall, cpu, rss))
                        row = {"build": label, "rep": rep, "mode": mode, "capture": name}
                        row["jobs"] = args.jobs
                        sample = {"wall": wall, "cpu": cpu, "rss_mb": rss, "load": load_text()}
                        raw.write(json.dumps({**row, **sample}) + "\n")
                        raw.flush()  # a run stopped early keeps its samples
                        print(
                            f"  rep {rep + 1} {label} {mode} {name}: {wall:.2f} s, "
                            f"{cpu:.2f} s CPU, {rss:.0f} MB, load {sample['load']}",
                            flush=True,
                        )
    print(f"load average after: {load_text()}")
    print(
        "| build | command | capture | MB | exchanges | wall s | CPU s | MB/s (CPU) | "
        "exchanges/s (CPU) | peak RSS MB | h3/h2 per MB | h3/h2 per exchange |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for mode in modes:
        for label, _, _ in builds:
            cpu_of: dict[str, float] = {}
            for name, path in captures.items():
                samples = runs[label, mode, name]
                wall = statistics.median(s[0] for s in samples)
                cpu = cpu_of[name] = statistics.median(s[1] for s in samples)
                rss = max(s[2] for s in samples)
                mb = path.stat().st_size / 1e6
                ratios = "| |"
                if name == "h3":
                    per_mb = (cpu / mb) / (cpu_of["h2"] / (captures["h2"].stat().st_size / 1e6))
                    per_ex = (cpu / exchanges["h3"]) / (cpu_of["h2"] / exchanges["h2"])
                    ratios = f"| {per_mb:.2f}x | {per_ex:.2f}x |"
                print(
                    f"| {label} | `{mode}` | {name} | {mb:.1f} | {exchanges[name]:,} | "
                    f"{wall:.2f} | {cpu:.2f} | {mb / cpu:.1f} | {exchanges[name] / cpu:,.0f} | "
                    f"{rss:.0f} {ratios}"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
