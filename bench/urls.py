"""The portal's URLs plus two that only benchmarks serve (`bench.settings`).

- `bench/bare`: the floor of an authenticated page, through the same
  middleware and the same `login_required` session check as `/vehicles/`,
  answering a few bytes (this worker's process id, to tell workers apart);
- `bench/forget`: empties the shared cache and this worker's decoded vehicle
  list, so that the next `/vehicles/` on the same keep-alive connection is
  the cold page: it fetches, stores and renders the fleet;
- `bench/bare-post`: the floor of a webhook delivery, through the same
  middleware as the receiver, CSRF-exempt like it: reads the body and
  answers a few bytes of JSON, touching no database;
- `bench/stored-post`: the same, after one INSERT of the body into a table
  of two columns (`bench_stored`, made by `bench.webhooks`), committed: the
  floor of any receiver that stores each delivery in the database before it
  answers, with nothing to process afterwards.
"""

from __future__ import annotations

import os

from django.contrib.auth.decorators import login_required
from django.core.cache import cache
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import path
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST

from fleet.services import vehicles
from portal.urls import urlpatterns as portal_urlpatterns


@require_GET
@login_required
def bare_view(request: HttpRequest) -> HttpResponse:
    return HttpResponse(str(os.getpid()), content_type="text/plain")


@require_GET
@login_required
def forget_vehicles(request: HttpRequest) -> HttpResponse:
    # The process keeps its decoded copy when the cache loses the list (an
    # eviction must not cost an API call), so emptying the cache alone is not cold.
    cache.clear()
    vehicles._memo.clear()
    return HttpResponse(str(os.getpid()), content_type="text/plain")


@csrf_exempt
@require_POST
def bare_post_view(request: HttpRequest) -> HttpResponse:
    return JsonResponse({"received": len(request.read())})


STORED_TABLE = "bench_stored"
_STORED_INSERT = "INSERT INTO bench_stored (body) VALUES (%s)"


@csrf_exempt
@require_POST
def stored_post_view(request: HttpRequest) -> HttpResponse:
    body = request.read()
    if connection.vendor == "postgresql":
        # As the receiver does: on the connection's own cursor, without Django's
        # health check (a `SELECT 1` before a request's first statement).
        connection.ensure_connection()
        with connection.connection.cursor() as cursor:
            cursor.execute(_STORED_INSERT, [body])
    else:
        with connection.cursor() as cursor:
            cursor.execute(_STORED_INSERT, [body])
    return JsonResponse({"received": len(body)})


urlpatterns = [
    *portal_urlpatterns,
    path("bench/bare", bare_view, name="bench_bare"),
    path("bench/forget", forget_vehicles, name="bench_forget"),
    path("bench/bare-post", bare_post_view, name="bench_bare_post"),
    path("bench/stored-post", stored_post_view, name="bench_stored_post"),
]
