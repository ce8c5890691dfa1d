"""The portal's URLs and two pages with a bug (tests/deploy/portal_with_a_bug.py): `/bug/`
raises, `/bug/task/` enqueues a task that raises in the worker."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.urls import path

from portal import urls as portal_urls
from portal.lib import worker


def _message() -> str:
    # It holds the API's secret key: the logs keep the error and lose the key.
    return f"a bug, next to {settings.FLEET_SECRET_KEY}"


def bug(request: HttpRequest) -> HttpResponse:
    raise RuntimeError(_message())


@worker.task()
def buggy_task() -> None:
    raise RuntimeError(_message())


def bug_in_a_task(request: HttpRequest) -> HttpResponse:
    worker.enqueue(f"{__name__}.buggy_task")
    return HttpResponse("queued", status=202)


urlpatterns = [
    path("bug/", bug, name="bug"),
    path("bug/task/", bug_in_a_task, name="bug_in_a_task"),
    *portal_urls.urlpatterns,
]
handler500 = portal_urls.handler500
