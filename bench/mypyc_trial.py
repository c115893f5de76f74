"""Would compiling the hot modules with mypyc pay? Build them in a copy, compare, time.

    python3 bench/mypyc_trial.py CAPTURE [--reps 3] [--mode exchanges] [--modules net,h1]

Copies ``src/`` to a temporary folder, compiles the chosen modules there with the project
venv's ``mypyc`` (the code is ``mypy --strict`` clean, so it compiles as it is), checks that
the compiled build writes the same report as the pure one, then runs both on CAPTURE,
interleaved (``agentshark MODE CAPTURE --format json -o /dev/null --no-progress --jobs 1``), and
prints each rep's CPU seconds (user + system of the child) and the median ratio. The project
keeps compiled modules only if they give 1.5x or more (issue 16); nothing is installed,
nothing in ``src/`` changes. Needs a C compiler and the Python headers.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYTHON = ROOT / ".venv" / "bin" / "python"
MYPYC = ROOT / ".venv" / "bin" / "mypyc"
GROUPS = {
    "net": [
        "net/packet.py",
        "net/tcp.py",
        "net/tcp_direction.py",
        "net/streambuf.py",
        "net/segment.py",
        "net/events.py",
    ],
    "h1": [
        "http/h1.py",
        "http/h1_heads.py",
        "http/h1_state.py",
        "http/h1_syntax.py",
        "http/h1_pairing.py",
        "http/events.py",
        "http/exchange.py",
    ],
    "pipeline": ["sources/pcap.py", "pipeline/connection.py"],
    "sse": ["framing/sse.py", "framing/events.py"],
}


def cpu_run(src: Path, argv: list[str]) -> float:
    """CPU seconds of one child run with ``src`` first on its path."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    env = {**os.environ, "PYTHONPATH": str(src)}
    subprocess.run([str(PYTHON), "-m", "agentshark", *argv], check=True, env=env, cwd=src.parent)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("capture", type=Path)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--mode", default="exchanges", choices=("exchanges", "calls", "analyze"))
    # sse: its events are made with object.__new__ (twice as fast in pure Python), which
    # mypyc's native classes refuse: compiled, `calls` and `analyze` fail on the first event
    ap.add_argument("--modules", default="net,h1,pipeline", help=f"of {','.join(GROUPS)}")
    args = ap.parse_args()
    modules = [m for g in args.modules.split(",") for m in GROUPS[g]]
    with tempfile.TemporaryDirectory(prefix="agentshark-mypyc-") as tmp:
        built = Path(tmp) / "src"
        shutil.copytree(ROOT / "src", built)
        print(f"compiling {len(modules)} modules with mypyc...", file=sys.stderr)
        subprocess.run(
            [str(MYPYC), *(f"agentshark/{m}" for m in modules)],
            check=True,
            cwd=built,
            stdout=subprocess.DEVNULL,
        )
        out = Path(tmp)
        argv = [args.mode, str(args.capture.resolve()), "--format", "json", "--no-progress"]
        argv += ["--jobs", "1"]  # one process: the per-core cost
        for name, src in (("pure", ROOT / "src"), ("compiled", built)):
            cpu_run(src, [*argv, "-o", str(out / f"{name}.json")])
        same = (out / "pure.json").read_bytes() == (out / "compiled.json").read_bytes()
        print(f"reports identical: {same}")
        times: dict[str, list[float]] = {"pure": [], "compiled": []}
        for rep in range(args.reps):
            for name, src in (("pure", ROOT / "src"), ("compiled", built)):
                t = cpu_run(src, [*argv, "-o", os.devnull])
                times[name].append(t)
                print(f"rep {rep + 1} {name:9} {t:6.2f} s CPU")
        pure, compiled = (statistics.median(times[k]) for k in ("pure", "compiled"))
        print(f"median: pure {pure:.2f} s, compiled {compiled:.2f} s: {pure / compiled:.2f}x")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
