"""The webhook receiver: `POST /webhooks/fleet/<token>/` (spec section 6).

The fleet platform's registration, headers, signing and retries are not
specified, so the secret is the token in the path (FLEET_WEBHOOK_TOKENS,
several at once for rotation) and the answer is quick: the delivery is
stored as received and answered 202; the background worker processes it
moments later, with others (`fleet.webhooks`). Whatever comes of
that, it must not be sent again: a delivery that cannot become a record is
kept for replay. Only what was not stored, or cannot ever be processed (a
body that is not JSON, stored all the same), is answered 4xx or 5xx: the
sender should know.
"""

from __future__ import annotations

from typing import Any

import orjson
from django.conf import settings
from django.db import DatabaseError
from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from fleet.webhooks.payloads import is_json_content_type
from fleet.webhooks.receive import (
    delivery_receive,
    delivery_refuse,
    webhook_token_valid,
)
from portal.lib import metrics
from portal.lib.addresses import client_address

# How long a sender should wait before sending again what could not be stored.
RETRY_AFTER_S = 30


# Answers that stored nothing readable: a wrong token, no or a bad length, too large.
_REFUSED = frozenset({400, 404, 411, 413})


def _answer(answer: dict[str, Any], *, status: int) -> HttpResponse:
    """A JSON answer: what `JsonResponse` sends, at a fraction of its cost per delivery."""
    return HttpResponse(orjson.dumps(answer), status=status, content_type="application/json")


@csrf_exempt  # a machine's POST, authenticated by the token in its path
@require_POST
def fleet_webhook(request: HttpRequest, token: str) -> HttpResponse:
    metrics.WEBHOOK_DELIVERIES.labels("received").inc()
    response = _received(request, token)
    if response.status_code in _REFUSED:
        metrics.WEBHOOK_DELIVERIES.labels("refused").inc()
    return response


def _received(request: HttpRequest, token: str) -> HttpResponse:
    # 404 rather than 401/403: a wrong token learns nothing about the route.
    if not webhook_token_valid(token=token):
        return _answer({"error": "not found"}, status=404)
    declared = request.META.get("CONTENT_LENGTH") or ""
    if not declared and "chunked" in request.headers.get("Transfer-Encoding", "").lower():
        return _answer({"error": "send the body with a Content-Length"}, status=411)
    try:
        size = int(declared or 0)
    except ValueError:
        size = -1
    if size < 0:
        return _answer({"error": "the Content-Length is not a number of bytes"}, status=400)
    content_type = request.META.get("CONTENT_TYPE", "")  # with its parameters, as sent
    source = client_address(request)
    limit = settings.FLEET_WEBHOOK_MAX_BYTES
    try:
        if size > limit:
            # Not read: recorded without its body, so that an operator sees it.
            delivery_refuse(
                declared_size=size,
                content_type=content_type,
                headers=request.headers,
                source_address=source,
            )
            return _answer({"error": f"the body is over the limit of {limit} bytes"}, status=413)
        delivery = delivery_receive(
            body=request.read(size),
            content_type=content_type,
            headers=request.headers,
            source_address=source,
        )
    except DatabaseError:
        # Nothing was stored (processing errors never reach here): the sender must retry.
        response = _answer(
            {"error": "the delivery could not be stored; send it again later"}, status=503
        )
        response["Retry-After"] = str(RETRY_AFTER_S)
        return response
    answer: dict[str, object] = {"delivery": delivery.pk, "status": delivery.status}
    if delivery.error:
        answer["error"] = delivery.error
    if not is_json_content_type(content_type):
        return _answer(answer, status=415)  # stored all the same, as invalid
    return _answer(answer, status=202)
