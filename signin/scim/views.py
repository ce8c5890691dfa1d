"""The SCIM endpoints at /scim/v2/: HTTPS (outside the emulator), a bearer token of an
identity provider, a rate per token, then scim2-server over that provider's users and
groups; every call audited (`ScimCall`), never the token or the body."""

from __future__ import annotations

import json
import logging
from typing import Any

import orjson
from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.db import IntegrityError, transaction
from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt
from scim2_models import (
    ForbiddenException,
    InvalidSyntaxException,
    SCIMException,
    UnauthorizedException,
    UniquenessException,
)
from scim2_server.handler import ScimHandler
from scim2_server.requests import ScimRequest
from scim2_server.responses import ScimResponse

from portal.lib.addresses import client_address
from portal.lib.bearer import bearer_token
from portal.lib.middleware import request_log_skip
from portal.lib.redaction import redact
from signin.models import ScimCall, ScimToken
from signin.scim.protocol import TooManyRequestsException, scim_service
from signin.scim.rates import Counted, scim_minute_count
from signin.scim.retention import scim_calls_purge_schedule
from signin.scim.storage import PortalStorage
from signin.scim.tokens import scim_token_check

logger = logging.getLogger(__name__)

_DETAIL_LENGTH = ScimCall._meta.get_field("detail").max_length or 300
_PATH_LENGTH = ScimCall._meta.get_field("path").max_length or 300


@csrf_exempt
@login_not_required
def endpoint(request: HttpRequest, path: str = "") -> HttpResponse:
    scim_request = ScimRequest(
        method=request.method or "GET",
        base_url=request.build_absolute_uri("/scim/v2"),
        path=f"/{path}",
        query=request.GET.dict(),
        headers=dict(request.headers),
        body=request.body,
    )
    token: ScimToken | None = None
    refused: Counted | None = None  # the address's minute, when it has no valid token
    try:
        if settings.FLEET_ENVIRONMENT != "emulator" and not request.is_secure():
            refused = _refusal_counted(request)
            raise ForbiddenException(detail="SCIM is served over HTTPS only")
        token, refused = _authenticated(request)
        _body_checked(request.body)
        storage = PortalStorage(
            provider=token.provider, scim=scim_service().provider, request=request
        )
        handler = ScimHandler(scim_service(), storage)
        with transaction.atomic():
            response = handler.handle(scim_request)
    except SCIMException as exception:
        response = scim_service().error_response(exception)
    except IntegrityError:  # a concurrent request took the same userName or displayName
        response = scim_service().error_response(
            UniquenessException(detail="A value of this resource was just taken")
        )
    except Exception:
        logger.exception("SCIM %s %s failed", request.method, request.path)
        response = scim_service().error_response(RuntimeError())
    if token is None or refused is not None:
        return _refused(request, response, refused, getattr(request, "scim_token", None))
    _audit(request, path=path, token=token, response=response)
    scim_calls_purge_schedule()
    return _http_response(response)


def _authenticated(request: HttpRequest) -> tuple[ScimToken, Counted | None]:
    """The live token the request carries, within its rate. Without one, the request is
    counted against its address (`_refusal_counted`), as guessing is as slow as a
    token's rate; a token past its rate is refused with nothing written."""
    presented = bearer_token(request)
    token = scim_token_check(presented, address=client_address(request)) if presented else None
    if token is None:
        _refusal_counted(request)
        if not presented:
            raise UnauthorizedException(detail="A bearer token is required")
        raise UnauthorizedException(detail="The bearer token is not valid")
    counted = scim_minute_count(f"token:{token.pk}")
    if not counted.within:
        request.scim_refused = counted  # type: ignore[attr-defined]
        request.scim_token = token  # type: ignore[attr-defined]
        raise TooManyRequestsException
    return token, None


def _refusal_counted(request: HttpRequest) -> Counted:
    """Count a request refused before any token was accepted against its address's
    minute; past SCIM_REQUESTS_PER_MINUTE it is refused as too many."""
    counted = scim_minute_count(f"address:{client_address(request) or '-'}")
    request.scim_refused = counted  # type: ignore[attr-defined]
    if not counted.within:
        raise TooManyRequestsException
    return counted


