"""Hostile peers (not a test): what a damaged stream costs our clients, and hostile clients ``serve``.

1. Client side: ``mariabinlog archive`` (its own process) streams a real private primary with
   CRC32 checksums (80 small transactions and one of ~6 MB) through the corrupting proxy of
   ``tests/replication/hostile_peers.py``, one damage per run at the 60th event packet of the
   first connection.  Per damage: what the client did (reconnect, or stop with an error), the
   time from the damage leaving the proxy to the client closing that connection, the client's
   peak RSS (``wait4``), and whether the archive ended equal to the primary.  The chains are 70
   packets of 16 MiB - 1 (1.1 GiB): plain (a rewritten length) and forged (the event header
   claims the chain too), the latter under the default ``--max-allowed-packet`` (1G, MariaDB's
   ``slave_max_allowed_packet``) and under ``--max-allowed-packet 64M``; then a forged chain of
   63 packets, which the default allows: the worst a peer can make a client buffer.

2. Server side: ``mariabinlog serve`` (its own process, MariaDB's default limits unless said)
   over that archive, against: 200 idle connections; 50 connections sending a 16 MiB packet
   header and nothing more; 50 garbage handshakes; 300 wrong passwords from one address (with
   ``--login-delay 0.01 --login-delay-max 0.05``, so that the run takes seconds, not hours);
   20 parallel logins from that slowed address; 4 dumps that read nothing, then 4 read at
   1 MB/s (``--net-write-timeout 5``).  Per attack: the answers, how long until each connection was
   refused or dropped, the connections ``serve`` held at the peak and after, its peak RSS.

Run: ``.venv/bin/python bench/hostile.py`` (about two minutes; ``--json FILE`` also writes the
figures).  Figures depend on the machine: the servers, the proxy and the clients share its cores.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT / "tests" / "replication"))
sys.path.insert(0, str(REPO_ROOT / "tests"))
sys.path.insert(0, str(REPO_ROOT / "src"))

from hostile_peers import (  # noqa: E402
    DumpReader,
    Proxy,
    closed_after,
    garbage_handshake,
    huge_header,
    idle_connections,
    login,
)
from mariadb_server import MariaDBServer  # noqa: E402

from mariabinlog.codec.wire import protocol as P  # noqa: E402
from mariabinlog.replication.sources import ArchiveReader, archive_pages  # noqa: E402

USER, PASSWORD = "repl", "replpw"
PRIMARY_OPTIONS = ("--log-bin", "--binlog-format=ROW", "--binlog-checksum=CRC32", "--server-id=1",
                   "--max-allowed-packet=64M")
MIB = 1 << 20


def primary(folder: Path) -> MariaDBServer:
    """A private primary with the robustness tests' history."""
    server = MariaDBServer(folder / "primary", PRIMARY_OPTIONS).start()
    server.sql(f"CREATE USER '{USER}'@'%' IDENTIFIED BY '{PASSWORD}'; GRANT REPLICATION SLAVE ON *.* TO '{USER}'@'%'")
    statements = ["CREATE DATABASE r;", "CREATE TABLE r.a (id INT PRIMARY KEY, v VARCHAR(200));",
                  "CREATE TABLE r.big (id INT PRIMARY KEY, v VARCHAR(100));"]
    statements += [f"INSERT INTO r.a VALUES ({i}, REPEAT('a', {i + 40}));" for i in range(80)]
    statements.append("INSERT INTO r.big SELECT seq, REPEAT('g', 90) FROM r.seq_1_to_60000;")
    server.pipe("\n".join(statements) + "\n")
    return server


def gtids(server: MariaDBServer) -> list[str]:
    """The primary's GTIDs, in order (``@@gtid_binlog_pos`` is one domain here)."""
    last = int(server.rows("SELECT @@gtid_binlog_pos")[0][0].split("-")[2])
    return [f"0-1-{n}" for n in range(1, last + 1)]


def archived(directory: Path) -> list[str]:
    return [str(g.gtid) for g in ArchiveReader(archive_pages(str(directory)), None).groups()] if directory.is_dir() else []


def mariabinlog(*args: str, **popen: Any) -> subprocess.Popen[bytes]:
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT / "src"))
    return subprocess.Popen([sys.executable, "-m", "mariabinlog", *args], env=env, **popen)


def wait_rss(proc: subprocess.Popen[bytes], timeout: float) -> tuple[int, float]:
    """Exit status and peak RSS (MiB) of ``proc`` (killed after ``timeout`` s)."""
    deadline = time.monotonic() + timeout
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            return proc.returncode, usage.ru_maxrss / 1024
        if time.monotonic() > deadline:
            proc.kill()
        time.sleep(0.02)


