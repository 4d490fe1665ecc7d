"""Debezium's encoding of temporal values at the edges of what MariaDB stores and past them."""

from __future__ import annotations

import datetime

import pytest

from mariabinlog.codec import columns as C
from mariabinlog.codec.rows import MysqlDate, MysqlDateTime, MysqlTimestamp
from mariabinlog.tools.debezium import encode_value


def _days(day: datetime.date) -> int:
    return (day - datetime.date(1970, 1, 1)).days


@pytest.mark.parametrize(
    ("value", "days"),
    [
        (MysqlDate(1970, 1, 1), 0),
        (MysqlDate(2024, 2, 29), _days(datetime.date(2024, 2, 29))),
        (MysqlDate(1, 1, 1), _days(datetime.date(1, 1, 1))),
        (MysqlDate(0, 1, 1), _days(datetime.date(1, 1, 1)) - 366),  # year 0 is a leap year
        (MysqlDate(9999, 12, 31), _days(datetime.date(9999, 12, 31))),
        (MysqlDate(0, 0, 0), None),  # the zero date
        (MysqlDate(2024, 0, 5), None),
        (MysqlDate(2023, 2, 29), None),  # ALLOW_INVALID_DATES keeps it; no calendar has it
        (MysqlDate(2023, 13, 1), None),  # damaged bytes
    ],
)
def test_dates_are_days_from_the_epoch_year_zero_included(value: MysqlDate, days: int | None) -> None:
    assert encode_value(value, C.MYSQL_TYPE_DATE, 0, None) == days


def test_datetimes_of_year_zero_and_past_the_calendar() -> None:
    """A DATETIME of year 0 (legal in MariaDB) raised ValueError out of Python's datetime, a
    crash of ``--format=debezium``; now it counts back from the epoch like any other."""
    first = MysqlDateTime(0, 1, 1, 0, 0, 0, 0)
    assert encode_value(first, C.MYSQL_TYPE_DATETIME2, 6, None) == (_days(datetime.date(1, 1, 1)) - 366) * 86_400_000_000
    value = MysqlDateTime(2024, 1, 31, 12, 0, 0, 125_000)
    micros = (datetime.datetime(2024, 1, 31, 12, 0, 0, 125_000) - datetime.datetime(1970, 1, 1)) // datetime.timedelta(microseconds=1)
    assert encode_value(value, C.MYSQL_TYPE_DATETIME2, 6, None) == micros
    assert encode_value(value, C.MYSQL_TYPE_DATETIME2, 3, None) == micros // 1000
    for bad in (MysqlDateTime(2024, 2, 30, 0, 0, 0, 0), MysqlDateTime(2024, 1, 1, 24, 0, 0, 0),
                MysqlDateTime(2024, 1, 1, 0, 0, 0, 1_000_000), MysqlDateTime(0, 0, 0, 0, 0, 0, 0)):
        assert encode_value(bad, C.MYSQL_TYPE_DATETIME2, 6, None) is None


def test_a_timestamp_fraction_past_999999_is_null_not_a_crash() -> None:
    """TIMESTAMP(6) stores its fraction in three bytes, so damaged bytes can say 16,777,215 µs:
    ``--format=debezium`` died with ValueError there (found by the dump-ibb fuzz target, stop
    37).  Such a value is null, as the Spark rows view gives it."""
    assert encode_value(MysqlTimestamp(1_700_000_000, 16_777_215), C.MYSQL_TYPE_TIMESTAMP2, 6, None) is None
    assert encode_value(MysqlTimestamp(1_706_702_400, 125_000), C.MYSQL_TYPE_TIMESTAMP2, 6, None) == "2024-01-31T12:00:00.125000Z"
    assert encode_value(MysqlTimestamp(0, 0), C.MYSQL_TYPE_TIMESTAMP2, 0, None) is None
