"""The sessions stored before each sign-in was recorded as its user's (`UserSession`):
recorded now, once, so that ending a person's sessions (`signin.sessions.sessions_end`)
finds those too. Only the database's sessions can be listed; with another engine, a
session from before this ends at its expiry, or at once for a deactivated person (whom
the authentication backend refuses)."""

from __future__ import annotations

from importlib import import_module
from typing import Any

from django.conf import settings
from django.db import migrations
from django.utils import timezone

_LISTED = ("django.contrib.sessions.backends.db", "django.contrib.sessions.backends.cached_db")
_CHUNK = 1000


def record(apps: Any, schema_editor: Any) -> None:
    if settings.SESSION_ENGINE not in _LISTED:
        return
    session_model = apps.get_model("sessions", "Session")
    user_session_model = apps.get_model("usersessions", "UserSession")
    user_model = apps.get_model(*settings.AUTH_USER_MODEL.split("."))
    store = import_module(settings.SESSION_ENGINE).SessionStore()
    users = set(user_model.objects.values_list("pk", flat=True))
    rows = []
    live = session_model.objects.filter(expire_date__gt=timezone.now())
    for session in live.iterator(chunk_size=_CHUNK):
        user_id = store.decode(session.session_data).get("_auth_user_id")
        if user_id is not None and str(user_id).isdigit() and int(user_id) in users:
            rows.append(
                user_session_model(
                    session_key=session.session_key,
                    user_id=int(user_id),
                    ip="0.0.0.0",  # noqa: S104 (not known for these)
                )
            )
    user_session_model.objects.bulk_create(rows, batch_size=_CHUNK, ignore_conflicts=True)


class Migration(migrations.Migration):
    dependencies = [
        ("signin", "0004_scim_minutes"),
        ("sessions", "0001_initial"),
        ("usersessions", "0001_initial"),
    ]

    operations = [migrations.RunPython(record, migrations.RunPython.noop)]
