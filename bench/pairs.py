"""The per-byte cost of WebSocket and gRPC against their HTTP twins, measured in one run.

    python3 bench/make_pair_captures.py --mb 60
    python3 bench/pairs.py [--reps 3] [--mb 60] [--modes exchanges,calls,analyze]
    python3 bench/pairs.py --build "before=PYTHONPATH=/tmp/old/src .venv/bin/python -m agentshark" \
        --build after=.venv/bin/agentshark        # two builds, interleaved too

Runs ``agentshark exchanges``, ``calls`` and ``analyze`` (``--format json -o /dev/null
--no-progress``) on the two pairs of ``make_pair_captures.py`` (``pair_sse_h1`` / ``pair_ws``,
``pair_sse_h2`` / ``pair_grpc``), interleaved: each rep runs every mode on every capture in
turn, so that a shared machine's load falls on all of them alike. Prints the medians per
capture (wall and CPU seconds, CPU being user + system of the child, the steadier figure on a
loaded machine; MB/s by CPU time) and each twin's cost per byte against its HTTP capture (its
CPU s/MB over the HTTP one's: above 1.00x a megabyte of it costs more). Each build first reads
three small test captures in every mode, untimed, so that its byte code is compiled and
cached (``PYTHONDONTWRITEBYTECODE`` is dropped for the children) before the timed runs. Raw
samples go to ``out/pairs.jsonl``. With several ``--build LABEL=COMMAND`` (an
``agentshark`` command line, ``VAR=value`` words first as in a shell) each rep runs every
build too, so a change's before/after figures share the load; each build gets its own rows.
Nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
AGENTSHARK = BENCH.parent / ".venv" / "bin" / "agentshark"
PAIRS = (("sse_h1", "ws"), ("sse_h2", "grpc"))
WARM_UP = [
    BENCH.parent / "tests" / "data" / "captures" / name / "capture.pcap"
    for name in ("ws_sdk_realtime_plain", "xai_chat_grpc", "bedrock_converse_tls13")
]
MODES = {
    "exchanges": ["exchanges", "--format", "json"],
    "exchanges --events": ["exchanges", "--format", "json", "--events"],
    "calls": ["calls", "--format", "json"],
    "analyze": ["analyze", "--format", "json"],
}


def build_command(spec: str) -> tuple[str, list[str], dict[str, str]]:
    """``LABEL=COMMAND`` -> (label, argv, environment)."""
    label, _, command = spec.partition("=")
    words = shlex.split(command)
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # byte code cached, as in a user's install
    while words and "=" in words[0] and not words[0].startswith(("/", ".")):
        name, _, value = words.pop(0).partition("=")
        env[name] = value
    return label, words, env


Build = tuple[str, list[str], dict[str, str]]


def add_build_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--build",
        action="append",
        default=[],
        help=f"LABEL=COMMAND, repeatable (default: tree={AGENTSHARK})",
    )


def warmed_builds(specs: list[str], modes: list[str]) -> list[Build]:
    """The ``--build`` specs (default: this tree's agentshark) as (label, argv, environment),
    each run first, untimed, on the warm-up captures in every mode: imports compiled and
    cached once."""
    builds = [build_command(b) for b in specs or [f"tree={AGENTSHARK}"]]
    for _, argv, env in builds:
        for warm in WARM_UP:
            for mode in modes:
                cmd = [*argv, *MODES[mode], str(warm), "--no-progress", "-o", "/dev/null"]
                subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=env)
    return builds


def measure(argv: list[str], env: dict[str, str]) -> tuple[float, float, float]:
    """(wall s, CPU s, peak RSS MB) of the child, from its own rusage (``os.wait4``)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise subprocess.CalledProcessError(proc.returncode, argv)
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--mb", type=int, default=60)
    parser.add_argument("--modes", default="exchanges,calls,analyze", help=", ".join(MODES))
    parser.add_argument("--pairs", default="ws,grpc", help="ws, grpc or both (ws,grpc)")
    add_build_argument(parser)
    args = parser.parse_args()
    modes = [m.strip() for m in args.modes.split(",")]
    pairs = [p for p in PAIRS if p[1] in args.pairs.split(",")]
    captures = {k: BENCH / "out" / f"pair_{k}_{args.mb}mb.pcap" for p in pairs for k in p}
    builds = warmed_builds(args.build, modes)
    runs: dict[tuple[str, str, str], list[tuple[float, float]]] = {}
    with (BENCH / "out" / "pairs.jsonl").open("a") as raw:
        for rep in range(args.reps):
            for mode in modes:
                for label, argv, env in builds:
                    for name, path in captures.items():
                        cmd = [*argv, *MODES[mode], str(path), "--no-progress", "-o", "/dev/null"]
                        wall, cpu, _ = measure(cmd, env)
                        runs.setdefault((label, mode, name), []).append((wall, cpu))
                        row = {"build": label, "rep": rep, "mode": mode, "capture": name}
                        raw.write(json.dumps({**row, "wall": wall, "cpu": cpu}) + "\n")
                        print(
                            f"  rep {rep + 1} {label} {mode} {name}: {wall:.2f} s, {cpu:.2f} s CPU"
                        )
    print("| build | command | capture | MB | wall s | CPU s | MB/s (CPU) | per byte vs HTTP |")
    print("|---|---|---|---|---|---|---|---|")
    for mode in modes:
        for label, _, _ in builds:
            for http, twin in pairs:
                per_mb = {}
                for name in (http, twin):
                    wall = statistics.median(r[0] for r in runs[label, mode, name])
                    cpu = statistics.median(r[1] for r in runs[label, mode, name])
                    mb = captures[name].stat().st_size / 1e6
                    per_mb[name] = cpu / mb
                    ratio = f"{per_mb[twin] / per_mb[http]:.2f}x" if name == twin else ""
                    print(
                        f"| {label} | `{mode}` | {name} | {mb:.1f} | {wall:.2f} | {cpu:.2f} | "
                        f"{mb / cpu:.1f} | {ratio} |"
                    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
