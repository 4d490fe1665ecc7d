#!/usr/bin/env python3
"""Check a mariadb-binlog reimplementation against the golden corpus.

  compare.py check  --tool 'python -m mariabinlog dump {options} {files}' [--manifest manifest.tsv]
  compare.py replay --tool 'python -m mariabinlog dump {options} {files}' [--replay replay.tsv]

The tool template is run through /bin/sh once per entry, with TZ=UTC.
{options} is replaced by the manifest's options string (already in shell
syntax) and {files} by the shell-quoted absolute paths of the binlog files.
The real tool passes with: --tool 'mariadb-binlog --no-defaults {options} {files}'

check, per manifest entry (PASS only if all three hold):
  (a) gtids: the ordered list of GTIDs printed on '#' comment lines
      ('#... GTID <domain>-<server>-<seq> ...'; '#Q>' annotate lines and the
      'Gtid list [...]' lines are ignored) equals the golden's;
  (b) rows:  the '###' pseudo-SQL lines, with runs of whitespace collapsed,
      equal the golden's (in order);
  (c) exit:  the tool fails (non-zero) exactly when the real tool failed.
  --full-text additionally requires every output line to match (whitespace-
  normalised); it is off by default.

replay, per replay.tsv row: start a fresh private mariadbd (socket only,
skip-networking, no binlog) under /tmp, pipe the tool's output for
'<options> <files>' into 'mariadb --binary-mode', then CHECKSUM TABLE ...
EXTENDED and COUNT(*) of every table in the golden checksums file must match.

Exit status: 0 all passed, 1 some failed, 2 tool not found / setup problem.
"""
import argparse
import gzip
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))

GTID_LINE = re.compile(rb"^#(?!Q>).*?\bGTID (\d+)-(\d+)-(\d+)\b")
WS = re.compile(rb"\s+")


# --------------------------------------------------------------------- helpers
def default_path(name):
    for cand in (os.path.join(os.getcwd(), name), os.path.join(HERE, name)):
        if os.path.exists(cand):
            return os.path.abspath(cand)
    return name


def read_tsv(path):
    with open(path, encoding="utf-8") as f:
        lines = [l.rstrip("\n") for l in f if l.strip()]
    head = lines[0].split("\t")
    return [dict(zip(head, l.split("\t"))) for l in lines[1:]]


def read_blob(path):
    with open(path, "rb") as f:
        data = f.read()
    if path.endswith(".gz"):
        data = gzip.decompress(data)
    return data


def gtids(out):
    res = []
    for line in out.splitlines():
        m = GTID_LINE.match(line)
        if m:
            res.append(b"-".join(m.groups()).decode())
    return res


def row_lines(out):
    return [WS.sub(b" ", l).strip() for l in out.splitlines() if l.startswith(b"###")]


def norm_lines(out):
    return [WS.sub(b" ", l).strip() for l in out.splitlines() if l.strip()]


def first_diff(a, b):
    for i in range(max(len(a), len(b))):
        x = a[i] if i < len(a) else "<missing>"
        y = b[i] if i < len(b) else "<missing>"
        if x != y:
            return i, x, y
    return None


def short(x, n=160):
    if isinstance(x, bytes):
        x = x.decode("utf-8", "backslashreplace")
    x = str(x)
    return x if len(x) <= n else x[:n] + "..."


def build_cmd(template, options, files):
    return template.replace("{options}", options).replace("{files}", " ".join(shlex.quote(f) for f in files))


def tool_env():
    env = dict(os.environ)
    env["TZ"] = "UTC"
    return env


