"""django-tasks-db, the background worker's queue, as the admin shows it to operators.

The package names its app in English only ("Tasks Database Backend"); its models'
names and fields are translatable, and our catalogue translates them
(`portal.translation_overrides`). Installed as `portal.lib.tasks_app.BackgroundTasksConfig`
in place of `django_tasks_db`: same app, same label, same tables.
"""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _
from django_tasks_db.apps import TasksAppConfig


class BackgroundTasksConfig(TasksAppConfig):
    # The package types it `str` (its own is a literal); Django takes a lazy string.
    verbose_name = _("Background tasks")  # type: ignore[assignment]
