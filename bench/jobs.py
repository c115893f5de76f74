"""``--jobs 1`` against ``--jobs N``, and ``analyze`` on 1x against 2x input, interleaved.

    python3 bench/jobs.py out/bench_h1_60mb.pcap --jobs 1,2 --reps 3
    python3 bench/jobs.py out/bench_h1_60mb.pcap --double out/bench_h1_120mb.pcap \\
        --modes analyze --jobs 1 \\
        --build "before=PYTHONPATH=/work/main/src .venv/bin/python -m agentshark" \\
        --build after=.venv/bin/agentshark --one-process before

Every (build, mode, jobs, capture) command runs once per rep, in turn, so that a loaded
machine weighs on all of them alike: ``agentshark MODE CAPTURE --format json --jobs N
--no-progress > /dev/null`` (with ``--keylog``, or the capture's ``NAME.keys.log`` when there
is one) (a build named by ``--one-process`` gets no ``--jobs``: a tree
from before it existed). Printed per row: the median wall time (process start included),
MB/s, and the CPU seconds of the process tree (user + system, workers included); then the
speed-up of each N over ``--jobs 1`` (wall), and with ``--double`` the ``analyze`` time of the
2x capture over the 1x one per build (2.00x is linear; the garbage collector's full
collections of the kept calls made it more). Rows go to ``out/jobs.jsonl``. Nothing here
asserts a timing.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
AGENTSHARK = BENCH.parent / ".venv" / "bin" / "agentshark"


def build_command(spec: str) -> tuple[str, list[str], dict[str, str]]:
    """``LABEL=COMMAND`` -> (label, argv, environment); leading NAME=VALUE words are env."""
    label, _, command = spec.partition("=")
    words = shlex.split(command)
    env = dict(os.environ)
    while words and "=" in words[0] and not words[0].startswith(("/", ".")):
        name, _, value = words.pop(0).partition("=")
        env[name] = value
    return label, words, env


def run_once(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall s, CPU s of the child and the workers it waited for)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, env=env)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("capture", type=Path)
    ap.add_argument("--double", type=Path, help="the same workload at twice the size")
    ap.add_argument("--jobs", default="1,2", help="comma-separated numbers of processes")
    ap.add_argument("--modes", default="exchanges,calls,analyze")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument(
        "--keylog", type=Path, help="a key log for a TLS capture (else its name.keys.log)"
    )
    ap.add_argument("--build", action="append", help="LABEL=COMMAND (repeatable)")
    ap.add_argument("--one-process", action="append", default=[], help="builds without --jobs")
    ap.add_argument("--results", type=Path, default=BENCH / "out" / "jobs.jsonl")
    args = ap.parse_args()
    builds = [build_command(b) for b in args.build or [f"tree={AGENTSHARK}"]]
    jobs = [int(j) for j in args.jobs.split(",")]
    modes = args.modes.split(",")
    captures = [args.capture.resolve()] + ([args.double.resolve()] if args.double else [])
    rows: dict[tuple[str, str, int, str], list[tuple[float, float]]] = {}
    load = os.getloadavg()[0]
    for rep in range(args.reps):
        for capture in captures:
            for mode in modes:
                if capture != captures[0] and mode != "analyze":
                    continue
                for label, argv, env in builds:
                    for n in [1] if label in args.one_process else jobs:
                        flags = [] if label in args.one_process else ["--jobs", str(n)]
                        cmd = [*argv, mode, str(capture), "--format", "json", "--no-progress"]
                        keylog = args.keylog or capture.with_suffix(".keys.log")
                        if keylog.exists():  # a TLS capture is read decrypted
                            cmd += ["--keylog", str(keylog)]
                        wall, cpu = run_once([*cmd, *flags], env)
                        rows.setdefault((label, mode, n, capture.name), []).append((wall, cpu))
                        print(
                            f"rep {rep + 1} {label} {mode} --jobs {n} {capture.name}: "
                            f"{wall:.2f} s wall, {cpu:.2f} s CPU",
                            flush=True,
                        )
    load = max(load, os.getloadavg()[0])
    out: list[dict[str, object]] = []
    print(f"\nload average (1 min) up to {load:.1f} on {os.cpu_count()} cores during the run")
    print("| build | mode | jobs | capture | MB | wall s | MB/s | CPU s | speed-up vs --jobs 1 |")
    print("|---|---|---|---|---|---|---|---|---|")
    for (label, mode, n, name), samples in rows.items():
        size = next(c for c in captures if c.name == name).stat().st_size / 1e6
        wall = statistics.median(s[0] for s in samples)
        cpu = statistics.median(s[1] for s in samples)
        base = rows.get((label, mode, 1, name))
        speed = statistics.median(s[0] for s in base) / wall if base else None
        shown = f"{speed:.2f}x" if speed is not None and n != 1 else ""
        print(
            f"| {label} | {mode} | {n} | {name} | {size:.1f} | {wall:.2f} | {size / wall:.1f} "
            f"| {cpu:.2f} | {shown} |"
        )
        out.append(
            {
                "build": label,
                "mode": mode,
                "jobs": n,
                "capture": name,
                "mb": round(size, 1),
                "wall_s": [round(s[0], 3) for s in samples],
                "cpu_s": [round(s[1], 3) for s in samples],
                "load": round(load, 1),
            }
        )
    if args.double:
        one, two = captures[0].name, captures[1].name
        ratio = captures[1].stat().st_size / captures[0].stat().st_size
        print(f"\nanalyze, {two} ({ratio:.2f}x the bytes) against {one}:")
        for label, _, _ in builds:
            for n in [1] if label in args.one_process else jobs:
                a, b = rows.get((label, "analyze", n, one)), rows.get((label, "analyze", n, two))
                if a and b:
                    wa = statistics.median(s[0] for s in a)
                    wb = statistics.median(s[0] for s in b)
                    ca = statistics.median(s[1] for s in a)
                    cb = statistics.median(s[1] for s in b)
                    print(
                        f"  {label} --jobs {n}: wall {wb / wa:.2f}x, CPU {cb / ca:.2f}x "
                        f"(linear: {ratio:.2f}x)"
                    )
    args.results.parent.mkdir(parents=True, exist_ok=True)
    with args.results.open("a") as f:
        f.writelines(json.dumps(row) + "\n" for row in out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
