"""Measure agentshark against the reading floor and tshark on one capture.

    python3 bench/run.py [CAPTURE] [--reps 3] [--tools agentshark,bare_loop,...]

CAPTURE defaults to bench/out/bench_h1.pcap; its counts come from ``<capture>.truth.json``
(written by ``bench/make_capture.py``). Each tool runs as its own child process, so the wall
time includes process start (page cache warm) and the peak RSS is that command's own (``/usr/bin/
time -v``, or ``os.wait4`` when GNU time is absent). With ``--reps N`` the median wall time is
kept (peak RSS: the largest). Prints a table (MB/s, packets/s, exchanges/s, peak RSS), the
ratios of agentshark to the others, and appends one JSON line per tool to
``bench/out/results.jsonl``. Nothing here asserts a timing.

Tools (``--tools``, comma-separated; default all):
  agentshark      agentshark exchanges FILE --format json > /dev/null
  bare_loop       python bench/bare_loop.py FILE (record header + f.read per record)
  tshark_read     tshark -r FILE -q                     (reads only, no dissection)
  tshark_filter   tshark -r FILE -d ... -Y http -q      (dissects, prints nothing)
  tshark_fields   tshark ... -Y http -T fields -e http.request.method -e http.response.code
                  -e http.file_data | wc -l             (bodies as fields; lines = 2 x exchanges)
  tshark_json     tshark ... -Y http -T json | wc -c
A tool that is missing or fails gets a row saying so (with its stderr tail); the run goes on.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
OUT_DIR = BENCH_DIR / "out"
DEFAULT_CAPTURE = OUT_DIR / "bench_h1.pcap"
GNU_TIME = Path("/usr/bin/time")
ALL_TOOLS = (
    "agentshark",
    "bare_loop",
    "tshark_read",
    "tshark_filter",
    "tshark_fields",
    "tshark_json",
)


@dataclass
class Command:
    """One measured command: ``argv`` run directly, or ``shell`` run by bash with pipefail."""

    tool: str
    argv: list[str] | None = None
    shell: str | None = None
    stdout_to_null: bool = True
    note: str = ""

    def display(self) -> str:
        return self.shell if self.shell is not None else shlex.join(self.argv or [])

    def base_argv(self) -> list[str]:
        if self.shell is not None:
            return ["bash", "-o", "pipefail", "-c", self.shell]
        assert self.argv is not None
        return self.argv


@dataclass
class Sample:
    wall: float
    rss_kib: int
    rc: int
    stdout: str
    stderr_tail: str


@dataclass
class Result:
    tool: str
    command: str
    samples: list[Sample] = field(default_factory=list)
    skipped: str | None = None

    @property
    def ok(self) -> bool:
        return self.skipped is None and bool(self.samples) and all(s.rc == 0 for s in self.samples)

    @property
    def wall(self) -> float:
        return statistics.median(s.wall for s in self.samples)

    @property
    def rss_mb(self) -> float:
        return max(s.rss_kib for s in self.samples) / 1024


# --------------------------------------------------------------------------- measuring


def _tail(text: str, lines: int = 12, chars: int = 2000) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])[-chars:]


def measure(cmd: Command, timeout: float) -> Sample:
    """Run ``cmd`` once in its own child process (own process group, so a timeout ends all of
    it): wall time from before the fork to after the reap, and the child's peak RSS."""
    with tempfile.TemporaryDirectory(prefix="agentshark-bench-") as tmp:
        err_path = Path(tmp) / "stderr"
        out_path = Path(tmp) / "stdout"
        time_path = Path(tmp) / "time"
        argv = cmd.base_argv()
        if GNU_TIME.exists():
            argv = [str(GNU_TIME), "-v", "-o", str(time_path), *argv]
        with err_path.open("wb") as err, out_path.open("wb") as out:
            t0 = time.perf_counter()
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stderr=err,
                stdout=subprocess.DEVNULL if cmd.stdout_to_null else out,
                start_new_session=True,
            )
            try:
                rss_kib = _reap(proc, timeout, t0)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                return Sample(
                    wall=time.perf_counter() - t0,
                    rss_kib=0,
                    rc=-9,
                    stdout="",
                    stderr_tail=f"timed out after {timeout:.0f} s",
                )
            wall = time.perf_counter() - t0
        stderr = err_path.read_text(errors="replace")
        rc = proc.returncode
        if GNU_TIME.exists() and time_path.exists():
            report = time_path.read_text(errors="replace")
            m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", report)
            rss_kib = int(m.group(1)) if m else rss_kib
            m = re.search(r"Exit status: (\d+)", report)
            rc = int(m.group(1)) if m else rc
            if "Command terminated by signal" in report:
                rc = rc or -1
        return Sample(
            wall=wall,
            rss_kib=rss_kib,
            rc=rc,
            stdout=out_path.read_text(errors="replace")[-10_000:],
            stderr_tail=_tail(stderr),
        )


