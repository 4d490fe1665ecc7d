"""Option files read as MariaDB's clients read them: the real ``mariadb-binlog --print-defaults``
is the oracle for every case, hand-written and generated."""

from __future__ import annotations

import os
import shutil
import string
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mariabinlog.errors import OptionFileError
from mariabinlog.optionfiles import BINLOG_GROUPS, load_defaults, print_defaults_text, split_defaults_options

REAL = shutil.which("mariadb-binlog")


def _real(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[int, str, str]:
    if REAL is None:
        pytest.fail("mariadb-binlog not found: run scripts/setup.sh (it installs mariadb-client)")
    proc = subprocess.run(["mariadb-binlog", *argv], env=env, cwd=cwd, capture_output=True, text=True,
                          errors="surrogateescape", timeout=30)
    return proc.returncode, proc.stdout, proc.stderr


def _ours(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[int, str, str]:
    old = os.getcwd()
    os.chdir(cwd)
    try:
        defaults = load_defaults(BINLOG_GROUPS, argv, env)
    except OptionFileError as err:
        return 1, "", f"{err}\nFatal error in defaults handling. Program aborted\n"
    finally:
        os.chdir(old)
    assert defaults.print_requested, "every case here asks for --print-defaults"
    return 0, print_defaults_text("mariadb-binlog", defaults.args), "".join(w + "\n" for w in defaults.warnings)


def _check(argv: list[str], home: Path, extra_env: dict[str, str] | None = None) -> None:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), **(extra_env or {})}
    real = _real(argv, env, home)
    ours = _ours(argv, env, home)
    assert ours[0] == real[0], (argv, real, ours)
    assert ours[1] == real[1], (argv, real[1], ours[1])
    assert ours[2].splitlines()[:1] == real[2].splitlines()[:1], (argv, real[2], ours[2])


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o644)
    return path


