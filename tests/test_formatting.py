"""A moment as the pages and exports show it: the language's short format, by `strftime`
where the format allows (as Django's `date_format` would write it, faster), else by
Django's own."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.utils import formats, timezone, translation

from portal.lib import formatting

MOMENTS = [
    datetime(2026, 3, 4, 15, 7, 9, tzinfo=UTC),
    datetime(2026, 12, 31, 23, 59, tzinfo=UTC),
    datetime(2027, 1, 1, 3, 0, tzinfo=UTC),  # midnight in São Paulo
    datetime(2026, 7, 9, 15, 0, tzinfo=UTC),  # noon there
]


@pytest.mark.parametrize("language", ["pt-br", "en"])
def test_a_moment_is_written_as_djangos_date_format_writes_it(language):
    with translation.override(language):
        for moment in MOMENTS:
            expected = formats.date_format(timezone.localtime(moment), "SHORT_DATETIME_FORMAT")
            assert formatting.moment(moment) == expected


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("d/m/Y H:i", "04/03/2026 12:07"),
        (r"Y-m-d \a\s H\hi", "2026-03-04 as 12h07"),
        ("d/m/Y P", "04/03/2026 12:07 p.m."),  # P: from the table of the day's minutes
        ("g:i A \\o\\n j/n", "12:07 PM on 4/3"),  # j and n have no twin: Django's own
        ("Y%m", "2026%03"),
    ],
)
def test_every_format_is_written_as_django_writes_it(settings, pattern, expected):
    settings.SHORT_DATETIME_FORMAT = pattern
    formatting._short_datetime.cache_clear()
    try:
        with translation.override(None):
            local = timezone.localtime(MOMENTS[0])
            assert formatting.moment(MOMENTS[0]) == expected
            assert formats.date_format(local, "SHORT_DATETIME_FORMAT") == expected
    finally:
        formatting._short_datetime.cache_clear()


@pytest.mark.parametrize("language", ["en", "pt-br"])
def test_every_minute_of_the_day_is_written_as_django_writes_it(language):
    """English's short format ends in `P` ("2:30 p.m.", "midnight", "noon"), written from
    a table: each of the day's minutes as Django's own would write it."""
    day = timezone.localtime(MOMENTS[0]).replace(hour=0, minute=0, second=0)
    with translation.override(language):
        for minute in range(24 * 60):
            moment = day + timedelta(minutes=minute)
            expected = formats.date_format(moment, "SHORT_DATETIME_FORMAT")
            assert formatting.moment(moment) == expected, moment
