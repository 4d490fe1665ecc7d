"""The progress bar: on stderr when it is a terminal, never in pipes or files.

Runs ``python -m mariabinlog dump`` with stderr on a pseudo-terminal (``pty``),
with stderr on a pipe, and with stdout on the terminal as well, on a corpus
file large enough for several redraws (the bar's start delay set to 0).
"""

from __future__ import annotations

import io
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

from mariabinlog.tools.dump.progress import ProgressBar, progress_for


def _run_with_pty(args: list[str], env: dict[str, str], *, stdout_on_tty: bool = False) -> tuple[int, bytes, bytes]:
    master, slave = pty.openpty()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "mariabinlog", "dump", *args],
            stdout=slave if stdout_on_tty else subprocess.PIPE,
            stderr=slave,
            env=env,
        )
        os.close(slave)
        slave = -1
        out = proc.stdout.read() if proc.stdout is not None else b""
        tty = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed its end
                break
            if not chunk:
                break
            tty += chunk
        return proc.wait(), out, tty
    finally:
        if slave >= 0:
            os.close(slave)
        os.close(master)


def test_bar_on_a_terminal(corpus_dir: Path, tool_env: dict[str, str]) -> None:
    env = {**tool_env, "MARIABINLOG_PROGRESS_DELAY": "0"}
    binlog = str(corpus_dir / "binlogs" / "w06_big_trx" / "mysql-bin.000001")
    args = ["--skip-gtid-strict-mode", "-v", binlog, binlog, binlog]
    status, out, tty = _run_with_pty(args, env)
    assert status == 0
    assert b"\r[" in tty and b"% " in tty and b"MiB" in tty
    assert re.search(rb"\] +\d+\.\d% .* mysql-bin\.000001 \([123]/3\)\x1b\[K", tty)
    assert tty.endswith(b"\r\x1b[K")  # erased at the end
    piped = subprocess.run(
        [sys.executable, "-m", "mariabinlog", "dump", *args], capture_output=True, env=env, check=False
    )
    assert out == piped.stdout  # the bar never touches the output


def test_no_bar_in_pipes(corpus_dir: Path, tool_env: dict[str, str]) -> None:
    env = {**tool_env, "MARIABINLOG_PROGRESS_DELAY": "0"}
    binlog = str(corpus_dir / "binlogs" / "w06_big_trx" / "mysql-bin.000001")
    result = subprocess.run([sys.executable, "-m", "mariabinlog", "dump", "-v", binlog], capture_output=True, env=env, check=False)
    assert result.returncode == 0 and result.stderr == b""
    # stdout on the same terminal: the dump text would tear the bar, so there is none.
    status, _, tty = _run_with_pty(["-v", binlog], env, stdout_on_tty=True)
    assert status == 0 and b"\r[" not in tty and b"MiB/s" not in tty


def test_bar_waits_and_rate_limits() -> None:
    now = [0.0]
    stream = io.StringIO()
    bar = ProgressBar(stream, delay=1.0, clock=lambda: now[0])
    bar.start(["/dev/null"])
    bar.sizes = [1000]
    bar.total = 1000
    bar.update(10)
    assert stream.getvalue() == ""  # a short run prints nothing
    now[0] = 1.5
    bar.update(500)
    assert "50.0%" in stream.getvalue()
    drawn = stream.getvalue()
    now[0] = 1.52
    bar.update(600)
    assert stream.getvalue() == drawn  # at most RATE redraws a second
    bar.close()
    assert stream.getvalue().endswith("\r\x1b[K")
    assert progress_for(io.StringIO(), None) is None