CASES = {
    "groups_and_order": "[client]\nuser=bob\n[mysqlbinlog]\nshort_form\n[CLIENT]\nport=1\n[mysqld]\nx=1\n"
                        "[client-server]\ncs=1\n[client-mariadb]\ncm=1\n[mariadb-binlog]\nverbose\n",
    "values": "[client]\nk = \"a b\" c\nm='q'\nn=a\\\\b\\sx\\q\nnovalue\nempty=\nsp = 1 2  \nhash=a#b\n"
              "hash2=a #b\nq2=\"a#b\" #c\nq3='it''s'\ntab = a\\tb\n",
    "comments": "# top\n; semi\n[client] # trailing\n  # indented\nx=1\n\n   \n[ client ]\ny=1\n[client ]\nz=1\n",
    "loose_and_bools": "[client]\nloose-foo=1\nskip-gtid-strict-mode\ndisable-force-read\nenable-foo\nverbose=0\n"
                       "short_form=1\nstart_position = 4\n",
    "orphan_option": "x=1\n[client]\n",
    "bad_group": "[client\nx=1\n",
    "empty_include": "[client]\n!include\n",
    "unknown_directive": "[client]\n!bogus x\nx=1\n",
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_defaults_file_cases(tmp_path: Path, name: str) -> None:
    cnf = _write(tmp_path / "my.cnf", CASES[name])
    _check([f"--defaults-file={cnf}", "--print-defaults", "-v", "file"], tmp_path)


def test_default_files_order_extra_file_and_home(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _write(home / ".my.cnf", "[client]\nport=1\n")
    extra = _write(tmp_path / "extra.cnf", "[client]\nport=2\n[mysqlbinlog]\nx=1\n")
    _write(tmp_path / "mhome" / "my.cnf", "[client]\nport=3\n")
    _check([f"--defaults-extra-file={extra}", "--print-defaults"], home)
    _check([f"--defaults-extra-file={extra}", "--print-defaults"], home, {"MYSQL_HOME": str(tmp_path / "mhome")})
    _check(["--print-defaults"], home, {"MARIADB_HOME": str(tmp_path / "mhome")})
    # --defaults-file wins over the extra file; a relative name is relative to the working directory
    _check(["--defaults-extra-file=extra.cnf", "--defaults-file=home/.my.cnf", "--print-defaults"], tmp_path)


def test_includes(tmp_path: Path) -> None:
    inc = tmp_path / "conf.d"
    _write(inc / "b.cnf", "[client]\nz=1\n!include " + str(tmp_path / "deep.cnf") + "\n")
    _write(inc / "a.cnf", "[client]\ny=1\n")
    _write(inc / "c.txt", "[client]\nignored=1\n")
    _write(tmp_path / "deep.cnf", "[mysqlbinlog]\ndeep=1\n")
    cnf = _write(tmp_path / "main.cnf", f"[client]\nfirst=1\n!includedir {inc}\nafter=1\n"
                                        f"!include {tmp_path / 'missing.cnf'}\nlast=1\n")
    _check([f"--defaults-file={cnf}", "--print-defaults"], tmp_path)


def test_group_suffix_from_option_and_environment(tmp_path: Path) -> None:
    cnf = _write(tmp_path / "s.cnf", "[client]\na=1\n[client_s1]\nb=1\n[mysqlbinlog_s1]\nc=1\n[client_s2]\nd=1\n")
    _check([f"--defaults-file={cnf}", "--defaults-group-suffix=_s1", "--print-defaults"], tmp_path)
    _check([f"--defaults-file={cnf}", "--print-defaults"], tmp_path, {"MYSQL_GROUP_SUFFIX": "_s2"})
    _check([f"--defaults-file={cnf}", "--print-defaults"], tmp_path, {"MARIADB_GROUP_SUFFIX": "_s1"})


def test_missing_required_files_and_no_defaults(tmp_path: Path) -> None:
    _check([f"--defaults-file={tmp_path / 'nope.cnf'}", "--print-defaults"], tmp_path)
    _check([f"--defaults-extra-file={tmp_path / 'nope.cnf'}", "--print-defaults"], tmp_path)
    _write(tmp_path / ".my.cnf", "[client]\nport=9\n")
    _check(["--no-defaults", "--print-defaults"], tmp_path)
    # --print-defaults before --defaults-file: the latter is an ordinary argument then
    _check(["--print-defaults", f"--defaults-file={tmp_path / '.my.cnf'}"], tmp_path)


def test_world_writable_file_is_ignored(tmp_path: Path) -> None:
    cnf = _write(tmp_path / "ww.cnf", "[client]\nx=1\n")
    cnf.chmod(0o666)
    _check([f"--defaults-file={cnf}", "--print-defaults"], tmp_path)


def test_split_defaults_options_takes_only_leading_ones() -> None:
    req = split_defaults_options(["--defaults-file=a", "--defaults-file=b", "-v"])
    assert req.defaults_file == "a" and req.rest == ["--defaults-file=b", "-v"]
    req = split_defaults_options(["-v", "--no-defaults"])
    assert not req.no_defaults and req.rest == ["-v", "--no-defaults"]


_name = st.text(alphabet=string.ascii_lowercase + "_-", min_size=1, max_size=8)
_value = st.text(alphabet=string.ascii_letters + string.digits + " #;'\"\\=_-.\t", max_size=12)
_line = st.one_of(
    st.builds(lambda n, v, a, b: f"{' ' * a}{n}{' ' * b}={v}", _name, _value, st.integers(0, 2), st.integers(0, 2)),
    _name,
    st.sampled_from(["[client]", "[mysqlbinlog]", "[mysqld]", "[client-mariadb]", "[Mariadb-Binlog]",
                     "# comment", "; comment", "", "   "]),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(_line, max_size=12))
def test_generated_files_read_as_the_real_tool_reads_them(tmp_path: Path, lines: list[str]) -> None:
    cnf = _write(tmp_path / "gen.cnf", "[client]\n" + "\n".join(lines) + "\n")
    _check([f"--defaults-file={cnf}", "--print-defaults"], tmp_path)