def _reap(proc: subprocess.Popen[bytes], timeout: float, t0: float) -> int:
    """Wait for ``proc`` with ``os.wait4`` (its rusage covers the child and every descendant it
    reaped), returning the peak RSS in KiB."""
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid == proc.pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            return int(usage.ru_maxrss)
        if time.perf_counter() - t0 > timeout:
            raise subprocess.TimeoutExpired(proc.args, timeout)
        time.sleep(0.001)


# --------------------------------------------------------------------------- the tools


def find_agentshark(explicit: str | None) -> str | None:
    if explicit:
        return explicit
    venv = REPO_ROOT / ".venv" / "bin" / "agentshark"
    return str(venv) if venv.exists() else shutil.which("agentshark")


def bare_loop_python() -> str:
    venv = REPO_ROOT / ".venv" / "bin" / "python"
    return str(venv) if venv.exists() else sys.executable


def commands(capture: Path, port: int, args: argparse.Namespace) -> dict[str, Command | str]:
    """Each tool's command, or why it is skipped."""
    cap = shlex.quote(str(capture))
    out: dict[str, Command | str] = {}
    agentshark = find_agentshark(args.agentshark)
    out["agentshark"] = (
        Command("agentshark", [agentshark, "exchanges", str(capture), "--format", "json"])
        if agentshark
        else "agentshark not found (.venv/bin or PATH)"
    )
    out["bare_loop"] = Command(
        "bare_loop",
        [bare_loop_python(), str(BENCH_DIR / "bare_loop.py"), str(capture)],
        stdout_to_null=False,
    )
    tshark = shutil.which("tshark")
    if tshark is None:
        reason = "tshark is not installed (bench/setup.sh --tshark installs it)"
        for tool in ALL_TOOLS[2:]:
            out[tool] = reason
        return out
    decode = f"-d tcp.port=={port},http"
    out["tshark_read"] = Command("tshark_read", [tshark, "-r", str(capture), "-q"])
    out["tshark_filter"] = Command(
        "tshark_filter", [tshark, "-r", str(capture), *decode.split(), "-Y", "http", "-q"]
    )
    out["tshark_fields"] = Command(
        "tshark_fields",
        shell=f"tshark -r {cap} {decode} -Y http -T fields "
        "-e http.request.method -e http.response.code -e http.file_data | wc -l",
        stdout_to_null=False,
        note="output: lines",
    )
    out["tshark_json"] = Command(
        "tshark_json",
        shell=f"tshark -r {cap} {decode} -Y http -T json | wc -c",
        stdout_to_null=False,
        note="output: bytes of JSON",
    )
    return out


# --------------------------------------------------------------------------- reporting


def machine() -> dict[str, Any]:
    model = ""
    with contextlib.suppress(OSError):
        model = next(
            (
                ln.split(":", 1)[1].strip()
                for ln in Path("/proc/cpuinfo").read_text().splitlines()
                if ln.startswith("model name")
            ),
            "",
        )
    tshark = shutil.which("tshark")
    tshark_version = ""
    if tshark:
        first = subprocess.run(
            [tshark, "--version"], capture_output=True, text=True, check=False
        ).stdout.splitlines()
        tshark_version = first[0] if first else ""
    return {
        "nproc": os.cpu_count(),
        "cpu": model,
        "kernel": platform.release(),
        "python": platform.python_version(),
        "tshark": tshark_version,
        "rss_from": "/usr/bin/time -v" if GNU_TIME.exists() else "os.wait4 rusage",
    }


def count_records(path: Path) -> int:
    """Packets in a classic pcap file, for a capture without a truth file (0 if not pcap)."""
    with path.open("rb") as f:
        head = f.read(24)
        if head[:4] not in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1"):
            return 0
        n = 0
        while len(hdr := f.read(16)) == 16:
            f.seek(int.from_bytes(hdr[8:12], "little"), os.SEEK_CUR)
            n += 1
    return n


def warm_page_cache(path: Path) -> None:
    with path.open("rb") as f:
        while f.read(8 << 20):
            pass


