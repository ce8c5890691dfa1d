"""The platform's pages in the admin: the background worker's queue (django-tasks-db's),
whose tasks and errors may concern any part of the organisation: not for staff limited
to a part of it (`admin_limits`)."""

from __future__ import annotations

from django.contrib import admin
from django_tasks_db import admin as tasks_admin  # registers the package's page first
from django_tasks_db.models import DBTaskResult

from portal.lib.admin_limits import UnlimitedOnly


class TaskResultAdmin(UnlimitedOnly, tasks_admin.DBTaskResultAdmin):
    """The package's page of tasks, for staff who administer the whole organisation."""


admin.site.unregister(DBTaskResult)
admin.site.register(DBTaskResult, TaskResultAdmin)
