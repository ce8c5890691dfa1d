"""Strings of other packages whose Portuguese comes from our catalogue, named here so
that `make messages` keeps them in it. None of these tuples is read at run time.

Our catalogue is read before any other (LOCALE_PATHS), so its translations of these
appear wherever the packages show them: mostly the admin, and dates. Each msgid must
be the package's exactly. Two kinds:

- gaps: strings a package marks for translation that no catalogue translates into
  Portuguese yet (new in Django 6.1; django-tasks-db and django-axes ship none);
- corrections: month names. Django's Portuguese catalogue capitalises them
  ("23 de Novembro de 2026"), so every `DATE_FORMAT` and `DATETIME_FORMAT` date
  read wrong to a Brazilian reader; ours writes them in lower case, as Brazilian
  Portuguese does in a date ("23 de novembro de 2026"). They are the names of
  `django.utils.dates.MONTHS`, the `F` of a date format.
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

# Corrections: Django's month names, in lower case in ours.
MONTHS = (
    gettext_noop("January"),
    gettext_noop("February"),
    gettext_noop("March"),
    gettext_noop("April"),
    gettext_noop("May"),
    gettext_noop("June"),
    gettext_noop("July"),
    gettext_noop("August"),
    gettext_noop("September"),
    gettext_noop("October"),
    gettext_noop("November"),
    gettext_noop("December"),
)
