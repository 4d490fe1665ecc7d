"""``mariabinlog dump`` next to the real ``mariadb-binlog``: wall time and peak memory.

Makes (once, cached) a ~1 GB ROW-format binlog with a real MariaDB server
(``bench/workload.py``), then in one run times both tools on it, each in its
own process pinned to one CPU (``taskset -c 0``), output to /dev/null, for

* ``plain``: ``mariadb-binlog FILE`` (headers and BINLOG base64 blocks);
* ``-v``: plus the ``###`` pseudo-SQL of every row;
* ``-vv --base64-output=decode-rows``: the rows with type comments, no base64.

Prints one table: wall seconds, CPU seconds (user + system: the wall time of a
machine with nothing else running), MB/s and peak RSS of each tool, and the
ratios mariabinlog / mariadb-binlog (goal: <= 1.0).  Both tools' outputs are
compared by size and checksum first (on by default, ``--no-verify`` skips that).
``--src DIR`` runs the mariabinlog found in another source tree (to compare
two versions with the same script).

    python bench/dump.py [--bytes 1G] [--repeat 1] [--modes plain,v,vv] [--cpu 0] [--src DIR]
"""

from __future__ import annotations

import argparse
import compileall
import hashlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT / "bench"))

from workload import make_binlog, parse_size

MODES: dict[str, list[str]] = {
    "plain": [],
    "v": ["-v"],
    "vv": ["-vv", "--base64-output=decode-rows"],
}
LABELS = {"plain": "plain", "v": "-v", "vv": "-vv --base64-output=decode-rows"}


def tool_commands() -> dict[str, list[str]]:
    real = shutil.which("mariadb-binlog") or shutil.which("mysqlbinlog")
    if real is None:
        sys.exit("mariadb-binlog is not installed")
    return {
        "mariadb-binlog": [real, "--no-defaults"],
        "mariabinlog": [sys.executable, "-m", "mariabinlog", "dump", "--no-defaults"],
    }


SRC = REPO_ROOT / "src"


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(SRC) + os.pathsep + env.get("PYTHONPATH", "")
    env["TZ"] = "UTC"
    return env


def measure(command: list[str], cpu: int) -> tuple[float, float, int, int]:
    """Run ``command`` pinned to ``cpu``, stdout to /dev/null: (wall s, CPU s, peak RSS KiB, exit status)."""
    with open(os.devnull, "wb") as devnull:
        start = time.perf_counter()
        proc = subprocess.Popen(["taskset", "-c", str(cpu), *command], stdout=devnull, env=_env())
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss, os.waitstatus_to_exitcode(status)


def digest(command: list[str]) -> tuple[int, str]:
    """Size and SHA-256 of a command's stdout."""
    h = hashlib.sha256()
    size = 0
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, env=_env())
    assert proc.stdout is not None
    for chunk in iter(lambda: proc.stdout.read(1 << 20), b""):  # type: ignore[union-attr]
        h.update(chunk)
        size += len(chunk)
    proc.wait()
    return size, h.hexdigest()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bytes", type=parse_size, default=None, help="binlog size (default ~1 GB)")
    parser.add_argument("--repeat", type=int, default=1, help="runs per cell; the best wall time counts")
    parser.add_argument("--modes", default="plain,v,vv", help="comma-separated: plain, v, vv")
    parser.add_argument("--cpu", type=int, default=0, help="the CPU both tools are pinned to")
    parser.add_argument("--no-verify", action="store_true", help="skip comparing the two tools' outputs")
    parser.add_argument("--src", type=Path, default=None, help="source tree of the mariabinlog to run")
    args = parser.parse_args(argv)
    global SRC
    if args.src is not None:
        SRC = args.src.resolve()
    # The package as an installed wheel has it: bytecode compiled (also after an edit since setup).
    compileall.compile_dir(SRC, quiet=1)
    files = [str(p) for p in make_binlog(args.bytes)]
    size = sum(os.path.getsize(f) for f in files)
    tools = tool_commands()
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    print(f"binlog: {', '.join(files)} ({size / 1e6:.0f} MB); one core (taskset -c {args.cpu}); output to /dev/null")
    results: dict[tuple[str, str], tuple[float, float, int]] = {}
    for mode in modes:
        if not args.no_verify:
            sums = {name: digest([*cmd, *MODES[mode], *files]) for name, cmd in tools.items()}
            same = len(set(sums.values())) == 1
            print(f"  {LABELS[mode]}: outputs {'identical' if same else 'DIFFER'} ({sums['mariabinlog'][0] / 1e6:.0f} MB)")
        for name, cmd in tools.items():
            best: tuple[float, float, int] | None = None
            for _ in range(args.repeat):
                wall, cpu, rss, status = measure([*cmd, *MODES[mode], *files], args.cpu)
                if status != 0:
                    print(f"  {name} {LABELS[mode]}: exit status {status}")
                if best is None or wall < best[0]:
                    best = (wall, cpu, rss)
            assert best is not None
            results[(mode, name)] = best
            print(f"  {name} {LABELS[mode]}: {best[0]:.1f} s wall, {best[1]:.1f} s CPU, {best[2] / 1024:.0f} MiB")
    print()
    print(
        "| mode | mariadb-binlog wall s (CPU s) | mariabinlog wall s (CPU s) | ratio wall | ratio CPU "
        "| MB/s ours (CPU) | peak RSS C MiB | peak RSS ours MiB |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for mode in modes:
        c_wall, c_cpu, c_rss = results[(mode, "mariadb-binlog")]
        p_wall, p_cpu, p_rss = results[(mode, "mariabinlog")]
        print(
            f"| {LABELS[mode]} | {c_wall:.1f} ({c_cpu:.1f}) | {p_wall:.1f} ({p_cpu:.1f}) | {p_wall / c_wall:.2f} "
            f"| {p_cpu / c_cpu:.2f} | {size / 1e6 / p_cpu:.0f} | {c_rss / 1024:.0f} | {p_rss / 1024:.0f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