def check_output(tool: str, stdout: str, truth: dict[str, Any], exchanges: int) -> str:
    """A one-line sanity check of what the tool printed against the truth file."""
    text = stdout.strip()
    if tool == "bare_loop" and text:
        packets = json.loads(text)["packets"]
        return f"{packets} packets" + (
            "" if packets == truth.get("packets") else f" (truth: {truth.get('packets')})"
        )
    if tool == "tshark_fields" and text.isdigit():
        want = 2 * exchanges
        return f"{int(text)} lines" + (
            " = 2 x exchanges" if int(text) == want else f" (2 x exchanges = {want})"
        )
    if tool == "tshark_json" and text.isdigit():
        return f"{int(text) / 1e9:.2f} GB of JSON"
    return ""


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="\n\n".join(__doc__.split("\n\n")[2:]),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("capture", nargs="?", type=Path, default=DEFAULT_CAPTURE)
    ap.add_argument("--truth", type=Path, help="default: <capture>.truth.json")
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--tools", default=",".join(ALL_TOOLS))
    ap.add_argument("--agentshark", help="the agentshark executable")
    ap.add_argument("--port", type=int, help="HTTP port for tshark -d (default: from the truth)")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per command")
    ap.add_argument("--results", type=Path, default=OUT_DIR / "results.jsonl")
    args = ap.parse_args()

    capture: Path = args.capture.resolve()
    if not capture.exists():
        print(
            f"{capture} does not exist: make it with python3 bench/make_capture.py", file=sys.stderr
        )
        return 2
    truth_path = args.truth or capture.with_suffix(".truth.json")
    truth: dict[str, Any] = json.loads(truth_path.read_text()) if truth_path.exists() else {}
    size = capture.stat().st_size
    packets = int(truth.get("packets", 0)) or count_records(capture)
    exchanges = int(truth.get("exchanges", len(truth.get("requests", []))))
    port = args.port or int(truth.get("port", 80))
    tools = [t.strip() for t in args.tools.split(",") if t.strip()]
    unknown = set(tools) - set(ALL_TOOLS)
    if unknown:
        ap.error(f"unknown tools: {', '.join(sorted(unknown))}")

    print(
        f"capture {capture}: {size / 1e6:.1f} MB, {packets:,} packets, {exchanges:,} "
        f"exchanges (truth: {truth_path.name if truth else 'missing'}); reps {args.reps}"
    )
    warm_page_cache(capture)
    cmds = commands(capture, port, args)
    results: dict[str, Result] = {}
    for tool in tools:
        cmd = cmds[tool]
        if isinstance(cmd, str):
            results[tool] = Result(tool, "", skipped=cmd)
            print(f"  {tool}: skipped: {cmd}")
            continue
        res = results[tool] = Result(tool, cmd.display())
        for rep in range(args.reps):
            sample = measure(cmd, args.timeout)
            res.samples.append(sample)
            print(
                f"  {tool} rep {rep + 1}: {sample.wall:.2f} s, {sample.rss_kib / 1024:.0f} MB "
                f"RSS, rc {sample.rc}",
                flush=True,
            )
            if sample.rc != 0:
                break

    report(results, size, packets, exchanges, truth, capture, args)
    return 0


def report(
    results: dict[str, Result],
    size: int,
    packets: int,
    exchanges: int,
    truth: dict[str, Any],
    capture: Path,
    args: argparse.Namespace,
) -> None:
    head = (
        f"{'tool':<14} {'wall s':>8} {'MB/s':>9} {'kpkt/s':>9} {'exch/s':>9} {'RSS MB':>8}  check"
    )
    print()
    print(head)
    print("-" * len(head))
    info = machine()
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    lines: list[str] = []
    for tool, res in results.items():
        row: dict[str, Any] = {
            "ts": stamp,
            "capture": str(capture),
            "pcap_bytes": size,
            "packets": packets,
            "exchanges": exchanges,
            "tool": tool,
            "command": res.command,
            "reps": len(res.samples),
            "machine": info,
        }
        if res.skipped:
            print(f"{tool:<14} skipped: {res.skipped}")
            row.update(ok=False, skipped=res.skipped)
        elif not res.ok:
            last = res.samples[-1]
            print(f"{tool:<14} FAILED (rc {last.rc}); stderr tail:")
            for line in last.stderr_tail.splitlines():
                print(f"    | {line}")
            row.update(
                ok=False,
                rc=last.rc,
                stderr_tail=last.stderr_tail,
                wall_s=[round(s.wall, 4) for s in res.samples],
            )
        else:
            wall = res.wall
            check = check_output(tool, res.samples[-1].stdout, truth, exchanges)
            print(
                f"{tool:<14} {wall:8.2f} {size / 1e6 / wall:9.1f} {packets / wall / 1e3:9.1f} "
                f"{exchanges / wall:9.0f} {res.rss_mb:8.0f}  {check}"
            )
            row.update(
                ok=True,
                wall_median_s=round(wall, 4),
                wall_s=[round(s.wall, 4) for s in res.samples],
                mb_per_s=round(size / 1e6 / wall, 2),
                packets_per_s=round(packets / wall),
                exchanges_per_s=round(exchanges / wall),
                peak_rss_mb=round(res.rss_mb, 1),
                check=check,
            )
        lines.append(json.dumps(row))
    print(
        "(MB = 10^6 bytes of pcap; wall time includes process start; RSS is the peak of the "
        "command's own process tree)"
    )

    base = results.get("agentshark")
    print()
    if base is None:
        print("ratios: agentshark was not measured")
    elif not base.ok:
        print("ratios: agentshark did not run successfully, no ratios")
    else:
        for tool, res in results.items():
            if tool != "agentshark" and res.ok:
                print(
                    f"agentshark vs {tool:<14} MB/s ratio {res.wall / base.wall:7.3f}  "
                    f"(agentshark takes {base.wall / res.wall:6.2f}x its time), "
                    f"RSS ratio {base.rss_mb / res.rss_mb:.2f}"
                )
    args.results.parent.mkdir(parents=True, exist_ok=True)
    with args.results.open("a") as f:
        f.writelines(line + "\n" for line in lines)
    print(f"\nappended {len(lines)} results to {args.results}")


if __name__ == "__main__":
    sys.exit(main())
