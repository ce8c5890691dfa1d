"""Migrations at the size of the largest fleets: operations that never hold writers off a
large table (`LARGE_MODELS`) for longer than a moment.

- `AddIndexWithoutLocking`: on PostgreSQL, `CREATE INDEX CONCURRENTLY` (writes go on
  while it builds; the migration must be `atomic = False`); elsewhere a plain index
  (SQLite has one writer at a time whatever the statement).

tests/test_migrations_at_scale.py fails on a migration that would lock a large table.
"""

from __future__ import annotations

from typing import Any, Final

from django.contrib.postgres.operations import AddIndexConcurrently
from django.db.migrations.operations import AddIndex

# The tables that grow with the fleet and the years (the README's table of what grows).
LARGE_MODELS: Final = frozenset(
    {"fine", "notification", "webhookdelivery", "finetally", "driver", "driverword", "wording"}
)


class AddIndexWithoutLocking(AddIndexConcurrently):
    """`AddIndexConcurrently` on PostgreSQL, `AddIndex` on any other database."""

    def database_forwards(
        self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any
    ) -> None:
        if schema_editor.connection.vendor == "postgresql":
            super().database_forwards(app_label, schema_editor, from_state, to_state)
        else:
            AddIndex.database_forwards(self, app_label, schema_editor, from_state, to_state)

    def database_backwards(
        self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any
    ) -> None:
        if schema_editor.connection.vendor == "postgresql":
            super().database_backwards(app_label, schema_editor, from_state, to_state)
        else:
            AddIndex.database_backwards(self, app_label, schema_editor, from_state, to_state)
