"""Every common login against real servers: mysql_native_password, ed25519, a wrong password,
TLS checked against a CA the test makes, the Unix socket; for ``dump -R`` (next to the real
``mariadb-binlog``), ``archive`` and ``replicate``; and ``serve`` accepting ed25519 logins."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from mariadb_server import MariaDBServer, MariaDBServerFactory, program
from replication_helpers import PRIMARY_OPTIONS, REPL_PASSWORD, REPL_USER, binlog_gtids, create_repl_user

from mariabinlog.cli import main as cli_main
from mariabinlog.errors import ServerError
from mariabinlog.replication.client import BinlogClient
from mariabinlog.replication.net import ClientSettings, Connection, ConnectionOptions
from mariabinlog.replication.server import BinlogServer, ServerConfig, ed25519_key

ED_USER, ED_PASSWORD = "edrepl", "ed-pässword"


@pytest.fixture(scope="module")
def ca(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """A CA and a server certificate for 127.0.0.1 signed by it (made with the openssl command)."""
    openssl = shutil.which("openssl")
    assert openssl is not None, "the openssl command is missing: apt-get install openssl"
    folder = tmp_path_factory.mktemp("ca")
    ca_cert, ca_key, cert, key, csr = (folder / n for n in ("ca.pem", "ca.key", "cert.pem", "key.pem", "req.csr"))
    def run(*args: str) -> None:
        subprocess.run([openssl, *args], check=True, capture_output=True, timeout=60)
    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=test CA",
        "-keyout", str(ca_key), "-out", str(ca_cert))
    run("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1", "-keyout", str(key), "-out", str(csr))
    ext = folder / "ext.cnf"
    ext.write_text("subjectAltName=IP:127.0.0.1\n")
    run("x509", "-req", "-in", str(csr), "-CA", str(ca_cert), "-CAkey", str(ca_key), "-CAcreateserial",
        "-days", "2", "-extfile", str(ext), "-out", str(cert))
    return ca_cert, cert, key


@pytest.fixture(scope="module")
def login_primary(mariadb_server_factory: MariaDBServerFactory, ca: tuple[Path, Path, Path]) -> MariaDBServer:
    """A primary with auth_ed25519, TLS, a native and an ed25519 replication account, and some data."""
    _, cert, key = ca
    server = mariadb_server_factory(*PRIMARY_OPTIONS, "--server-id=1", "--plugin-load-add=auth_ed25519",
                                    f"--ssl-cert={cert}", f"--ssl-key={key}", name="logins")
    create_repl_user(server)
    server.sql(
        f"CREATE USER '{ED_USER}'@'%' IDENTIFIED VIA ed25519 USING PASSWORD('{ED_PASSWORD}');"
        f" GRANT ALL ON *.* TO '{ED_USER}'@'%';"
        " CREATE DATABASE lg; CREATE TABLE lg.t (id INT PRIMARY KEY, v VARCHAR(10)); INSERT INTO lg.t VALUES (1, 'a')"
    )
    return server


def _logins(server: MariaDBServer, ca_cert: Path) -> dict[str, list[str]]:
    tcp = ["--host=127.0.0.1", f"--port={server.port}"]
    return {
        "native": [*tcp, f"--user={REPL_USER}", f"--password={REPL_PASSWORD}"],
        "ed25519": [*tcp, f"--user={ED_USER}", f"--password={ED_PASSWORD}"],
        "wrong password": [*tcp, f"--user={ED_USER}", "--password=wrong"],
        "tls": [*tcp, f"--user={ED_USER}", f"--password={ED_PASSWORD}", f"--ssl-ca={ca_cert}",
                "--ssl-verify-server-cert"],
        "tls 1.3": [*tcp, f"--user={REPL_USER}", f"--password={REPL_PASSWORD}", f"--ssl-ca={ca_cert}",
                    "--tls-version=TLSv1.3"],
        "socket": [f"--socket={server.socket}", f"--user={REPL_USER}", f"--password={REPL_PASSWORD}"],
        "protocol": ["--protocol=SOCKET", "--host=localhost", f"--socket={server.socket}", f"--port={server.port}",
                     f"--user={REPL_USER}", f"--password={REPL_PASSWORD}"],
    }


def _archived_gtids(directory: Path) -> int:
    """How many GTID events ``mariabinlog dump`` finds in the archive's .ibb files."""
    files = sorted(str(p) for p in directory.glob("*.ibb"))
    assert files, f"no .ibb file in {directory}"
    result = subprocess.run([sys.executable, "-m", "mariabinlog", "dump", "--no-defaults", *files],
                            capture_output=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout.count(b"\tGTID 0-1-")


def test_dump_remote_logs_in_as_the_real_tool(login_primary: MariaDBServer, ca: tuple[Path, Path, Path]) -> None:
    log = login_primary.binlog_files()[-1].name
    env = {**os.environ, "TZ": "UTC"}
    for name, login in _logins(login_primary, ca[0]).items():
        real = subprocess.run([program("mariadb-binlog"), "--no-defaults", "-R", *login, log],
                              capture_output=True, timeout=60, env=env)
        ours = subprocess.run([sys.executable, "-m", "mariabinlog", "dump", "--no-defaults", "-R", *login, log],
                              capture_output=True, timeout=60, env=env)
        assert (real.returncode == 0) == (name != "wrong password"), (name, real.stderr)
        assert (ours.returncode, ours.stdout, ours.stderr) == (real.returncode, real.stdout, real.stderr), name


def test_dump_remote_takes_the_password_from_mysql_pwd_and_option_files(
    login_primary: MariaDBServer, tmp_path: Path
) -> None:
    log = login_primary.binlog_files()[-1].name
    cnf = tmp_path / "my.cnf"
    cnf.write_text(f"[client]\nuser={ED_USER}\nhost=127.0.0.1\nport={login_primary.port}\n")
    env = {**os.environ, "TZ": "UTC", "MYSQL_PWD": ED_PASSWORD}
    outputs = [
        subprocess.run([*tool, f"--defaults-file={cnf}", "-R", log], capture_output=True, timeout=60, env=env)
        for tool in ([program("mariadb-binlog")], [sys.executable, "-m", "mariabinlog", "dump"])
    ]
    assert outputs[0].returncode == 0, outputs[0].stderr
    assert (outputs[1].returncode, outputs[1].stdout, outputs[1].stderr) == (
        outputs[0].returncode, outputs[0].stdout, outputs[0].stderr)


def test_archive_logs_in_each_way(
    login_primary: MariaDBServer, ca: tuple[Path, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    expected = binlog_gtids(login_primary)
    for index, (name, login) in enumerate(_logins(login_primary, ca[0]).items()):
        directory = tmp_path / f"arch{index}"
        if name == "wrong password":
            assert cli_main(["archive", "--no-defaults", "--quiet", "--reconnect=0", "--dir", str(directory), *login]) == 1
            assert "Access denied for user" in capsys.readouterr().err
            continue
        assert cli_main(["archive", "--no-defaults", "--quiet", "--dir", str(directory), *login]) == 0, name
        assert _archived_gtids(directory) == len(expected), name


def test_archive_reads_its_connection_from_an_option_file(login_primary: MariaDBServer, tmp_path: Path) -> None:
    cnf = tmp_path / "my.cnf"
    cnf.write_text(f"[client]\nuser={ED_USER}\npassword={ED_PASSWORD}\nsocket={login_primary.socket}\n"
                   "default-character-set=utf8mb4\n[mariabinlog-archive]\nquiet\n")
    directory = tmp_path / "arch"
    assert cli_main(["archive", f"--defaults-file={cnf}", "--dir", str(directory)]) == 0
    assert _archived_gtids(directory) == len(binlog_gtids(login_primary))


def test_archive_takes_the_mariadb_clients_short_options(
    login_primary: MariaDBServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``-h HOST -P PORT -u USER -pPASSWORD`` as every MariaDB client spells them (``-h`` was
    argparse's help, so ``-h127.0.0.1`` failed with a puzzling error); help is ``-?``."""
    directory = tmp_path / "arch"
    assert cli_main(["archive", "--no-defaults", "--quiet", "-h127.0.0.1", "-P", str(login_primary.port),
                     f"-u{ED_USER}", f"-p{ED_PASSWORD}", "--dir", str(directory)]) == 0
    assert _archived_gtids(directory) == len(binlog_gtids(login_primary))
    for command in ("archive", "replicate"):
        with pytest.raises(SystemExit) as done:
            cli_main([command, "-?"])
        assert done.value.code == 0 and "-h HOST, --host HOST" in capsys.readouterr().out


def test_replicate_applies_to_a_target_logged_in_with_ed25519(
    login_primary: MariaDBServer, mariadb_server_factory: MariaDBServerFactory, ca: tuple[Path, Path, Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    target = mariadb_server_factory("--plugin-load-add=auth_ed25519", f"--ssl-cert={ca[1]}", f"--ssl-key={ca[2]}",
                                    name="login-target")
    # Another name than the primary's ed25519 user: its CREATE USER is replicated too.
    target.sql(f"CREATE USER 'edtarget'@'%' IDENTIFIED VIA ed25519 USING PASSWORD('{ED_PASSWORD}');"
               " GRANT ALL ON *.* TO 'edtarget'@'%' WITH GRANT OPTION")
    source = f"mariadb://{REPL_USER}:{REPL_PASSWORD.replace('ä', '%C3%A4')}@127.0.0.1:{login_primary.port}"
    status = cli_main(["replicate", "--no-defaults", "--quiet", "--from", source, "--host=127.0.0.1",
                       f"--port={target.port}", "--user=edtarget", f"--password={ED_PASSWORD}",
                       f"--ssl-ca={ca[0]}"])
    assert status == 0
    assert target.rows("SELECT id, v FROM lg.t") == [("1", "a")]
    assert cli_main(["replicate", "--no-defaults", "--quiet", "--from", source, "--host=127.0.0.1",
                     f"--port={target.port}", "--user=edtarget", "--password=wrong"]) == 1
    assert "Access denied for user" in capsys.readouterr().err


def test_serve_accepts_ed25519_logins(login_primary: MariaDBServer, tmp_path: Path) -> None:
    directory = tmp_path / "arch"
    assert cli_main(["archive", "--no-defaults", "--quiet", "--dir", str(directory), "--host=127.0.0.1",
                     f"--port={login_primary.port}", f"--user={REPL_USER}", f"--password={REPL_PASSWORD}"]) == 0
    server = BinlogServer(ServerConfig(str(directory), ed25519_accounts={ED_USER: ed25519_key(ED_PASSWORD)})).start()
    try:
        host, port = server.address
        good = ConnectionOptions(host=host, port=port, user=ED_USER, password=ED_PASSWORD)
        groups = list(BinlogClient(good, blocking=False).groups())
        assert [str(g.gtid) for g in groups] == binlog_gtids(login_primary)
        bad = ConnectionOptions(host=host, port=port, user=ED_USER, password="wrong")
        with pytest.raises(ServerError, match="Access denied"):
            list(BinlogClient(bad, blocking=False, reconnect=0).groups())
    finally:
        server.stop()


def test_a_real_replica_logs_in_to_serve_with_ed25519(
    login_primary: MariaDBServer, mariadb_server_factory: MariaDBServerFactory, tmp_path: Path
) -> None:
    directory = tmp_path / "arch"
    assert cli_main(["archive", "--no-defaults", "--quiet", "--dir", str(directory), "--host=127.0.0.1",
                     f"--port={login_primary.port}", f"--user={REPL_USER}", f"--password={REPL_PASSWORD}"]) == 0
    server = BinlogServer(ServerConfig(str(directory), ed25519_accounts={ED_USER: ed25519_key(ED_PASSWORD)})).start()
    # The replica's I/O thread loads client_ed25519.so from its plugin_dir; Debian ships that
    # client plugin with libmariadb3, beside (not in) the server's plugins.
    client_plugin = next(Path("/usr/lib").glob("*/libmariadb3/plugin/client_ed25519.so"), None)
    assert client_plugin is not None, "client_ed25519.so is missing: apt-get install libmariadb3"
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    for plugin in (*Path("/usr/lib/mysql/plugin").glob("*.so"), client_plugin):
        (plugins / plugin.name).symlink_to(plugin)
    replica = mariadb_server_factory("--server-id=5", f"--plugin-dir={plugins}", "--plugin-load-add=auth_ed25519",
                                     name="ed-replica")
    try:
        host, port = server.address
        replica.sql(f"CHANGE MASTER TO MASTER_HOST='{host}', MASTER_PORT={port}, MASTER_USER='{ED_USER}',"
                    f" MASTER_PASSWORD='{ED_PASSWORD}', MASTER_USE_GTID=slave_pos; START SLAVE")
        wanted = login_primary.rows("SELECT @@gtid_binlog_pos")[0][0]
        deadline = time.monotonic() + 60
        while replica.rows("SELECT @@gtid_slave_pos")[0][0] != wanted:
            status = replica.records("SHOW SLAVE STATUS")[0]
            assert time.monotonic() < deadline, (
                f"replica did not catch up to {wanted}: {status['Slave_IO_Running']} {status['Last_IO_Error']}"
                f" {status['Slave_SQL_Running']} {status['Last_SQL_Error']} {status['Gtid_IO_Pos']}"
            )
            time.sleep(0.2)
        assert replica.rows("SELECT id, v FROM lg.t") == [("1", "a")]
        replica.sql("STOP SLAVE")
    finally:
        server.stop()


def _on_a_terminal(command: list[str], answer: str) -> bytes:
    """Run ``command`` on a new pseudo-terminal, answer its password prompt; everything it wrote there."""
    import pty

    pid, fd = pty.fork()
    if pid == 0:  # the child: exec, never return
        os.environ["TZ"] = "UTC"
        os.execvp(command[0], command)
    output = b""
    answered = False
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        output += chunk
        if not answered and b"Enter password: " in output:
            os.write(fd, answer.encode() + b"\n")
            answered = True
    os.close(fd)
    _, status = os.waitpid(pid, 0)
    return output + f"\nexit {os.waitstatus_to_exitcode(status)}".encode()


def test_dump_remote_asks_for_the_password_on_the_terminal(login_primary: MariaDBServer) -> None:
    log = login_primary.binlog_files()[-1].name
    args = ["--no-defaults", "-R", "--host=127.0.0.1", f"--port={login_primary.port}", f"--user={ED_USER}", "-p", log]
    real = _on_a_terminal([program("mariadb-binlog"), *args], ED_PASSWORD)
    ours = _on_a_terminal([sys.executable, "-m", "mariabinlog", "dump", *args], ED_PASSWORD)
    assert real.startswith(b"Enter password: ") and real.endswith(b"exit 0"), real[-500:]
    assert ours == real


def test_archive_print_defaults_keeps_the_connection_settings_and_its_own_group(tmp_path: Path) -> None:
    cnf = tmp_path / "my.cnf"
    cnf.write_text("[client]\nuser=u\ndefault-character-set=utf8mb4\nssl_ca=/ca.pem\nskip-ssl\nloose-ssl-verify-server-cert=ON\n"
                   "[mariabinlog-archive]\nstop_never\n[mariabinlog-replicate]\nparallel=2\n")
    result = subprocess.run([sys.executable, "-m", "mariabinlog", "archive", f"--defaults-file={cnf}", "--print-defaults",
                             "--dir", "d"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout == ("mariabinlog archive would have been started with the following arguments:\n"
                             "--user=u --ssl-ca=/ca.pem --ssl-verify-server-cert --stop-never --dir d \n")


def test_tls_settings_choose_the_version(login_primary: MariaDBServer, ca: tuple[Path, Path, Path]) -> None:
    for version in ("TLSv1.2", "TLSv1.3"):
        settings = ClientSettings(host="127.0.0.1", port=login_primary.port, user=ED_USER, password=ED_PASSWORD,
                                  ssl_ca=str(ca[0]), ssl_verify_server_cert=True, tls_version=version)
        with Connection.open(ConnectionOptions.from_client_settings(settings)) as conn:
            assert conn.rows("SHOW SESSION STATUS LIKE 'Ssl_version'")[0][1] == version.encode()
