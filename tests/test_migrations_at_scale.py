"""No migration locks a large table (`fleet.schema.LARGE_MODELS`: the tables that grow with
the fleet and the years) for longer than a moment: at ten million fines, an index built
in place or a column rewritten holds the worker and the pages for minutes.

Every migration after each app's first is checked (the first builds empty tables: it is
the squash of those that ran before, `replaces`); the checker is shown to refuse each
kind of locking operation."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import migrations, models
from django.db.migrations.loader import MigrationLoader

from fleet.schema import (
    LARGE_MODELS,
    AddIndexWithoutLocking,
    AlterChoices,
    RemoveIndexWithoutLocking,
)

APPS = ("fleet", "alerts", "signin")
# Each app's first migration: all that ran before it, squashed, on empty tables.
FIRST = [
    ("alerts", "0001_squashed_0004_pause_blocked"),
    ("fleet", "0001_squashed_0025_who_was_driving"),
    ("signin", "0001_squashed_0009_scim_pushed_email_kind"),
]


def problems(migration: Any) -> list[str]:
    """What in `migration` would hold writers off a large table."""
    found = []
    for operation in migration.operations:
        model = getattr(operation, "model_name", "") or getattr(operation, "name", "")
        large = str(model).lower() in LARGE_MODELS
        name = type(operation).__name__
        if isinstance(operation, migrations.RunPython) and migration.atomic:
            found.append(f"{name} in one transaction (atomic = True): chunk it, non-atomic")
        if isinstance(operation, AddIndexWithoutLocking) and migration.atomic:
            found.append(f"{name} {operation.index.name} in an atomic migration")
        if isinstance(operation, RemoveIndexWithoutLocking) and migration.atomic:
            found.append(f"{name} {operation.name} in an atomic migration")
        if not large:
            continue
        if isinstance(operation, migrations.AddIndex) and not isinstance(
            operation, AddIndexWithoutLocking
        ):
            found.append(f"{name} {operation.index.name} on {model}: use AddIndexWithoutLocking")
        elif isinstance(
            operation, migrations.RemoveIndex | migrations.AddConstraint
        ) and not isinstance(operation, RemoveIndexWithoutLocking):
            found.append(f"{name} on {model}: builds or drops an index holding writers")
        elif isinstance(operation, AlterChoices):
            continue  # no statement: it refuses to run one that would alter the column
        elif isinstance(operation, migrations.AlterField | migrations.RenameField):
            found.append(f"{name} {operation.name} on {model}: may rewrite the table")
        elif isinstance(operation, migrations.AddField):
            found.extend(f"{name} {operation.name} on {model}: {why}" for why in _added(operation))
    return found


def _added(operation: migrations.AddField) -> list[str]:
    field: Any = operation.field
    why = []
    if not field.null and field.default is models.NOT_PROVIDED:
        why.append("not null without a default (every row written)")
    if field.db_index or field.unique:
        why.append("an index built in place")
    if field.is_relation and field.db_constraint:
        why.append("a foreign key checked over every row")
    return why


def test_the_large_tables_are_those_that_grow_without_bound():
    assert sorted(LARGE_MODELS) == [
        "driver",
        "driverspan",
        "driverword",
        "fine",
        "finetally",
        "grouptally",
        "notification",
        "webhookdelivery",
        "wording",
    ]


def test_no_migration_after_the_first_locks_a_large_table():
    loader = MigrationLoader(None, ignore_no_migrations=True)
    ours = {key: migration for key, migration in loader.graph.nodes.items() if key[0] in APPS}
    # Only the squashes start from nothing: a later migration cannot call itself initial
    # to be passed over.
    assert sorted(key for key, migration in ours.items() if migration.initial) == FIRST
    found = {
        f"{app}.{name}": problems(migration)
        for (app, name), migration in ours.items()
        if (app, name) not in FIRST
    }
    assert {name: why for name, why in found.items() if why} == {}


def _migration(*operations: Any, atomic: bool = True) -> Any:
    """A migration of these operations, as the loader would give it."""
    return type(
        "Migration", (migrations.Migration,), {"operations": list(operations), "atomic": atomic}
    )("0099_check", "fleet")


@pytest.mark.parametrize(
    ("operation", "atomic", "said"),
    [
        (migrations.AddIndex("fine", models.Index(fields=["link"], name="x")), False, "AddIndex"),
        (
            AddIndexWithoutLocking("fine", models.Index(fields=["link"], name="x")),
            True,
            "in an atomic migration",
        ),
        (migrations.RemoveIndex("fine", "x"), False, "RemoveIndex"),
        (RemoveIndexWithoutLocking("fine", "x"), True, "in an atomic migration"),
        (migrations.AlterField("notification", "key", models.TextField()), False, "rewrite"),
        (
            migrations.AddField("fine", "flag", models.BooleanField()),
            False,
            "not null without a default",
        ),
        (
            migrations.AddField(
                "webhookdelivery", "code", models.CharField(max_length=9, db_index=True)
            ),
            False,
            "an index built in place",
        ),
        (
            migrations.AddField(
                "fine", "who", models.ForeignKey("auth.User", models.PROTECT, null=True)
            ),
            False,
            "a foreign key checked",
        ),
        (migrations.RunPython(migrations.RunPython.noop), True, "one transaction"),
        (
            migrations.AddConstraint("fine", models.UniqueConstraint(fields=["link"], name="y")),
            False,
            "AddConstraint",
        ),
    ],
)
def test_the_check_refuses_what_would_lock_a_large_table(operation, atomic, said):
    assert said in " ".join(problems(_migration(operation, atomic=atomic)))


def test_the_check_lets_through_what_does_not():
    assert (
        problems(
            _migration(
                AddIndexWithoutLocking("fine", models.Index(fields=["link"], name="x")),
                RemoveIndexWithoutLocking("fine", "x"),
                migrations.AddField("fine", "note", models.TextField(default="", blank=True)),
                migrations.AddIndex("savedfineview", models.Index(fields=["name"], name="z")),
                atomic=False,
            )
        )
        == []
    )


def _state(field: models.Field[Any, Any]) -> Any:
    from django.db.migrations.state import ModelState, ProjectState

    state = ProjectState()
    state.add_model(
        ModelState("fleet", "Probe", [("id", models.AutoField(primary_key=True)), ("kind", field)])
    )
    return state


def test_a_change_of_choices_alone_runs_without_a_statement_and_any_other_is_refused():
    before = _state(models.CharField(max_length=12, choices=[("a", "A")]))
    choices = _state(models.CharField(max_length=12, choices=[("a", "A"), ("b", "B")]))
    longer = _state(models.CharField(max_length=40, choices=[("a", "A")]))
    operation = AlterChoices("probe", "kind", models.CharField(max_length=12))

    operation.database_forwards("fleet", None, before, choices)  # nothing to do, nothing done
    operation.database_backwards("fleet", None, before, choices)
    with pytest.raises(ValueError, match="more than its choices changes"):
        operation.database_forwards("fleet", None, before, longer)
    assert problems(_migration(operation, atomic=False)) == []
