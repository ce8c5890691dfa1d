"""Migrations at the size of the largest fleets: operations that never hold writers off a
large table (`LARGE_MODELS`) for longer than a moment.

- `AddIndexWithoutLocking`, `RemoveIndexWithoutLocking`: on PostgreSQL, `CREATE` or
  `DROP INDEX CONCURRENTLY` (writes go on meanwhile; the migration must be
  `atomic = False`); elsewhere the plain operation (SQLite has one writer at a time
  whatever the statement).
- `DescendingIndex`: an order with its NULLs last, on the databases that need it said.
- `ConditionLedIndex`: a partial index that SQLite's planner takes without statistics.

tests/test_migrations_at_scale.py fails on a migration that would lock a large table.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from django.contrib.postgres.operations import AddIndexConcurrently, RemoveIndexConcurrently
from django.db.migrations.operations import AddIndex, AlterField, RemoveIndex
from django.db.models import Index

# The tables that grow with the fleet and the years (the README's table of what grows).
LARGE_MODELS: Final = frozenset(
    {
        "fine",
        "notification",
        "webhookdelivery",
        "finetally",
        "grouptally",
        "driver",
        "driverspan",
        "driverword",
        "wording",
    }
)


class _OnPostgreSQLOnly:
    """A PostgreSQL operation (`CREATE`/`DROP INDEX CONCURRENTLY`) that runs as its plain
    twin (`plain`) on any other database."""

    plain: Any

    def database_forwards(
        self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any
    ) -> None:
        if schema_editor.connection.vendor == "postgresql":
            super().database_forwards(app_label, schema_editor, from_state, to_state)  # type: ignore[misc]
        else:
            self.plain.database_forwards(self, app_label, schema_editor, from_state, to_state)

    def database_backwards(
        self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any
    ) -> None:
        if schema_editor.connection.vendor == "postgresql":
            super().database_backwards(app_label, schema_editor, from_state, to_state)  # type: ignore[misc]
        else:
            self.plain.database_backwards(self, app_label, schema_editor, from_state, to_state)


class AddIndexWithoutLocking(_OnPostgreSQLOnly, AddIndexConcurrently):
    """`AddIndexConcurrently` on PostgreSQL, `AddIndex` on any other database."""

    plain = AddIndex


class RemoveIndexWithoutLocking(_OnPostgreSQLOnly, RemoveIndexConcurrently):
    """`RemoveIndexConcurrently` on PostgreSQL, `RemoveIndex` on any other database."""

    plain = RemoveIndex


class DescendingIndex(Index):
    """An index of `fields` in descending order (each "-name") with their NULLs last, as
    the lists sort them highest first (`fleet.services.fines.FINE_SORTS`).

    PostgreSQL puts NULLs first in a descending index unless told, and reads an index
    backwards only in the opposite order of NULLs too: so this index, beside the
    ascending one. SQLite reads the ascending index in either order with its NULLs at
    either end (and cannot say NULLS LAST in an index), so there the index is made
    empty (a condition no row meets) rather than kept twice at every write.
    """

    def create_sql(self, model: Any, schema_editor: Any, using: str = "", **kwargs: Any) -> Any:
        if schema_editor.connection.vendor != "postgresql":
            return schema_editor._create_index_sql(
                model,
                fields=[model._meta.get_field(name) for name, _order in self.fields_orders],
                name=self.name,
                using=using,
                condition="0 = 1",
                **kwargs,
            )
        fields_orders = self.fields_orders
        self.fields_orders = [(name, "DESC NULLS LAST") for name, _order in fields_orders]
        try:
            return super().create_sql(model, schema_editor, using, **kwargs)
        finally:
            self.fields_orders = fields_orders


class AlterChoices(AlterField):
    """An `AlterField` that changes what the database never sees (a field's `choices`, its
    verbose name: Django's `Field.non_db_attrs`), so no statement touches the table, however
    large. Refuses, when run, a change that would alter the column: that one needs its own
    migration, planned for the table's size."""

    def database_forwards(
        self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any
    ) -> None:
        self._check(app_label, from_state, to_state)

    def database_backwards(
        self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any
    ) -> None:
        self._check(app_label, to_state, from_state)

    def _check(self, app_label: str, from_state: Any, to_state: Any) -> None:
        old, new = (
            state.apps.get_model(app_label, self.model_name)._meta.get_field(self.name)
            for state in (from_state, to_state)
        )
        if _db_kwargs(old) != _db_kwargs(new):
            raise ValueError(f"{self.model_name}.{self.name}: more than its choices changes")


def _db_kwargs(field: Any) -> tuple[str, dict[str, Any]]:
    _name, path, _args, kwargs = field.deconstruct()
    return path, {key: value for key, value in kwargs.items() if key not in field.non_db_attrs}


class ConditionLedIndex(Index):
    """A partial index of `fields` whose condition is one equality per column (`leading`),
    led by those columns on SQLite only.

    SQLite keeps no statistics unless asked (`ANALYZE`); without them its planner takes
    the index that matches the most equalities of a query. A query of the fines still to
    indicate says `indication = 'needed' AND treated = false`, and the plain partial index
    by deadline matches none of them as columns: `fleet_fine_treated_occurred` matches
    `treated`, and wins, then every untreated fine is sorted (millions). Led by the
    condition's columns, the index matches both, and is taken. PostgreSQL drops from an
    index's conditions what its predicate implies, so there the leading columns would be
    unbounded and a range of deadlines read from the index's start: it gets `fields`
    alone, and chooses from its statistics.
    """

    def __init__(self, *args: Any, leading: Sequence[str] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.leading = tuple(leading)

    def deconstruct(self) -> Any:
        path, args, kwargs = super().deconstruct()
        return path, args, kwargs | {"leading": list(self.leading)}

    def create_sql(self, model: Any, schema_editor: Any, using: str = "", **kwargs: Any) -> Any:
        if schema_editor.connection.vendor != "sqlite":
            return super().create_sql(model, schema_editor, using, **kwargs)
        fields_orders = self.fields_orders
        self.fields_orders = [(name, "") for name in self.leading] + list(fields_orders)
        try:
            return super().create_sql(model, schema_editor, using, **kwargs)
        finally:
            self.fields_orders = fields_orders
