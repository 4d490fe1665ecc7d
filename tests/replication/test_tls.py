"""TLS: the client streams from a real MariaDB primary over TLS (certificate checked against its CA),
and the binlog server serves over TLS."""

from __future__ import annotations

import re
import shutil
import socket
import ssl
import subprocess
from pathlib import Path

import pytest
from mariadb_server import MariaDBServer, MariaDBServerFactory
from replication_helpers import (
    PRIMARY_OPTIONS,
    REPL_PASSWORD,
    REPL_USER,
    binlog_gtids,
    create_repl_user,
)

from mariabinlog.codec.wire.packets import AuthSwitchRequest, OkPacket
from mariabinlog.codec.wire.protocol import NEED_DATA, ClientProtocol
from mariabinlog.replication.client import BinlogClient
from mariabinlog.replication.net import Connection, ConnectionOptions
from mariabinlog.replication.server import BinlogServer, ServerConfig, hash_password


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 made with the openssl command."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("the openssl command is needed to make a test certificate")
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        [openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True, timeout=60,
    )
    return cert, key


@pytest.fixture(scope="module")
def tls_primary(mariadb_server_factory: MariaDBServerFactory, certificate: tuple[Path, Path]) -> MariaDBServer:
    cert, key = certificate
    server = mariadb_server_factory(*PRIMARY_OPTIONS, "--server-id=1", f"--ssl-cert={cert}", f"--ssl-key={key}",
                                    name="tls-primary")
    create_repl_user(server)
    server.sql("CREATE DATABASE t; CREATE TABLE t.x (id INT PRIMARY KEY); INSERT INTO t.x VALUES (1), (2)")
    return server


def test_client_streams_over_verified_tls(tls_primary: MariaDBServer, certificate: tuple[Path, Path]) -> None:
    cert, _ = certificate
    password = REPL_PASSWORD.replace("ä", "%C3%A4")
    url = f"mariadb://{REPL_USER}:{password}@127.0.0.1:{tls_primary.port}/?ssl_ca={cert}"
    options = ConnectionOptions.from_url(url)
    with Connection.open(options) as conn:
        assert conn.rows("SHOW SESSION STATUS LIKE 'Ssl_cipher'")[0][1]
    groups = list(BinlogClient(options, blocking=False).groups())
    assert [str(g.gtid) for g in groups] == binlog_gtids(tls_primary)


def _serve_archive_over_tls(primary: MariaDBServer, certificate: tuple[Path, Path], directory: Path) -> BinlogServer:
    """``primary`` archived over TLS into ``directory``, and ``serve`` started on it with TLS."""
    from mariabinlog.cli import main as cli_main

    cert, key = certificate
    password = REPL_PASSWORD.replace("ä", "%C3%A4")
    assert cli_main(["archive", "--quiet", "--from", f"mariadb://{REPL_USER}:{password}@127.0.0.1:{primary.port}/?ssl=1",
                     "--dir", str(directory)]) == 0
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(str(cert), str(key))
    return BinlogServer(ServerConfig(str(directory), {REPL_USER: hash_password(REPL_PASSWORD)}, ssl=context)).start()


def test_binlog_server_over_tls(tls_primary: MariaDBServer, certificate: tuple[Path, Path], tmp_path: Path) -> None:
    cert, _ = certificate
    server = _serve_archive_over_tls(tls_primary, certificate, tmp_path / "arch")
    try:
        host, port = server.address
        client_context = ssl.create_default_context(cafile=str(cert))
        options = ConnectionOptions(host=host, port=port, user=REPL_USER, password=REPL_PASSWORD, ssl=client_context)
        groups = list(BinlogClient(options, blocking=False).groups())
        assert [str(g.gtid) for g in groups] == binlog_gtids(tls_primary)
    finally:
        server.stop()


