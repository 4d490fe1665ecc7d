"""The compiled FLOAT/DOUBLE text (``codec/rows/_shortest.h``, Ryu) against ``float.__repr__``.

The rows view renders floating-point values as ``repr`` does; the map builder does it in C.
Every class of double where a shortest-digits conversion can go wrong is checked against
CPython's own conversion: random bit patterns (every exponent, subnormals), the neighbours of
every power of two (the narrower lower gap) and of every power of ten, integers near 2**53,
values with few digits (where the interval holds several shortest decimals), FLOAT values
widened to double, and the layout switches of repr (positional up to 16 digits before the
point and from 1e-4, exponent form outside).  The powers-of-five table is checked against
the generator that wrote it.
"""

from __future__ import annotations

import math
import random
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from mariabinlog.codec import rows

pytestmark = pytest.mark.skipif("c" not in rows.IMPLEMENTATIONS, reason="C extension not built")

REPO = Path(__file__).resolve().parents[2]


def _repr(x: float) -> str:
    from mariabinlog.spark._arrowfast import double_repr

    return double_repr(x)


def _mismatches(values: list[float]) -> list[tuple[str, str]]:
    return [(repr(x), _repr(x)) for x in values if _repr(x) != repr(x)]


def test_the_pow5_table_is_what_the_generator_writes() -> None:
    proc = subprocess.run([sys.executable, str(REPO / "scripts" / "gen_pow5_table.py"), "--check"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize(
    "x",
    [0.0, -0.0, 1.0, -1.0, 0.1, 0.3, 2.5, 1 / 3, 0.14287471428571427, 1e15, 1e16, 9007199254740992.0,
     123456789012345678.0, 1e-4, 1e-5, 0.00012345, 1.5e-7, 1e22, 1e23, 5e-324, 2.2250738585072014e-308,
     2.225073858507201e-308, 1.7976931348623157e308, math.inf, -math.inf, math.nan, 3.4028234663852886e38],
)
def test_edges(x: float) -> None:
    assert _repr(x) == repr(x)


def test_random_bit_patterns() -> None:
    rnd = random.Random(20261126)
    unpack = struct.Struct("<d").unpack
    values = [unpack(rnd.getrandbits(64).to_bytes(8, "little"))[0] for _ in range(300_000)]
    assert _mismatches(values) == []


def test_neighbours_of_powers_of_two_and_ten() -> None:
    values = []
    for e in range(-1074, 1024):
        for x in (2.0**e, 1.5 * 2.0**e if e < 1023 else 1.0):
            values += [x, math.nextafter(x, 0), math.nextafter(x, math.inf)]
    for e in range(-323, 309):
        x = float(f"1e{e}")
        values += [x, math.nextafter(x, 0), math.nextafter(x, math.inf)]
    assert _mismatches(values) == []


def test_short_decimals_integers_and_floats() -> None:
    rnd = random.Random(7)
    values = []
    for _ in range(50_000):
        values.append(round(rnd.uniform(-1e6, 1e6), rnd.randrange(0, 9)))  # few digits
        values.append(float(rnd.getrandbits(rnd.randrange(1, 64))))  # integers, around 2**53 too
        values.append(struct.unpack("<f", struct.pack("<f", rnd.uniform(-1e10, 1e10)))[0])  # FLOAT columns
        values.append(rnd.randrange(1, 10**6) * 10.0 ** rnd.randrange(-320, 300))
        values.append(rnd.random())
    assert _mismatches(values) == []
