"""mariabinlog: read, store, replicate and analyse MariaDB binary logs (legacy and .ibb)."""

__version__ = "0.1.0"