def _refused(
    request: HttpRequest,
    response: ScimResponse,
    counted: Counted | None,
    token: ScimToken | None,
) -> HttpResponse:
    """The answer to a refused request: counted (`ScimMinute`), not stored; one log line
    for the first of its address's minute (or a token's first past its rate) in place
    of Django's and the request line, none for the others, so that a flood writes a row
    and a line a minute, not one of each per request."""
    counted = counted or getattr(request, "scim_refused", None)
    http = _http_response(response)
    http._has_been_logged = True  # type: ignore[attr-defined]  # Django's line: ours instead
    address = client_address(request) or "-"
    request_log_skip(request)
    if counted is None:
        return http
    if counted.count == 1 and counted.within:
        logger.warning(
            "SCIM refused %s %s from %s (%s): the others of this minute from there are "
            "counted (admin: SCIM requests by minute), not logged",
            request.method,
            redact(request.path),
            address,
            response.status.value,
        )
    elif counted.limited_now and token is not None:
        logger.warning(
            "SCIM token %s of %s sent more than SCIM_REQUESTS_PER_MINUTE requests this "
            "minute: the rest are answered 429",
            token.prefix,
            token.provider,
        )
    return http


def _body_checked(body: bytes) -> None:
    """Refuse, as invalid syntax (400), a body that is not one JSON object as RFC 8259
    writes it (UTF-8 without a byte order mark, no NaN, no number past a double, no lone
    surrogate; read by orjson), or that nests deeper than `_BODY_DEPTH`: the parsers
    behind it recurse, and a body a hundred thousand deep failed them with a 500. An
    empty body (a GET, a DELETE) is the handler's to judge."""
    if not body:
        return
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError as error:
        raise InvalidSyntaxException(detail=f"The body is not valid JSON: {error}") from None
    if not isinstance(value, dict):
        raise InvalidSyntaxException(detail="The body is not a JSON object")
    if _nests_deeper(value, _BODY_DEPTH):
        raise InvalidSyntaxException(detail=f"The body nests deeper than {_BODY_DEPTH} levels")


# How deep a body may nest: a user with its extension's manager, or a PATCH's operation
# of a member, nests four or five.
_BODY_DEPTH = 32


def _nests_deeper(value: object, limit: int) -> bool:
    """Whether `value` holds objects or arrays more than `limit` deep (without recursing)."""
    waiting: list[tuple[object, int]] = [(value, 1)]
    while waiting:
        item, depth = waiting.pop()
        if isinstance(item, dict | list) and depth > limit:
            return True
        if isinstance(item, dict):
            waiting.extend((inner, depth + 1) for inner in item.values())
        elif isinstance(item, list):
            waiting.extend((inner, depth + 1) for inner in item)
    return False


def _audit(
    request: HttpRequest, *, path: str, token: ScimToken | None, response: ScimResponse
) -> None:
    body: dict[str, Any] = response.body or {}
    status = response.status.value
    resource_id = str(body.get("id") or "") if status < 300 else ""
    if not resource_id:
        parts = path.strip("/").split("/")
        resource_id = parts[1] if len(parts) == 2 and parts[0] in ("Users", "Groups") else ""
    detail = str(body.get("detail") or "") if status >= 400 else ""
    ScimCall.objects.create(
        provider=token.provider if token is not None else "",
        token=token,
        method=(request.method or "")[:10],
        path=redact(request.path)[:_PATH_LENGTH],
        resource_id=resource_id[:100],
        status=status,
        detail=redact(detail)[:_DETAIL_LENGTH],
        address=client_address(request),
    )


def _http_response(response: ScimResponse) -> HttpResponse:
    content = b"" if response.body is None else json.dumps(response.body).encode()
    http = HttpResponse(content, status=response.status.value)
    for name, value in response.headers.items():
        http[name] = value
    if response.status.value == 429:
        http["Retry-After"] = "60"
    return http
