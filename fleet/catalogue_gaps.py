"""Strings that other packages mark for translation and that no catalogue translates
into Portuguese yet, written here so that `makemessages` keeps them in ours.

Our catalogue is read before any other (LOCALE_PATHS), so its translations of these
appear wherever the packages show them: mostly the admin. Each msgid must be the
package's exactly; none of these tuples is read at run time.
"""

from __future__ import annotations

from django.utils.translation import gettext_noop

# Django 6.1: strings new in 6.1 that its pt_BR catalogue does not have yet.
DJANGO = (
    gettext_noop("- Select an option -"),  # the empty choice of a select (admin actions)
    gettext_noop("Filter by %(field_name)s"),  # admin/date_hierarchy.html
)

# django-tasks-db ships no catalogue: its model and fields, seen in the admin.
DJANGO_TASKS_DB = (
    gettext_noop("Task Result"),
    gettext_noop("Task Results"),
    gettext_noop("status"),
    gettext_noop("enqueued at"),
    gettext_noop("started at"),
    gettext_noop("finished at"),
    gettext_noop("args kwargs"),
    gettext_noop("priority"),
    gettext_noop("task path"),
    gettext_noop("worker id"),
    gettext_noop("queue name"),
    gettext_noop("backend name"),
    gettext_noop("run after"),
    gettext_noop("return value"),
    gettext_noop("exception class path"),
    gettext_noop("traceback"),
)

# django-axes (the local login's lockouts) ships no Portuguese: its admin pages.
DJANGO_AXES = (
    gettext_noop("access attempt"),
    gettext_noop("access attempts"),
    gettext_noop("access failure"),
    gettext_noop("access failures"),
    gettext_noop("access log"),
    gettext_noop("access logs"),
    gettext_noop("Access Attempt"),
    gettext_noop("Access lock out"),
    gettext_noop("Attempt Time"),
    gettext_noop("Failed Logins"),
    gettext_noop("Form Data"),
    gettext_noop("GET Data"),
    gettext_noop("HTTP Accept"),
    gettext_noop("IP Address"),
    gettext_noop("Locked Out"),
    gettext_noop("Logout Time"),
    gettext_noop("Meta Data"),
    gettext_noop("POST Data"),
    gettext_noop("Path"),
    gettext_noop("Session key hash (sha256)"),
    gettext_noop("User Agent"),
    gettext_noop("Username"),
    gettext_noop("Not set"),
    gettext_noop("Clean up expired attempts"),
)
