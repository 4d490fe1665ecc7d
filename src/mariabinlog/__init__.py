"""mariabinlog: read, store, replicate and analyse MariaDB binary logs (legacy and .ibb)."""

#: The package version: the one place it is written (``--version``, Debezium's ``source.version``
#: and every server version below derive from it).
__version__ = "0.1.0"

#: The MariaDB release whose binlog storage engine (`.ibb`) this package writes as.
MARIADB_VERSION = "12.3.0"


def server_version(mariadb: str = MARIADB_VERSION) -> str:
    """The server version our files and handshakes carry, in MariaDB's ``<release>-MariaDB-<suffix>``
    form (the release prefix is what servers and replicas parse), with this package as the suffix."""
    return f"{mariadb}-MariaDB-mariabinlog-{__version__}"
