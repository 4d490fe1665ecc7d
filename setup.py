"""Build of the optional C extension; all other metadata is in pyproject.toml.

``mariabinlog.codec._rowsfast`` is the compiled row-image decoder behind
``mariabinlog.codec.rows``, which falls back to pure Python without it: a
failed compile (no C compiler) does not fail the install (``optional=True``).
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("mariabinlog.codec._rowsfast", ["src/mariabinlog/codec/_rowsfast.c"], optional=True)])
