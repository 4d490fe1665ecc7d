"""Loading the optional compiled fast paths (C extensions built by ``pip install -e .``).

Every compiled module sits behind a pure-Python implementation with identical
results, so a missing compiler, a stale build or ``MARIABINLOG_PURE_PYTHON=1``
only costs speed.  A build whose version stamp does not match the Python code
that drives it is ignored with a warning rather than trusted.
"""

from __future__ import annotations

import importlib
import os
import warnings
from types import ModuleType


#: The version of ``codec/_framefast.c`` the codec drives (``groups.py``, ``framing.py``,
#: ``ibb/reader.py``, ``events/rows.py``): bump with its FAST_VERSION whenever an API or a
#: result changes.
FRAMEFAST_VERSION = 6


def load_fast(module_name: str, version_attr: str, version: int, driver: str) -> ModuleType | None:
    """The compiled module ``module_name``, or None (not built, stale, or pure Python forced)."""
    if os.environ.get("MARIABINLOG_PURE_PYTHON", "") not in ("", "0"):
        return None
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        return None
    if getattr(module, version_attr, None) != version:
        warnings.warn(
            f"ignoring {module.__file__}: built for another {driver} (reinstall: pip install -e .)",
            RuntimeWarning,
            stacklevel=3,
        )
        return None
    return module
