"""Measure agentshark against the reading floor and tshark on one capture.

    python3 bench/run.py [CAPTURE] [--reps 3] [--tools agentshark,bare_loop,...]
    python3 bench/run.py bench/out/bench_tls13_h1.pcap [--keylog K] [--baseline CLEAR.pcap]

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

TLS captures (``--keylog K``, found by itself as ``<capture>.keys.log``): agentshark gets
``--keylog K``; tshark gets ``-o tls.keylog_file:K -d tcp.port==PORT,tls``, filter
``http || http2``, and ``tshark_fields`` prints ``-e http.file_data -e http2.data.data``. The
same tools then run on the cleartext capture of the same workload (``--baseline``, default
bench/out/bench_h1.pcap, ``--baseline none`` to skip), with the same filter and fields, and the
decryption cost is printed per tool: cleartext MB/s / TLS MB/s and cleartext exchanges/s /
TLS exchanges/s (for an h2 capture that also counts HTTP/2 against HTTP/1.1).
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
TSHARK_TOOLS = ("tshark_read", "tshark_filter", "tshark_fields", "tshark_json")
ALL_TOOLS = ("agentshark", "agentshark_calls", "agentshark_analyze", "bare_loop", *TSHARK_TOOLS)


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
    check: str = ""  # agentshark's: exchanges counted in an extra, untimed run

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


def commands(
    capture: Path,
    port: int,
    args: argparse.Namespace,
    keylog: Path | None = None,
    *,
    tls_fields: bool = False,
) -> dict[str, Command | str]:
    """Each tool's command, or why it is skipped. With ``keylog`` the capture is TLS: tshark
    decrypts (``-d tcp.port==PORT,tls``) and agentshark gets ``--keylog``. ``tls_fields`` (set
    for both captures of a decryption-cost comparison) makes tshark filter ``http || http2`` and
    print the body fields of both versions, so that the two captures run the same command."""
    cap = shlex.quote(str(capture))
    out: dict[str, Command | str] = {}
    agentshark = find_agentshark(args.agentshark)
    keylog_opt = ["--keylog", str(keylog)] if keylog else []
    out["agentshark"] = (
        Command(
            "agentshark", [agentshark, "exchanges", str(capture), *keylog_opt, "--format", "json"]
        )
        if agentshark
        else "agentshark not found (.venv/bin or PATH)"
    )
    out["agentshark_calls"] = (
        Command(
            "agentshark_calls",
            [agentshark, "calls", str(capture), *keylog_opt, "--format", "json"],
        )
        if agentshark
        else "agentshark not found (.venv/bin or PATH)"
    )
    out["agentshark_analyze"] = (
        Command(
            "agentshark_analyze",
            [agentshark, "analyze", str(capture), *keylog_opt, "--format", "json"],
        )
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
        for tool in TSHARK_TOOLS:
            out[tool] = reason
        return out
    if keylog:
        decode = ["-o", f"tls.keylog_file:{keylog}", "-d", f"tcp.port=={port},tls"]
    else:
        decode = ["-d", f"tcp.port=={port},http"]
    if keylog or tls_fields:
        display = "http || http2"
        fields = "-e http.file_data -e http2.data.data"
    else:
        display = "http"
        fields = "-e http.request.method -e http.response.code -e http.file_data"
    shell_decode = shlex.join(decode)
    shell_display = shlex.quote(display)
    out["tshark_read"] = Command("tshark_read", [tshark, "-r", str(capture), "-q"])
    out["tshark_filter"] = Command(
        "tshark_filter", [tshark, "-r", str(capture), *decode, "-Y", display, "-q"]
    )
    out["tshark_fields"] = Command(
        "tshark_fields",
        shell=f"tshark -r {cap} {shell_decode} -Y {shell_display} -T fields {fields} | wc -l",
        stdout_to_null=False,
        note="output: lines",
    )
    out["tshark_json"] = Command(
        "tshark_json",
        shell=f"tshark -r {cap} {shell_decode} -Y {shell_display} -T json | wc -c",
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
    if tool == "tshark_fields" and text.isdigit() and "HTTP/2" in truth.get("http_versions", {}):
        return f"{int(text)} lines (one per packet with HTTP/2 frames)"
    if tool == "tshark_fields" and text.isdigit():
        want = 2 * exchanges
        return f"{int(text)} lines" + (
            " = 2 x exchanges" if int(text) == want else f" (2 x exchanges = {want})"
        )
    if tool == "tshark_json" and text.isdigit():
        return f"{int(text) / 1e9:.2f} GB of JSON"
    return ""


def count_agentshark_exchanges(cmd: Command, timeout: float, want: int) -> str:
    """Run agentshark's command once more, untimed, into a file, and count the exchanges of its
    JSON report (so that a TLS capture it could not decrypt shows, instead of looking fast)."""
    with tempfile.TemporaryDirectory(prefix="agentshark-bench-") as tmp:
        out = Path(tmp) / "report.json"
        proc = subprocess.run(
            [*cmd.base_argv(), "--no-progress", "-o", str(out)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=timeout,
            check=False,
        )
        if proc.returncode != 0 or not out.exists():
            return f"(check run: rc {proc.returncode})"
        try:
            report = json.loads(out.read_text())
        except ValueError:
            return "(check run: not JSON)"
    exchanges = report.get("exchanges") if isinstance(report, dict) else None
    if not isinstance(exchanges, list):
        return "(check run: no exchanges list)"
    done = sum(1 for e in exchanges if isinstance(e, dict) and e.get("response"))
    return f"{len(exchanges)} exchanges, {done} with a response" + (
        "" if len(exchanges) == done == want else f" (truth: {want})"
    )


@dataclass
class Target:
    """One capture to measure, with its counts (from its truth file when there is one)."""

    capture: Path
    truth: dict[str, Any]
    truth_name: str
    size: int
    packets: int
    exchanges: int
    port: int
    keylog: Path | None
    role: str  # "capture", or "tls" / "baseline" in a decryption-cost run

    @classmethod
    def load(
        cls,
        capture: Path,
        truth_path: Path | None,
        port: int | None,
        keylog: Path | None,
        role: str,
    ) -> Target:
        truth_path = truth_path or capture.with_suffix(".truth.json")
        truth: dict[str, Any] = json.loads(truth_path.read_text()) if truth_path.exists() else {}
        return cls(
            capture=capture,
            truth=truth,
            truth_name=truth_path.name if truth else "missing",
            size=capture.stat().st_size,
            packets=int(truth.get("packets", 0)) or count_records(capture),
            exchanges=int(truth.get("exchanges", len(truth.get("requests", [])))),
            port=port or int(truth.get("port", 80)),
            keylog=keylog,
            role=role,
        )

    def describe(self) -> str:
        keys = f", key log {self.keylog.name}" if self.keylog else ""
        return (
            f"capture {self.capture}: {self.size / 1e6:.1f} MB, {self.packets:,} packets, "
            f"{self.exchanges:,} exchanges (truth: {self.truth_name}){keys}"
        )


def default_keylog(capture: Path) -> Path | None:
    """``<capture>.keys.log`` (what bench/make_capture.py --tls writes), when it exists."""
    path = capture.with_suffix(".keys.log")
    return path if path.exists() else None


def measure_tools(
    target: Target, tools: list[str], cmds: dict[str, Command | str], args: argparse.Namespace
) -> dict[str, Result]:
    print(f"{target.describe()}; reps {args.reps}")
    warm_page_cache(target.capture)
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
        if tool == "agentshark" and res.ok:
            res.check = count_agentshark_exchanges(cmd, args.timeout, target.exchanges)
    return results


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
    ap.add_argument(
        "--keylog", type=Path, help="NSS key log of a TLS capture (default: <capture>.keys.log)"
    )
    ap.add_argument(
        "--baseline",
        default=str(DEFAULT_CAPTURE),
        help="cleartext capture measured with a TLS one, for the decryption cost ('none': skip)",
    )
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per command")
    ap.add_argument("--results", type=Path, default=OUT_DIR / "results.jsonl")
    args = ap.parse_args()

    capture: Path = args.capture.resolve()
    if not capture.exists():
        print(
            f"{capture} does not exist: make it with python3 bench/make_capture.py", file=sys.stderr
        )
        return 2
    keylog = args.keylog.resolve() if args.keylog else default_keylog(capture)
    if keylog is not None and not keylog.exists():
        print(f"{keylog} does not exist", file=sys.stderr)
        return 2
    tools = [t.strip() for t in args.tools.split(",") if t.strip()]
    unknown = set(tools) - set(ALL_TOOLS)
    if unknown:
        ap.error(f"unknown tools: {', '.join(sorted(unknown))}")

    baseline: Target | None = None
    if keylog is not None and args.baseline != "none":
        base_path = Path(args.baseline).resolve()
        if base_path.exists() and base_path != capture:
            baseline = Target.load(base_path, None, None, None, "baseline")
        else:
            print(f"baseline {base_path} is missing: no decryption cost (make_capture.py)")
    target = Target.load(capture, args.truth, args.port, keylog, "tls" if baseline else "capture")
    cmds = commands(capture, target.port, args, keylog, tls_fields=baseline is not None)
    results = measure_tools(target, tools, cmds, args)
    report(results, target, args)
    if baseline is None:
        return 0
    print()
    base_cmds = commands(baseline.capture, baseline.port, args, None, tls_fields=True)
    base_results = measure_tools(baseline, tools, base_cmds, args)
    report(base_results, baseline, args)
    decryption_cost(target, results, baseline, base_results)
    return 0


def report(results: dict[str, Result], target: Target, args: argparse.Namespace) -> None:
    size, packets, exchanges = target.size, target.packets, target.exchanges
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
            "capture": str(target.capture),
            "pcap_bytes": size,
            "packets": packets,
            "exchanges": exchanges,
            "keylog": str(target.keylog) if target.keylog else None,
            "role": target.role,
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
            check = res.check or check_output(tool, res.samples[-1].stdout, target.truth, exchanges)
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


def decryption_cost(
    tls: Target, tls_results: dict[str, Result], clear: Target, clear_results: dict[str, Result]
) -> None:
    """Per tool, how much more a megabyte and an exchange of the TLS capture cost than of the
    cleartext one (both measured in this run, with the same tshark filter and fields)."""
    print(f"\ndecryption cost: {tls.capture.name} against {clear.capture.name} (this run)")
    head = (
        f"{'tool':<14} {'TLS MB/s':>9} {'clear MB/s':>10} {'cost/MB':>8} "
        f"{'TLS exch/s':>10} {'clear exch/s':>12} {'cost/exch':>9} {'RSS TLS/clear':>14}"
    )
    print(head)
    print("-" * len(head))
    for tool, res in tls_results.items():
        other = clear_results.get(tool)
        if not res.ok or other is None or not other.ok:
            why = "TLS run failed" if not res.ok else "cleartext run failed"
            print(f"{tool:<14} no ratio ({why})")
            continue
        t_mbs, c_mbs = tls.size / 1e6 / res.wall, clear.size / 1e6 / other.wall
        t_xs = tls.exchanges / res.wall if tls.exchanges else 0.0
        c_xs = clear.exchanges / other.wall if clear.exchanges else 0.0
        per_x = f"{c_xs / t_xs:8.2f}x" if t_xs and c_xs else f"{'-':>9}"
        print(
            f"{tool:<14} {t_mbs:9.1f} {c_mbs:10.1f} {c_mbs / t_mbs:7.2f}x "
            f"{t_xs:10.0f} {c_xs:12.0f} {per_x} {res.rss_mb / other.rss_mb:14.2f}"
        )
    print("(cost = cleartext rate / TLS rate: how many times longer a MB or an exchange takes)")


if __name__ == "__main__":
    sys.exit(main())
