"""URLs of the fleet app (the URL contract of ARCHITECTURE.md)."""

from __future__ import annotations

from django.urls import path

from fleet.views import dashboard, health

app_name = "fleet"

urlpatterns = [
    path("", dashboard.dashboard, name="dashboard"),
    path("healthz", health.healthz, name="healthz"),
]
