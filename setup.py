"""Build of the optional C extensions; all other metadata is in pyproject.toml.

``mariabinlog.codec.rows._rowsfast`` is the compiled row-image decoder behind
``mariabinlog.codec.rows``; ``mariabinlog.spark._arrowfast`` the Spark rows view's Arrow
builder behind ``mariabinlog.spark.read`` (it reads the same row images: both include
``codec/rows/_rowimage.h``); ``mariabinlog.codec._framefast`` the event path behind
``mariabinlog.codec.framing`` (framing, CRC32, group assembly); ``mariabinlog.tools.printer._dumpfast`` holds the dump
printer's hot loops (base64 lines, row counts, ``###`` lines, whole OLTP groups).  Both walk
events with ``codec/_event.h``, the one C reader of event headers, CRC-32 and post-headers.  The modules
fall back to pure Python without them: a failed compile (no C compiler) does
not fail the install (``optional=True``).  ``_rowsfast``, ``_arrowfast`` and ``_dumpfast`` include ``codec/rows/_decimal.h``, the one
C implementation of packed DECIMAL, and ``codec/rows/_digits.h`` (decimal digits two at a time); ``_arrowfast`` renders FLOAT/DOUBLE values as
``float.__repr__`` by ``codec/rows/_shortest.h`` (Ryu, with the powers of five that
``scripts/gen_pow5_table.py`` writes into ``codec/rows/_pow5.h``).
"""

from setuptools import Extension, setup

_DECIMAL_H = "src/mariabinlog/codec/rows/_decimal.h"
_DIGITS_H = "src/mariabinlog/codec/rows/_digits.h"
_ROWIMAGE_H = "src/mariabinlog/codec/rows/_rowimage.h"
_EVENT_H = "src/mariabinlog/codec/_event.h"

setup(
    ext_modules=[
        Extension(
            "mariabinlog.codec.rows._rowsfast",
            ["src/mariabinlog/codec/rows/_rowsfast.c"],
            depends=[_ROWIMAGE_H, _DECIMAL_H],
            optional=True,
        ),
        Extension(
            "mariabinlog.spark._arrowfast",
            ["src/mariabinlog/spark/_arrowfast.c"],
            depends=[_ROWIMAGE_H, _DECIMAL_H, _DIGITS_H, "src/mariabinlog/codec/rows/_shortest.h",
                     "src/mariabinlog/codec/rows/_pow5.h"],
            optional=True,
        ),
        Extension(
            "mariabinlog.codec._framefast",
            ["src/mariabinlog/codec/_framefast.c"],
            depends=[_EVENT_H],
            optional=True,
        ),
        Extension(
            "mariabinlog.tools.printer._dumpfast",
            ["src/mariabinlog/tools/printer/_dumpfast.c"],
            depends=[_EVENT_H, _DECIMAL_H, _DIGITS_H],
            optional=True,
        ),
    ]
)
