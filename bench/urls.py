"""The portal's URLs plus five that only benchmarks serve (`bench.settings`).

- `bench/bare`: the floor of an authenticated page, through the same
  middleware and the same `login_required` session check as `/vehicles/`,
  answering a few bytes (this worker's process id, to tell workers apart);
- `bench/forget`: empties the shared cache and this worker's decoded vehicle
  list, so that the next `/vehicles/` on the same keep-alive connection is
  the cold page: it fetches, stores and renders the fleet;
- `bench/forget-figures`: has the next dashboard read its figures again
  (`fine_figures_forget`), leaving the vehicle list in the cache;
- `bench/bare-post`: the floor of a webhook delivery, through the same
  middleware as the receiver, CSRF-exempt like it: reads the body and
  answers a few bytes of JSON, touching no database;
- `bench/stored-post`: the same, after one ORM INSERT of the body
  (`StoredPost.objects.create`, autocommitted, in the portal's database and
  through its connection settings, as the receiver stores): the floor of any
  receiver that stores each delivery in the database before it answers, with
  nothing to process afterwards. Its table comes from `bench/migrations/`.
"""

from __future__ import annotations

import os

from django.contrib.auth.decorators import login_required
from django.core.cache import cache
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import path
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST

from bench.models import StoredPost
from fleet.services.dashboard import fine_figures_forget
from fleet.services.vehicle_cache import vehicles_forget
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
    vehicles_forget()
    return HttpResponse(str(os.getpid()), content_type="text/plain")


@require_GET
@login_required
def forget_figures(request: HttpRequest) -> HttpResponse:
    fine_figures_forget()
    return HttpResponse(str(os.getpid()), content_type="text/plain")


@csrf_exempt
@require_POST
def bare_post_view(request: HttpRequest) -> HttpResponse:
    return JsonResponse({"received": len(request.read())})


@csrf_exempt
@require_POST
def stored_post_view(request: HttpRequest) -> HttpResponse:
    post = StoredPost.objects.create(body=request.read())
    return JsonResponse({"received": len(post.body)})


urlpatterns = [
    *portal_urlpatterns,
    path("bench/bare", bare_view, name="bench_bare"),
    path("bench/forget", forget_vehicles, name="bench_forget"),
    path("bench/forget-figures", forget_figures, name="bench_forget_figures"),
    path("bench/bare-post", bare_post_view, name="bench_bare_post"),
    path("bench/stored-post", stored_post_view, name="bench_stored_post"),
]
