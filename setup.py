"""Build of the optional C extensions; all other metadata is in pyproject.toml.

``mariabinlog.codec._rowsfast`` is the compiled row-image decoder behind
``mariabinlog.codec.rows``; ``mariabinlog.codec._framefast`` the event path behind
``mariabinlog.codec.framing`` (framing, CRC32, group assembly); ``mariabinlog.tools._dumpfast`` holds the dump
printer's hot loops (base64 lines, row counts, ``###`` lines).  The modules
fall back to pure Python without them: a failed compile (no C compiler) does
not fail the install (``optional=True``).  ``_rowsfast`` and ``_dumpfast`` include ``codec/_decimal.h``, the one
C implementation of packed DECIMAL, and ``codec/_digits.h`` (decimal digits two at a time); ``_rowsfast`` renders FLOAT/DOUBLE values as
``float.__repr__`` by ``codec/_shortest.h`` (Ryu, with the powers of five that
``scripts/gen_pow5_table.py`` writes into ``codec/_pow5.h``).
"""

from setuptools import Extension, setup

_DECIMAL_H = "src/mariabinlog/codec/_decimal.h"
_DIGITS_H = "src/mariabinlog/codec/_digits.h"

setup(
    ext_modules=[
        Extension(
            "mariabinlog.codec._rowsfast",
            ["src/mariabinlog/codec/_rowsfast.c"],
            depends=[_DECIMAL_H, _DIGITS_H, "src/mariabinlog/codec/_shortest.h", "src/mariabinlog/codec/_pow5.h"],
            optional=True,
        ),
        Extension(
            "mariabinlog.codec._framefast",
            ["src/mariabinlog/codec/_framefast.c"],
            optional=True,
        ),
        Extension(
            "mariabinlog.tools._dumpfast",
            ["src/mariabinlog/tools/_dumpfast.c"],
            depends=[_DECIMAL_H, _DIGITS_H],
            optional=True,
        ),
    ]
)
