"""URLs of the fleet pages, named in the `fleet` namespace.

Plates, request ids and webhook tokens are matched as any one segment: the views
check them and answer a 404 page that says what was wrong, without calling the API.
"""

from __future__ import annotations

from django.urls import path

from fleet.views import (
    bulk_indications,
    cnh,
    crlv,
    dashboard,
    drivers,
    embed,
    fine_page,
    fines,
    health,
    indications,
    packets,
    receipts,
    vehicles,
    webhook_receiver,
)
from portal.lib.metrics import views as metrics

app_name = "fleet"

urlpatterns = [
    path("", dashboard.dashboard, name="dashboard"),
    path("healthz", health.healthz, name="healthz"),
    path("metrics", metrics.metrics, name="metrics"),
    path("app/", embed.app, name="app"),
    path("app/frame", embed.app_frame, name="app_frame"),
    path("app/open", embed.app_open, name="app_open"),
    path("app/account", embed.fleet_account, name="fleet_account"),
    path("vehicles/", vehicles.vehicle_list, name="vehicles"),
    path("vehicles/export.csv", vehicles.vehicle_list_export, name="vehicles_export"),
    path("vehicles/refresh", vehicles.vehicle_list_refresh, name="vehicles_refresh"),
    path("vehicles/<str:plate>/", crlv.vehicle, name="vehicle"),
    path(
        "vehicles/<str:plate>/crlv/download",
        crlv.vehicle_crlv_download,
        name="vehicle_crlv_download",
    ),
    path("crlv/requests/<str:request_id>/", crlv.crlv_request, name="crlv_request"),
    path(
        "crlv/requests/<str:request_id>/download",
        crlv.crlv_request_download,
        name="crlv_request_download",
    ),
    # A driver id is an integer: `<int:…>` never takes "cnh".
    path("drivers/<int:driver_id>/", drivers.driver_detail, name="driver"),
    path("drivers/<int:driver_id>/cpf", drivers.driver_cpf_change, name="driver_cpf"),
    path("drivers/<int:driver_id>/licence", drivers.driver_licence_refresh, name="driver_licence"),
    path("drivers/cnh/", cnh.cnh_lookups, name="cnh"),
    path("drivers/cnh/lookup", cnh.cnh_lookup_single, name="cnh_lookup_single"),
    path("drivers/cnh/batch", cnh.cnh_lookup_batch, name="cnh_lookup_batch"),
    path("drivers/cnh/<uuid:lookup_id>/", cnh.cnh_lookup, name="cnh_lookup"),
    path("drivers/cnh/<uuid:lookup_id>/retry", cnh.cnh_lookup_retry, name="cnh_lookup_retry"),
    path("fines/", fines.fine_list, name="fines"),
    path("fines/export.csv", fines.fine_list_export, name="fines_export"),
    path("fines/drivers/", fines.fine_driver_choices, name="fine_drivers"),
    path("fines/<int:fine_id>/", fine_page.fine_detail, name="fine"),
    path("fines/<int:fine_id>/packet.pdf", packets.fine_packet_download, name="fine_packet"),
    path("fines/indications/", indications.indication_queue_page, name="indications"),
    path(
        "fines/indications/indicate",
        bulk_indications.queue_indicate,
        name="indications_indicate",
    ),
    path(
        "fines/indications/packet.pdf",
        packets.queue_packet_download,
        name="indications_packet",
    ),
    path(
        "fines/indications/export.csv",
        indications.indication_queue_csv,
        name="indications_export",
    ),
    path("fines/<int:fine_id>/driver", fine_page.fine_driver_set, name="fine_driver"),
    path("fines/<int:fine_id>/deadline", fine_page.fine_deadline_set, name="fine_deadline"),
    path("fines/<int:fine_id>/indicate", fine_page.fine_indicate, name="fine_indicate"),
    path(
        "fines/<int:fine_id>/indications/<int:indication_id>/receipt",
        receipts.fine_indication_receipt,
        name="fine_indication_receipt",
    ),
    path(
        "fines/<int:fine_id>/indication-answer",
        fine_page.fine_indication_answered,
        name="fine_indication_answer",
    ),
    path(
        "fines/<int:fine_id>/indication-need",
        fine_page.fine_indication_need,
        name="fine_indication_need",
    ),
    path("fines/views/", fines.fine_view_save, name="fine_view_save"),
    path("fines/views/<int:view_id>/delete", fines.fine_view_delete, name="fine_view_delete"),
    path("notifications/", fines.notification_list, name="notifications"),
    path("notifications/<int:notification_id>/", fines.notification_detail, name="notification"),
    path(
        "notifications/export.csv",
        fines.notification_list_export,
        name="notifications_export",
    ),
    path("webhooks/fleet/<str:token>/", webhook_receiver.fleet_webhook, name="webhook"),
]
