"""URLs of the fleet app (the URL contract of ARCHITECTURE.md)."""

from __future__ import annotations

from django.urls import path

from fleet.urls_crlv import urlpatterns_crlv
from fleet.views import dashboard, embed, fines, health, vehicles, webhooks

app_name = "fleet"

urlpatterns = [
    path("", dashboard.dashboard, name="dashboard"),
    path("healthz", health.healthz, name="healthz"),
    path("app/", embed.app, name="app"),
    path("app/frame", embed.app_frame, name="app_frame"),
    path("app/open", embed.app_open, name="app_open"),
    path("app/account", embed.fleet_account, name="fleet_account"),
    path("vehicles/", vehicles.vehicle_list, name="vehicles"),
    path("vehicles/export.csv", vehicles.vehicle_list_export, name="vehicles_export"),
    path("vehicles/refresh", vehicles.vehicle_list_refresh, name="vehicles_refresh"),
    *urlpatterns_crlv,
    path("fines/", fines.fine_list, name="fines"),
    path("notifications/", fines.notification_list, name="notifications"),
    path("webhooks/fleet/<str:token>/", webhooks.fleet_webhook, name="webhook"),
]
