"""Make the committed seed corpus: ``python -m fuzz.seeds [--out fuzz/seeds]``.

Seeds come from what the project already has or makes itself, never from the reading room:

* legacy binlogs of ``tests/corpus/binlogs`` (real MariaDB 10.11 files): small files whole,
  large ones as windows of consecutive events behind their Format_description;
* event groups cut from them (no footers, as `.ibb` files and engine-style streams hold them);
* `.ibb` files written by the project's own engine (the bundled sample: small files, GTID
  state records, out-of-band forests, groups across files) and the corpus converted to `.ibb`
  by ``dump --convert-to-engine-binlog``, in the compact page form of :func:`fuzz.targets.ibb_pages`;
* a replication conversation recorded on loopback between the real client and ``serve``
  (each direction seeds the side that reads it);
* the corpus workloads' DDL statements, a few option files and GTID texts.

Seeds are named by the SHA-1 of their content, so a rerun rewrites the same files.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import os
import shutil
import socket
import tempfile
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO / "tests" / "corpus"
PAGE_SIZE = 16384

#: Largest seed of a raw file; windows of events keep bigger files' seeds under it.
MAX_SEED = 12 * 1024


def _corpus_files() -> list[Path]:
    files = sorted(p for p in (CORPUS / "binlogs").glob("*/mysql-bin.*"))
    if not files:
        raise SystemExit(f"no binlogs under {CORPUS / 'binlogs'}: run scripts/make-corpus.sh")
    return files


def _read(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if path.suffix == ".gz" else data


def _events(data: bytes) -> list[tuple[int, int]]:
    """(start, end) of each event of a legacy file, by its framing."""
    spans, pos = [], 4
    while pos + 19 <= len(data):
        length = int.from_bytes(data[pos + 9 : pos + 13], "little")
        if length < 19 or pos + length > len(data):
            break
        spans.append((pos, pos + length))
        pos += length
    return spans


def legacy_seeds() -> Iterator[bytes]:
    """Small corpus files whole; windows of events (behind the FD) of the others."""
    for path in _corpus_files():
        data = _read(path)
        if len(data) <= MAX_SEED:
            yield data
            continue
        spans = _events(data)
        head = data[: spans[0][1]]
        window: list[tuple[int, int]] = []
        taken = 0
        for span in spans[1:]:
            if not window and data[span[0] + 4] != 162:
                continue  # windows start at a GTID event: their rows have their Table_map
            window.append(span)
            if sum(e - s for s, e in window) > MAX_SEED // 3:
                yield head + b"".join(data[s:e] for s, e in window)
                window = []
                taken += 1
                if taken >= 12:
                    break


def group_seeds() -> Iterator[bytes]:
    """Event groups (GTID event to the end of the group) without CRC footers, as `.ibb` keeps them."""
    from mariabinlog.codec.events import GTID_EVENT, reframe
    from mariabinlog.codec.events.stream import EventStreamDecoder

    for path in _corpus_files():
        data = _read(path)
        decoder = EventStreamDecoder()
        group: list[bytes] = []
        count = 0
        for start, end in _events(data):
            decoder.decode(data, start)
            footer = 4 if decoder.checksum_alg == 1 and data[start + 4] != 15 else 0
            raw = reframe(data[start : end - footer])
            if data[start + 4] == GTID_EVENT and group:
                if sum(map(len, group)) <= MAX_SEED:
                    yield b"".join(group)
                count += 1
                group = []
                if count >= 10:
                    break
            if data[start + 4] != 15:
                group.append(raw)
        if group and count < 10 and sum(map(len, group)) <= MAX_SEED:
            yield b"".join(group)


def compact(files: list[bytes]) -> bytes:
    """`.ibb` files in the compact page form (byte 0: pages of the first file)."""
    pages: list[bytes] = []
    counts = []
    for data in files:
        file_pages = [data[i : i + PAGE_SIZE] for i in range(0, len(data), PAGE_SIZE)]
        while file_pages and not any(file_pages[-1]):
            file_pages.pop()
        counts.append(len(file_pages))
        pages += file_pages
    out = bytearray([min(counts[0], 255)])
    for page in pages:
        body = page[: PAGE_SIZE - 4].rstrip(b"\0") if any(page) else b""
        out += len(body).to_bytes(2, "little") + body
    return bytes(out)


def _ibb_dirs(work: Path) -> list[Path]:
    """Directories of `.ibb` files: the engine's sample and corpus files converted to `.ibb`."""
    from mariabinlog.tools.dump.cli import dump_main
    from mariabinlog.tools.sample import write_sample

    dirs = []
    sample = work / "sample"
    write_sample(str(sample), transactions=40)
    dirs.append(sample)
    for path in _corpus_files():
        if path.stat().st_size > 300_000:
            continue
        out = work / f"conv-{path.parent.name}-{path.name}"
        source = work / f"{path.parent.name}-{path.name}"
        source.write_bytes(_read(path))
        if dump_main(["--convert-to-engine-binlog", str(out), str(source)], stdout=open(os.devnull, "wb"), stderr=open(os.devnull, "w")) == 0:
            dirs.append(out)
    return dirs


