"""The SCIM audit is kept SCIM_CALLS_KEEP_DAYS days: the worker's nightly run deletes the
calls and the minutes older than that, in chunks, and asks for the next night's."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from signin.models import ScimCall, ScimMinute
from signin.scim.retention import PURGE_TASK, scim_calls_purge
from tests.conftest import run_tasks

pytestmark = pytest.mark.django_db


def aged(days: int, number: int) -> None:
    when = timezone.now() - timedelta(days=days)
    call = ScimCall.objects.create(method="GET", path="/scim/v2/Users", status=200)
    ScimCall.objects.filter(pk=call.pk).update(created_at=when)
    minute = when.replace(second=0, microsecond=0)
    ScimMinute.objects.create(who=f"address:10.0.0.{number}", minute=minute, count=3)


def test_the_calls_and_minutes_past_their_days_are_deleted_in_chunks(settings):
    settings.SCIM_CALLS_KEEP_DAYS = 90
    for number in range(5):
        aged(91, number)
    aged(89, 9)

    assert scim_calls_purge(chunk=2) == 10

    assert list(ScimMinute.objects.values_list("who", flat=True)) == ["address:10.0.0.9"]
    assert ScimCall.objects.count() == 1


@pytest.mark.django_db(transaction=True)
def test_an_authenticated_call_asks_for_the_nightly_run_which_asks_for_the_next(acme, settings):
    settings.SCIM_CALLS_KEEP_DAYS = 1
    aged(2, 1)
    assert acme.get("Users").status_code == 200
    waiting = DBTaskResult.objects.filter(task_path=PURGE_TASK, status="READY")
    assert waiting.count() == 1
    DBTaskResult.objects.filter(task_path=PURGE_TASK).update(run_after=timezone.now())

    run_tasks()

    assert not ScimMinute.objects.filter(who="address:10.0.0.1").exists()
    assert DBTaskResult.objects.filter(task_path=PURGE_TASK, status="SUCCESSFUL").count() == 1
    assert DBTaskResult.objects.filter(task_path=PURGE_TASK, status="READY").count() == 1