def preflight(template):
    """Returns None if the tool looks runnable, else a message."""
    try:
        argv = shlex.split(template.replace("{options}", "").replace("{files}", ""))
    except ValueError as e:
        return "cannot parse tool template: %s" % e
    while argv and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", argv[0]):
        argv = argv[1:]
    if argv and argv[0] == "env":
        argv = argv[1:]
        while argv and "=" in argv[0]:
            argv = argv[1:]
    if not argv:
        return "empty tool template"
    exe = argv[0]
    path = exe if os.sep in exe else shutil.which(exe)
    if not path or not os.path.exists(path):
        return "tool not found: '%s' is not an executable on PATH" % exe
    if os.path.basename(exe).startswith("python") and len(argv) >= 3 and argv[1] == "-m":
        mod = argv[2]
        r = subprocess.run([path, "-c", "import importlib.util,sys\n"
                            "try:\n sys.exit(0 if importlib.util.find_spec(sys.argv[1]) else 3)\n"
                            "except ModuleNotFoundError:\n sys.exit(3)", mod],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if r.returncode != 0:
            return "tool not found: python module '%s' is not importable by %s" % (mod, exe)
    return None


def run_tool(template, options, files, timeout, stdout=subprocess.PIPE):
    cmd = build_cmd(template, options, files)
    try:
        r = subprocess.run(cmd, shell=True, stdout=stdout, stderr=subprocess.PIPE, env=tool_env(), timeout=timeout)
        return r.returncode, (r.stdout if stdout == subprocess.PIPE else b""), r.stderr, cmd
    except subprocess.TimeoutExpired:
        return None, b"", b"timeout after %ds" % timeout, cmd


def not_found_rc(rc, err):
    return rc in (126, 127) and (b"not found" in err or b"No such file" in err or b"ermission denied" in err) or \
        (rc not in (0, None) and (b"No module named" in err))


# ----------------------------------------------------------------------- check
def cmd_check(args):
    manifest = os.path.abspath(args.manifest or default_path("manifest.tsv"))
    if not os.path.exists(manifest):
        print("manifest not found: %s" % manifest)
        return 2
    root = os.path.dirname(manifest)
    msg = preflight(args.tool)
    if msg:
        print(msg)
        print("0 passed, 0 failed (tool not found; nothing was compared)")
        return 2
    entries = read_tsv(manifest)
    if args.only:
        entries = [e for e in entries if any(s in e["id"] for s in args.only.split(","))]
    npass = nfail = 0
    for i, e in enumerate(entries):
        files = [os.path.join(root, f) for f in e["files"].split()]
        golden = read_blob(os.path.join(root, e["golden"]))
        grc = int(e["exit_code"])
        rc, out, err, cmd = run_tool(args.tool, e["options"], files, args.timeout)
        if i == 0 and not_found_rc(rc, err):
            print("tool not found: %s\n  command: %s\n  stderr: %s" % (args.tool, cmd, short(err, 400)))
            print("0 passed, 0 failed (tool not found; nothing was compared)")
            return 2
        problems = []
        if rc is None:
            problems.append("timeout after %ss" % args.timeout)
        else:
            if (rc == 0) != (grc == 0):
                problems.append("exit: tool %d, golden %d%s" % (rc, grc, (" (stderr: %s)" % short(err.strip(), 200)) if err.strip() else ""))
            ga, ta = gtids(golden), gtids(out)
            if ga != ta:
                d = first_diff(ga, ta)
                problems.append("gtids: %d golden vs %d tool; first difference at #%d: golden %s, tool %s" % (
                    len(ga), len(ta), d[0], d[1], d[2]))
            gr, tr = row_lines(golden), row_lines(out)
            if gr != tr:
                d = first_diff(gr, tr)
                problems.append("rows: %d golden vs %d tool '###' lines; first difference at line %d:\n      golden: %s\n      tool:   %s" % (
                    len(gr), len(tr), d[0], short(d[1]), short(d[2])))
            if args.full_text:
                gn, tn = norm_lines(golden), norm_lines(out)
                if gn != tn:
                    d = first_diff(gn, tn)
                    problems.append("text: first difference at line %d:\n      golden: %s\n      tool:   %s" % (d[0], short(d[1]), short(d[2])))
        if problems:
            nfail += 1
            print("FAIL %s" % e["id"])
            if not args.quiet:
                print("    command: %s" % cmd)
                for p in problems:
                    print("    " + p)
        else:
            npass += 1
            if not args.quiet:
                print("PASS %s" % e["id"])
    print("%d passed, %d failed" % (npass, nfail))
    return 0 if nfail == 0 else 1


# ---------------------------------------------------------------------- replay
SERVER_OPTS = ["--default-time-zone=+00:00", "--character-set-server=utf8mb4", "--collation-server=utf8mb4_general_ci",
               "--innodb-log-file-size=8M", "--innodb-buffer-pool-size=64M", "--max-allowed-packet=64M",
               "--skip-networking", "--gtid-strict-mode=0", "--skip-log-bin"]


def which(*names):
    for n in names:
        p = shutil.which(n)
        if p:
            return p
        if os.path.exists("/usr/sbin/" + n):
            return "/usr/sbin/" + n
    return None


class ReplayServer:
    def __init__(self, base):
        self.base = base
        self.datadir = os.path.join(base, "data")
        self.sock = os.path.join(base, "s.sock")
        self.proc = None

    def start(self):
        os.makedirs(self.base, exist_ok=True)
        with open(os.path.join(self.base, "install.log"), "w") as f:
            subprocess.run([which("mariadb-install-db", "mysql_install_db"), "--no-defaults", "--user=root",
                            "--datadir=" + self.datadir, "--auth-root-authentication-method=socket", "--skip-test-db",
                            "--innodb-log-file-size=8M"], stdout=f, stderr=subprocess.STDOUT, check=True)
        cmd = [which("mariadbd", "mysqld"), "--no-defaults", "--user=root", "--datadir=" + self.datadir,
               "--socket=" + self.sock, "--pid-file=" + os.path.join(self.base, "s.pid"),
               "--log-error=" + os.path.join(self.base, "error.log")] + SERVER_OPTS
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        for _ in range(240):
            if os.path.exists(self.sock) and self.sql("SELECT 1", check=False)[0] == 0:
                return
            if self.proc.poll() is not None:
                raise RuntimeError("replay server exited early; see %s/error.log" % self.base)
            time.sleep(0.25)
        raise RuntimeError("replay server did not start; see %s/error.log" % self.base)

    def client(self):
        return [which("mariadb", "mysql"), "--no-defaults", "-S", self.sock, "-u", "root", "--default-character-set=utf8mb4"]

    def sql(self, q, check=True):
        r = subprocess.run(self.client() + ["-B", "-N", "-e", q], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if check and r.returncode != 0:
            raise RuntimeError("query failed: %s: %s" % (q, r.stderr.decode(errors="replace")))
        return r.returncode, r.stdout.decode("utf-8", "replace")

    def stop(self):
        if self.proc and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)  # our own server, by its pid
            try:
                self.proc.wait(120)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


def cmd_replay(args):
    rpath = os.path.abspath(args.replay or default_path("replay.tsv"))
    if not os.path.exists(rpath):
        print("replay manifest not found: %s" % rpath)
        return 2
    root = os.path.dirname(rpath)
    msg = preflight(args.tool)
    if msg:
        print(msg)
        print("0 passed, 0 failed (tool not found; nothing was replayed)")
        return 2
    for b in ("mariadbd", "mariadb-install-db", "mariadb"):
        if not which(b, {"mariadbd": "mysqld", "mariadb-install-db": "mysql_install_db", "mariadb": "mysql"}[b]):
            print("replay needs a local MariaDB server: '%s' not found (apt-get install mariadb-server mariadb-client)" % b)
            return 2
    rows = read_tsv(rpath)
    if args.only:
        rows = [r for r in rows if any(s in r["workload"] for s in args.only.split(","))]
    npass = nfail = 0
    tmp = tempfile.mkdtemp(prefix="mbreplay-", dir="/tmp")
    try:
        for r in rows:
            srv = ReplayServer(os.path.join(tmp, r["workload"]))
            problems = []
            try:
                srv.start()
                files = [os.path.join(root, f) for f in r["files"].split()]
                cmd = build_cmd(args.tool, r["options"], files)
                client = " ".join(shlex.quote(c) for c in srv.client() + ["--binary-mode"])
                p = subprocess.run("set -o pipefail; ( %s ) | %s" % (cmd, client), shell=True, executable="/bin/bash",
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=tool_env(), timeout=args.timeout)
                if p.returncode != 0:
                    problems.append("pipeline exit %d: %s" % (p.returncode, short(p.stderr.strip(), 400)))
                golden = read_tsv(os.path.join(root, r["checksums"]))
                for g in golden:
                    db, t = g["table"].split(".", 1)
                    rc, out = srv.sql("CHECKSUM TABLE `%s`.`%s` EXTENDED" % (db, t), check=False)
                    cs = out.split("\t")[1].strip() if rc == 0 and "\t" in out else "ERROR"
                    rc2, cnt = srv.sql("SELECT COUNT(*) FROM `%s`.`%s`" % (db, t), check=False)
                    cnt = cnt.strip() if rc2 == 0 else "ERROR"
                    if cs != g["checksum"] or cnt != g["rows"]:
                        problems.append("%s: checksum %s rows %s, golden checksum %s rows %s" % (
                            g["table"], cs, cnt, g["checksum"], g["rows"]))
            except Exception as ex:  # noqa: BLE001
                problems.append("error: %s" % ex)
            finally:
                srv.stop()
            if problems:
                nfail += 1
                print("FAIL replay %s" % r["workload"])
                for p_ in problems:
                    print("    " + p_)
            else:
                npass += 1
                print("PASS replay %s (%d tables)" % (r["workload"], len(golden)))
            if not args.keep:
                shutil.rmtree(srv.base, ignore_errors=True)
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            print("kept replay servers' datadirs under %s" % tmp)
    print("%d passed, %d failed" % (npass, nfail))
    return 0 if nfail == 0 else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="mode", required=True)
    c = sub.add_parser("check", help="compare GTIDs, ### row lines and exit status per manifest entry")
    c.add_argument("--tool", required=True, help="command template with {options} and {files}")
    c.add_argument("--manifest", help="manifest.tsv (default: ./manifest.tsv or the one beside this script)")
    c.add_argument("--only", help="comma-separated substrings of entry ids")
    c.add_argument("--timeout", type=int, default=300)
    c.add_argument("--full-text", action="store_true", help="also require whole-output equality (whitespace-normalised)")
    c.add_argument("-q", "--quiet", action="store_true", help="print only failures and the summary")
    r = sub.add_parser("replay", help="replay the tool's SQL into a fresh server and compare CHECKSUM TABLE")
    r.add_argument("--tool", required=True)
    r.add_argument("--replay", help="replay.tsv (default: ./replay.tsv or the one beside this script)")
    r.add_argument("--only", help="comma-separated substrings of workload names")
    r.add_argument("--timeout", type=int, default=600)
    r.add_argument("--keep", action="store_true", help="keep the replay datadirs")
    args = ap.parse_args()
    return cmd_check(args) if args.mode == "check" else cmd_replay(args)


if __name__ == "__main__":
    sys.exit(main())