def ibb_seeds(work: Path) -> Iterator[bytes]:
    """Pairs of consecutive `.ibb` files of each directory, compact (first pages of long ones)."""
    for directory in _ibb_dirs(work):
        names = sorted(p for p in directory.glob("binlog-*.ibb"))
        datas = []
        for name in names:
            data = name.read_bytes()
            end = len(data)
            while end > PAGE_SIZE and not any(data[end - PAGE_SIZE : end]):
                end -= PAGE_SIZE
            datas.append(data[:end])
        for index in range(0, len(datas), 2):
            pair = datas[index : index + 2]
            seed = compact(pair)
            if len(seed) > 200_000:
                seed = compact([pair[0][: 8 * PAGE_SIZE]])
            yield seed
            if index >= 8:
                break


def record_seeds(ibb: Iterable[bytes]) -> Iterator[bytes]:
    """Each record of the `.ibb` seeds as type byte + payload."""
    from fuzz.targets import MemoryPages, ibb_pages

    from mariabinlog.codec.ibb import RecordReader
    from mariabinlog.errors import MariabinlogError

    seen = set()
    for seed in ibb:
        files, first = ibb_pages(seed)
        try:
            for record in RecordReader(MemoryPages(files, first), first):
                key = (record.type, len(record.payload) // 64)
                if key not in seen and len(record.payload) < 4000:
                    seen.add(key)
                    yield bytes([record.type]) + record.payload
        except MariabinlogError:
            continue


def conversation(archive: str) -> tuple[bytes, bytes]:
    """(server -> client, client -> server) bytes of a real client streaming from ``serve``."""
    from mariabinlog.replication.client import BinlogClient
    from mariabinlog.replication.net import ConnectionOptions
    from mariabinlog.replication.server import BinlogServer, ServerConfig

    server = BinlogServer(ServerConfig(archive, accounts={"repl": b""})).start()
    listener = socket.create_server(("127.0.0.1", 0))
    to_client = bytearray()
    to_server = bytearray()

    def pump(src: socket.socket, dst: socket.socket, log: bytearray) -> None:
        while data := src.recv(65536):
            log += data
            dst.sendall(data)
        try:
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass  # the other side closed first

    def proxy() -> None:
        conn, _ = listener.accept()
        upstream = socket.create_connection(server.address)
        threads = [
            threading.Thread(target=pump, args=(upstream, conn, to_client)),
            threading.Thread(target=pump, args=(conn, upstream, to_server)),
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(10)

    thread = threading.Thread(target=proxy, daemon=True)
    thread.start()
    try:
        options = ConnectionOptions(host="127.0.0.1", port=listener.getsockname()[1], user="repl")
        client = BinlogClient(options, heartbeat=0, reconnect=0, blocking=False, start="")
        for _ in client.groups():
            pass
    finally:
        thread.join(10)
        server.stop()
        listener.close()
    return bytes(to_client), bytes(to_server)


OPTION_FILES = [
    b"[client]\nuser=repl\npassword=\"se;cret\"  # comment\nport = 3307\n\n[mariadb-binlog]\nverbose\nbase64-output='decode-rows'\n",
    b"# a comment\n[mysqlbinlog]\nstart-position=0-1-5\nstop-datetime=\"2024-01-02 03:04:05\"\n[other]\nignored=1\n!include /nonexistent/my.cnf\n",
    b"[client-server]\n[client]\nhost=db1\nssl\nssl-ca=/etc/ca.pem\nloose-unknown-option=7\n[mariadb-binlog]\nskip-annotate-row-events\nshort-form\n",
    b"[mariadb-binlog]\ndatabase=d\\tb\nrewrite-db='a->b'\ndo-domain-ids=1,2\nprint-row-count=0\nflashback\n  ; semicolon comment\n",
]

GTID_TEXTS = [b"0-1-100", b"0-1-1,1-2-3,4294967295-4294967295-18446744073709551615", b"", b" 0-1-5 , 1-1-7 ", b"(1,2,3)", b"1,2"]


def ddl_seeds() -> Iterator[bytes]:
    """DDL statements of the corpus workloads, a few per seed, NUL-separated."""
    from mariabinlog.schema.ddl import is_ddl

    statements = []
    for path in sorted((CORPUS / "workloads" / "sql").glob("*.sql")):
        text = path.read_text(encoding="utf-8", errors="replace")
        for statement in text.split(";\n"):
            lines = [line for line in statement.splitlines() if line.strip() and not line.startswith("--")]
            sql = "\n".join(lines).strip()
            if sql.upper().startswith("SET TIMESTAMP"):
                sql = sql.split(";", 1)[-1].strip()
            if sql and len(sql) < 1500 and is_ddl(sql):
                statements.append(sql.encode())
    for index in range(0, len(statements), 3):
        yield b"\0".join(statements[index : index + 3])


def write(out: Path, target: str, seeds: Iterable[bytes], limit: int = 120) -> int:
    folder = out / target
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    count = 0
    for seed in seeds:
        (folder / hashlib.sha1(seed).hexdigest()).write_bytes(seed)
        count += 1
        if count >= limit:
            break
    return count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(REPO / "fuzz" / "seeds"))
    out = Path(parser.parse_args().out)
    legacy = list(legacy_seeds())
    groups = list(group_seeds())
    with tempfile.TemporaryDirectory(prefix="mariabinlog-seeds-") as tmp:
        work = Path(tmp)
        ibb = list(ibb_seeds(work))
        records = list(record_seeds(ibb))
        from mariabinlog.tools.sample import write_sample

        write_sample(str(work / "small"), transactions=2)
        to_client, to_server = conversation(str(work / "small"))
    counts = {
        "legacy": write(out, "legacy", legacy),
        "events": write(out, "events", groups),
        "ibb": write(out, "ibb", ibb),
        "ibb-records": write(out, "ibb-records", records),
        "engine-check": write(out, "engine-check", ibb),
        "dump": write(out, "dump", (bytes([i]) + seed for i, seed in enumerate(legacy))),
        "dump-ibb": write(out, "dump-ibb", (seed + bytes([i]) for i, seed in enumerate(ibb))),
        "spark": write(
            out,
            "spark",
            [bytes([(i % 8) << 5 | (i & 8)]) + seed for i, seed in enumerate(legacy)]
            + [bytes([(i % 8) << 5 | 4 | (i & 8)]) + seed for i, seed in enumerate(ibb)],
        ),
        "client": write(out, "client", [bytes([step]) + to_client for step in (0, 3, 255)]),
        "serve": write(out, "serve", [bytes([flag]) + to_server for flag in (0, 1, 40)]),
        "protocol": write(out, "protocol", [b"\x00" + to_client, b"\x01" + to_server, b"\x42" + to_client]),
        "optionfiles": write(out, "optionfiles", OPTION_FILES),
        "ddl": write(out, "ddl", ddl_seeds()),
        "gtid": write(out, "gtid", GTID_TEXTS),
    }
    for name, count in counts.items():
        print(f"{name:12} {count:4} seeds")


if __name__ == "__main__":
    main()
