"""A database part-way through the migrations a squash replaced is told so by `migrate`,
with what to do, instead of failing half-way on a model it cannot resolve."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.db import connection
from django.db.migrations.recorder import MigrationRecorder
from django.utils import translation

from portal.lib.squashed_migrations import squashed_migrations_applied_whole

SQUASH = ("fleet", "0001_squashed_0025_who_was_driving")


def as_applied(*names: str) -> None:
    """The database's record of fleet's migrations: these, and nothing else."""
    recorder = MigrationRecorder(connection)
    recorder.migration_qs.filter(app="fleet").delete()
    for name in names:
        recorder.record_applied("fleet", name)


@pytest.mark.django_db
def test_a_database_built_by_the_squash_passes():
    assert squashed_migrations_applied_whole(databases=["default"]) == []


@pytest.mark.django_db
def test_a_database_that_applied_every_squashed_migration_passes():
    replaced = [name for _app, name in _replaced()]
    as_applied(*replaced)

    assert squashed_migrations_applied_whole(databases=["default"]) == []


@pytest.mark.django_db
def test_a_database_part_way_is_told_how_far_it_got_and_what_to_do():
    as_applied(*[name for _app, name in _replaced()][:20])

    with translation.override("en"):
        (error,) = squashed_migrations_applied_whole(databases=["default"])
    assert error.id == "platform.E001"
    assert "fleet migrations up to 0020_lists_hold_plates only" in error.msg
    assert SQUASH[1] in error.msg
    assert "version before the squash" in error.hint
    with pytest.raises(SystemCheckError, match="0020_lists_hold_plates"):
        call_command("migrate", verbosity=0, skip_checks=False)


def _replaced() -> list[tuple[str, str]]:
    from django.db.migrations.loader import MigrationLoader

    loader = MigrationLoader(None, replace_migrations=False)
    replaced = list(loader.disk_migrations[SQUASH].replaces)
    assert len(replaced) == 25
    return replaced