def client_side(server: MariaDBServer, folder: Path) -> list[dict[str, Any]]:
    """Part 1 (module docstring)."""
    results = []
    expected = gtids(server)
    runs = [(damage, {}, ()) for damage in
            ("flip-body", "flip-length", "garbage", "truncate", "cut", "stall", "duplicate", "replay", "chain")]
    runs += [("chain", {"forge": True, "times": 99}, ()),
             ("chain", {"forge": True, "times": 99}, ("--max-allowed-packet", "64M")),
             ("chain", {"forge": True, "chain_parts": 63}, ())]
    for damage, extra, options in runs:
        parts = extra.get("chain_parts", 70)
        label = damage + (f" {parts}x16M" if damage == "chain" else "") + (" forged" if extra.get("forge") else "")
        label += " " + " ".join(options) if options else ""
        proxy = Proxy(server.port, damage=damage, at=60, **extra)  # type: ignore[arg-type]
        directory = folder / f"archive-{len(results)}"
        url = f"mariadb://{USER}:{PASSWORD}@127.0.0.1:{proxy.address[1]}"
        started = time.monotonic()
        # A stall only ends by the read timeout: two heartbeat periods + 5 s while following.
        follow = ("--stop-never", "--heartbeat", "1") if damage == "stall" else ()
        proc = mariabinlog("archive", "--quiet", "--from", url, "--dir", str(directory), *follow, *options,
                           stderr=subprocess.PIPE)
        if follow:
            deadline = time.monotonic() + 120
            while archived(directory) != expected and time.monotonic() < deadline:
                time.sleep(0.2)
            proc.send_signal(signal.SIGTERM)
        status, rss = wait_rss(proc, 300)
        stderr = proc.stderr.read().decode() if proc.stderr else ""
        proxy.close()
        reject = proxy.closed_at - proxy.damaged_at if proxy.damaged_at and proxy.closed_at else float("nan")
        said = next((line for line in stderr.splitlines() if "WARNING" in line or line.startswith("mariabinlog:")), "")
        row = {
            "damage": label, "exit": status, "reconnects": proxy.connections - 1, "seconds_to_reject": round(reject, 4),
            "client_peak_rss_mib": round(rss, 1), "proxy_sent_mib": round(proxy.sent_bytes / MIB, 1),
            "archive_equal": archived(directory) == expected, "seconds": round(time.monotonic() - started, 2),
            "said": said.split(": ", 1)[-1][:160],
        }
        results.append(row)
        print(f"  {label:<42} exit {status}  reconnects {row['reconnects']}  reject {reject:>7.4f} s"
              f"  client RSS {rss:>6.1f} MiB  proxy sent {row['proxy_sent_mib']:>7.1f} MiB  equal {row['archive_equal']}",
              flush=True)
    return results


class Serve:
    """``mariabinlog serve`` in its own process; its connections, threads and peak RSS from /proc."""

    def __init__(self, directory: Path, *options: str) -> None:
        self.port_file = directory.parent / f"serve-{time.monotonic_ns()}.port"
        self.proc = mariabinlog("serve", "--dir", str(directory), "--port", "0", "--port-file", str(self.port_file),
                                "--account", f"{USER}:{PASSWORD}", *options, stderr=subprocess.DEVNULL)
        while not self.port_file.exists():
            time.sleep(0.05)
        self.address = ("127.0.0.1", int(self.port_file.read_text()))

    def status(self, field: str) -> int:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
        raise KeyError(field)

    def connections(self) -> int:
        """Established TCP connections on the server's port (its side of each)."""
        port = f":{self.address[1]:04X}"
        count = 0
        for line in Path(f"/proc/{self.proc.pid}/net/tcp").read_text().splitlines()[1:]:
            fields = line.split()
            count += fields[1].endswith(port) and fields[3] == "01"
        return count

    def peak_rss_mib(self) -> float:
        return self.status("VmHWM") / 1024

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=60)


