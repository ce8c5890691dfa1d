"""URLs of the e-CRLV pages, included into `fleet.urls` (the URL contract of ARCHITECTURE.md).

Plates and request ids are matched as any one segment: the views check them
and answer a 404 page that says what was wrong, without calling the API.
"""

from __future__ import annotations

from django.urls import path

from fleet.views import crlv

urlpatterns_crlv = [
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
]
