"""The table of the cache every process reads (`CACHES["shared"]` when the portal runs
with no shared cache, as `make run` does: Django's database cache): what the worker
computes for pages to show, such as a part of the fleet's dashboard figures, reaches the
web processes through it. Made whatever the cache settings of the moment, so that a
change of `CACHE_URL` later finds it."""

from django.core.management.commands.createcachetable import Command as CacheTable
from django.db import migrations

TABLE = "portal_shared_cache"


def table_make(apps, schema_editor):
    command = CacheTable()
    command.verbosity = 0
    command.create_table(schema_editor.connection.alias, TABLE, dry_run=False)


def table_drop(apps, schema_editor):
    schema_editor.execute(f"DROP TABLE IF EXISTS {schema_editor.quote_name(TABLE)}")


class Migration(migrations.Migration):
    atomic = False  # one CREATE TABLE, in a transaction of its own (createcachetable's)

    dependencies = [
        ("fleet", "0026_list_drivers_marked"),
    ]

    operations = [migrations.RunPython(table_make, table_drop, elidable=False)]