def timed_close(socks: list[Any], limit: float) -> list[float | None]:
    """Seconds until the server closed each socket (in parallel)."""
    found: list[float | None] = [None] * len(socks)

    def watch(index: int) -> None:
        found[index] = closed_after(socks[index], limit)

    threads = [threading.Thread(target=watch, args=(i,)) for i in range(len(socks))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for sock in socks:
        sock.close()
    return found


def spread(times: list[float | None]) -> str:
    done = sorted(t for t in times if t is not None)
    if not done:
        return "none closed"
    return f"{len(done)} closed after {done[0]:.3f}..{done[-1]:.3f} s" + (
        f", {len(times) - len(done)} still open" if len(done) < len(times) else "")


def server_side(directory: Path) -> list[dict[str, Any]]:
    """Part 2 (module docstring)."""
    results = []

    def report(attack: str, serve: Serve, outcome: str, peak: int) -> None:
        row = {"attack": attack, "outcome": outcome, "connections_at_peak": peak, "connections_after": serve.connections(),
               "serve_threads": serve.status("Threads"), "serve_peak_rss_mib": round(serve.peak_rss_mib(), 1)}
        results.append(row)
        print(f"  {attack:<36} {outcome:<60} held {peak:>3} -> {row['connections_after']:>3}"
              f"  threads {row['serve_threads']:>3}  serve RSS {row['serve_peak_rss_mib']:>6.1f} MiB", flush=True)

    serve = Serve(directory)
    try:
        socks = idle_connections(serve.address, 200, source="127.0.0.2")
        time.sleep(0.5)
        peak = serve.connections()
        closes = timed_close(socks, 15)
        refused = sum(1 for t in closes if t is not None and t < 1)
        report("200 idle connections", serve, f"{refused} refused (1040) at once; {spread([t for t in closes if t and t >= 1])}",
               peak)
        socks = [huge_header(serve.address, source="127.0.0.3") for _ in range(50)]
        peak = serve.connections()
        report("50 x 16 MiB header, then nothing", serve, spread(timed_close(socks, 15)), peak)
        socks = [garbage_handshake(serve.address, source="127.0.0.4") for _ in range(50)]
        peak = serve.connections()
        report("50 garbage handshakes", serve, spread(timed_close(socks, 15)), peak)
    finally:
        serve.stop()

    serve = Serve(directory, "--login-delay", "0.01", "--login-delay-max", "0.05")
    try:
        started = time.monotonic()
        answers = [login(serve.address, USER, "wrong", source="127.0.0.5") for _ in range(300)]
        codes = sorted({a.code for a, _ in answers if isinstance(a, P.ErrPacket)})
        last = answers[-1][1]
        report("300 wrong passwords, one address", serve,
               f"all ERR {codes} in {time.monotonic() - started:.1f} s; the last after {last:.3f} s", 1)
        parallel: list[Any] = []
        threads = [threading.Thread(target=lambda: parallel.append(login(serve.address, USER, "wrong", source="127.0.0.5")))
                   for _ in range(20)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        counts: dict[int, int] = {}
        for answer, _ in parallel:
            counts[answer.code] = counts.get(answer.code, 0) + 1
        report("20 parallel wrong passwords, same", serve, f"ERR codes {counts}", 1)
        ok, seconds = login(serve.address, USER, PASSWORD, source="127.0.0.6")
        report("right password, other address", serve, f"{type(ok).__name__} after {seconds:.3f} s", 1)
    finally:
        serve.stop()

    serve = Serve(directory, "--net-write-timeout", "5")
    try:
        stuck = [DumpReader(serve.address, USER, PASSWORD, rate=0) for _ in range(4)]
        connected = time.monotonic()
        time.sleep(0.5)
        peak = serve.connections()
        while serve.connections() and time.monotonic() - connected < 60:
            time.sleep(0.05)
        report("4 dumps that read nothing", serve, f"all dropped by {time.monotonic() - connected:.1f} s", peak)
        for reader in stuck:
            reader.close()
        slow = [DumpReader(serve.address, USER, PASSWORD, rate=MIB) for _ in range(4)]
        time.sleep(0.5)
        peak = serve.connections()
        for reader in slow:
            reader.thread.join(timeout=120)
        complete = sum(r.ended == "EndOfStream" for r in slow)
        longest = max(r.finished - r.started for r in slow)
        report("4 dumps read at 1 MB/s (~6 MB each)", serve, f"{complete}/4 complete, in {longest:.1f} s", peak)
        for reader in slow:
            reader.close()
    finally:
        serve.stop()
    return results


def main() -> int:
    """Run both parts and print their tables."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mb-hostile-") as tmp:
        folder = Path(tmp)
        server = primary(folder)
        try:
            print("client side: mariabinlog archive through a corrupting proxy (damage at the 60th event)", flush=True)
            clients = client_side(server, folder)
            print("server side: mariabinlog serve against hostile clients", flush=True)
            servers = server_side(folder / "archive-0")
        finally:
            server.stop()
    if args.json:
        Path(args.json).write_text(json.dumps({"client": clients, "serve": servers}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
