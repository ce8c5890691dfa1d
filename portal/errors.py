"""The answer to an error no view handled (`handler500`).

When the database cannot be reached (PostgreSQL restarting, a failover, a
connection cut), the page says so and asks to try again in a moment, with
`503 Service Unavailable` and `Retry-After`, rather than a generic 500. The
page needs no database: not the session, not the user, only a template of
its own. Any other error gets the portal's 500 page (`500.html`), in the
user's language and rendered the same way: from the template alone, since the
database or the session may be what failed. Both show the request's id (the
request code), which a person can quote and an administrator finds in the logs.
"""

from __future__ import annotations

import sys

from django.conf import settings
from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, HttpResponseServerError
from django.template.loader import render_to_string

from portal.lib import request_ids

RETRY_AFTER_S = 10


def server_error(request: HttpRequest) -> HttpResponse:
    if isinstance(sys.exception(), (OperationalError, InterfaceError)):
        page = render_to_string(
            "database_unavailable.html",
            {"retry_after": RETRY_AFTER_S, "request_code": request_ids.current()},
        )
        response = HttpResponse(page, status=503)
        response["Retry-After"] = str(RETRY_AFTER_S)
        return response
    # Not with `request`: its context processors would read the user, hence the session.
    page = render_to_string(
        "500.html",
        {"fleet_environment": settings.FLEET_ENVIRONMENT, "request_code": request_ids.current()},
    )
    return HttpResponseServerError(page)
