"""`/metrics`: the portal's metrics in Prometheus' format (`exposition`), for a
scraper that sends `Authorization: Bearer <METRICS_TOKEN>`.

Without METRICS_TOKEN the path does not exist (404); without the right token, 401. The
metrics hold no plate, CPF, e-mail, user or token (`portal.lib.metrics`), but they tell how
busy the portal is and how its partners answer: not for the internet.
"""

from __future__ import annotations

import hmac

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from portal.lib.bearer import bearer_token
from portal.lib.metrics.exposition import metrics_exposition


@require_GET
@never_cache
def metrics(request: HttpRequest) -> HttpResponse:
    expected = settings.METRICS_TOKEN
    if not expected:
        raise Http404
    if not hmac.compare_digest(bearer_token(request).encode(), expected.encode()):
        refused = HttpResponse(
            "A bearer token is required.\n", status=401, content_type="text/plain"
        )
        refused["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return refused
    body, content_type = metrics_exposition()
    return HttpResponse(body, content_type=content_type)
