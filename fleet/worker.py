"""How services hand work to the background worker (`manage.py db_worker`).

`fleet.tasks` holds the tasks and calls the services; a service that needs a
task run names it here and never imports `fleet.tasks`, so the two never
import each other (tests/test_imports.py checks it).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.utils.module_loading import import_string


def enqueue(task: str, *args: Any, run_after: datetime | None = None, **kwargs: Any) -> None:
    """Have the worker run `fleet.tasks.<task>(*args, **kwargs)`, at `run_after` or soon.

    Raises what the task backend raises when the task cannot be stored.
    """
    found = import_string(f"fleet.tasks.{task}")
    if run_after is not None:
        found = found.using(run_after=run_after)
    found.enqueue(*args, **kwargs)
