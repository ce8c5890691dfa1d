"""A database part-way through migrations that have since been squashed, told before
`migrate` touches it.

Each app's first migration replaces those it squashed (`replaces`), whose files are gone:
a database that applied all of them takes the squash as applied, a new one is built by
it. One that applied only some cannot be brought forward by this release: without this
check, `migrate` would stop half-way on a model it cannot resolve. The check (run by
`migrate` and `check --database`) names the app, how far the database got, and what to
do (the README's "Upgrading").
"""

from __future__ import annotations

from typing import Any

from django.core import checks
from django.db import connections
from django.db.migrations.loader import MigrationLoader
from django.db.migrations.recorder import MigrationRecorder
from django.utils.translation import gettext as _


@checks.register(checks.Tags.database)
def squashed_migrations_applied_whole(databases: Any = None, **kwargs: Any) -> list[Any]:
    """An error per app whose squashed migrations the database applied only some of."""
    squashes = _squashes() if databases else {}
    found = []
    for alias in databases or ():
        recorder = MigrationRecorder(connections[alias])
        if not squashes or not recorder.has_table():
            continue
        applied = set(recorder.applied_migrations())
        for (app, name), replaced in squashes.items():
            done = sorted(key[1] for key in replaced if key in applied)
            if done and len(done) < len(replaced) and (app, name) not in applied:
                found.append(_part_way(alias, app, name, done[-1]))
    return found


def _squashes() -> dict[tuple[str, str], list[tuple[str, str]]]:
    loader = MigrationLoader(None, ignore_no_migrations=True, replace_migrations=False)
    return {
        key: list(migration.replaces)
        for key, migration in loader.disk_migrations.items()
        if migration.replaces
    }


def _part_way(alias: str, app: str, name: str, last: str) -> checks.Error:
    return checks.Error(
        _(
            "The database %(alias)s applied the %(app)s migrations up to %(last)s only; "
            "this version starts from their squash, %(name)s."
        )
        % {"alias": alias, "app": app, "last": last, "name": name},
        hint=_(
            "Migrate with the version before the squash first (it carries them all), "
            "then with this one. The README's “Upgrading” says which."
        ),
        id="platform.E001",
    )