def _login_with_the_hello_behind_the_request(address: tuple[str, int], context: ssl.SSLContext) -> object:
    """Log in over TLS sending the SSL request and the TLS hello in ONE segment, as a client
    may and as a loaded server finds them anyway: the server must leave the hello to TLS."""
    proto = ClientProtocol()
    with socket.create_connection(address, timeout=10) as sock:
        def event() -> object:
            while (got := proto.next_event()) is NEED_DATA:
                data = sock.recv(1 << 16)
                assert data, "the server closed the connection"
                proto.receive_data(data)
            return got

        event()  # the handshake
        incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        tls = context.wrap_bio(incoming, outgoing, server_hostname=address[0])
        with pytest.raises(ssl.SSLWantReadError):
            tls.do_handshake()
        sock.sendall(proto.send_ssl_request() + outgoing.read())

        def pump() -> None:
            if pending := outgoing.read():
                sock.sendall(pending)
            data = sock.recv(1 << 16)
            assert data, "the server closed the connection during the TLS handshake"
            incoming.write(data)

        while True:
            try:
                tls.do_handshake()
                break
            except ssl.SSLWantReadError:
                pump()
        tls.write(proto.send_handshake_response(REPL_USER, REPL_PASSWORD))
        while True:
            try:
                data = tls.read(1 << 16)
            except ssl.SSLWantReadError:
                pump()
                continue
            proto.receive_data(data)
            got = proto.next_event()
            if isinstance(got, AuthSwitchRequest):
                tls.write(proto.send_auth_switch_response(got))
            elif got is not NEED_DATA:
                return got


@pytest.mark.parametrize("peer", ["mariadb", "serve"])
def test_a_tls_hello_in_the_same_segment_as_the_ssl_request(
    peer: str, tls_primary: MariaDBServer, certificate: tuple[Path, Path], tmp_path: Path
) -> None:
    cert, key = certificate
    client_context = ssl.create_default_context(cafile=str(cert))
    if peer == "mariadb":  # the real server shows the test's login is a valid one
        assert isinstance(_login_with_the_hello_behind_the_request(("127.0.0.1", tls_primary.port), client_context), OkPacket)
        return
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(str(cert), str(key))
    server = BinlogServer(
        ServerConfig(str(tmp_path), {REPL_USER: hash_password(REPL_PASSWORD)}, ssl=context, connect_timeout=3)
    ).start()
    try:
        for _ in range(4):  # past the door's threshold: each login succeeds at once
            assert isinstance(_login_with_the_hello_behind_the_request(server.address, client_context), OkPacket)
        assert server.admission.failures("127.0.0.1") == 0
    finally:
        server.stop()


def test_a_native_replica_reads_serve_over_tls(
    tls_primary: MariaDBServer, certificate: tuple[Path, Path], tmp_path: Path,
    mariadb_server_factory: MariaDBServerFactory,
) -> None:
    """A real MariaDB replica with ``MASTER_SSL=1`` and the certificate's CA replicates from
    ``serve`` over TLS, as from a primary."""
    from mariabinlog.codec.gtid import ConnectState
    from mariadb_server import program
    from replication_helpers import gtid_binlog_pos, wait_for

    cert, _ = certificate
    directory = tmp_path / "arch"
    server = _serve_archive_over_tls(tls_primary, certificate, directory)
    replica = mariadb_server_factory("--server-id=7", name="tls-replica")
    try:
        replica.sql(
            f"CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT={server.address[1]}, MASTER_USER='{REPL_USER}',"
            f" MASTER_PASSWORD='{REPL_PASSWORD}', MASTER_USE_GTID=slave_pos, MASTER_SSL=1, MASTER_SSL_CA='{cert}',"
            " MASTER_SSL_VERIFY_SERVER_CERT=1; START SLAVE"
        )
        position = ConnectState.parse(gtid_binlog_pos(tls_primary))

        def caught_up() -> bool:
            status = replica.records("SHOW SLAVE STATUS")[0]
            assert not status["Last_IO_Error"] and not status["Last_SQL_Error"], status
            return ConnectState.parse(replica.rows("SELECT @@gtid_slave_pos")[0][0]) == position

        wait_for(caught_up, 60, f"the replica to reach {position}")
        assert replica.records("SHOW SLAVE STATUS")[0]["Master_SSL_Allowed"] == "Yes"
        assert replica.checksum_table("t.x") == tls_primary.checksum_table("t.x")
        # The real mariadb-binlog reads it over TLS too, certificate checked (by GTID, from after
        # the first group: serves an engine binlog, which refuses file and offset as 12.3 does).
        first = sorted(directory.glob("binlog-*.ibb"))[0].name
        real = subprocess.run(
            [program("mariadb-binlog"), "--no-defaults", "-R", "--host=127.0.0.1", f"--port={server.address[1]}",
             f"--user={REPL_USER}", f"--password={REPL_PASSWORD}", f"--ssl-ca={cert}", "--ssl-verify-server-cert",
             "--to-last-log", "--start-position=0-1-1", first],
            capture_output=True, timeout=60,
        )
        assert real.returncode == 0, real.stderr
        assert re.findall(r"\tGTID (\d+-\d+-\d+)", real.stdout.decode()) == binlog_gtids(tls_primary)[1:]
    finally:
        replica.sql("STOP SLAVE")
        server.stop()
