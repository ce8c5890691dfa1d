"""Indicating a fine's driver through the fleet platform (`POST /v2/driver-indications`).

The spec shows neither the route's method nor its shapes: the portal's are assumed
(`fleet.api.indications`), so sending is off unless `FLEET_DRIVER_INDICATIONS_API`
says so. Every way it can fail is one `IndicationNotSent`, whose message says to the
person what happened and what to do; the operator's log line has the API's trace id
and never a credential.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date

from django.conf import settings
from django.core.cache import caches
from django.utils.translation import gettext as _

from fleet.api.errors import (
    CredentialsRejected,
    FleetError,
    GatewayTimeout,
    InvalidResponse,
    RateLimited,
    RetryLater,
    UpstreamUnavailable,
)
from fleet.api.indications import (
    IndicationRefused,
    IndicationRequest,
    IndicationRouteMissing,
    IndicationSent,
)
from fleet.api.licences import cnh_licence_from_json
from fleet.models import CnhItemStatus, CnhLookupItem, Fine
from fleet.services.connection import fleet_client
from fleet.services.drivers import driver_names

logger = logging.getLogger(__name__)

# How long a person's sending of one fine's indication is held against another's: the
# client's attempts, each at most FLEET_READ_TIMEOUT, and a margin; freed at once after.
_CLAIM_READS = 6


@contextmanager
def indication_claimed(fine_id: int) -> Iterator[None]:
    """While one person's indication of `fine_id` is sent to the platform and recorded,
    another person's is refused (`IndicationNotSent`, kind `busy`) before it is sent: the
    authority is never sent two indications of one fine from the portal. Held in the
    cache every process reads (`CACHES["shared"]`)."""
    shared = caches["shared"]
    key = f"fleet:indication-sending:{fine_id}"
    token = secrets.token_hex(8)
    if not shared.add(key, token, timeout=settings.FLEET_READ_TIMEOUT * _CLAIM_READS):
        raise IndicationNotSent(
            _(
                "Someone else is sending this fine's indication to the platform right now. "
                "Look at the fine again in a moment: nothing of yours was sent."
            ),
            kind="busy",
        )
    try:
        yield
    finally:
        if shared.get(key) == token:
            shared.delete(key)


class IndicationNotSent(Exception):
    """The indication did not reach the platform, or was refused there.

    `str()` is the message for the person (in the active language); `kind` names the
    failure for code (`off`, `incomplete`, `refused`, `rate_limited`, `timeout`,
    `credentials`, `no_route`, `unexpected`, `unavailable`, `error`); `retry_after`
    is the seconds the platform asked to wait, when it said.
    """

    def __init__(self, message: str, *, kind: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.kind = kind
        self.retry_after = retry_after


def indication_send(
    *, fine: Fine, driver_id: int, on: date, cpf: str | None = None
) -> IndicationSent:
    """Indicate `driver_id` as the driver of `fine`, indicated on the day `on`.

    The request names the fine's plate and notice number and the driver's name (the
    portal's, `Driver`), with their CPF when the caller knows it (eleven digits) and,
    then, the licence number of the latest CNH lookup that found that CPF. Raises
    `IndicationNotSent` for every failure; the caller records the indication only
    after this returns.
    """
    if not settings.FLEET_DRIVER_INDICATIONS_API:
        raise IndicationNotSent(
            _(
                "Indicating through the platform is turned off on this portal. Indicate "
                "the driver another way (by post, on the authority's site or SNE)."
            ),
            kind="off",
        )
    indication = _request(fine=fine, driver_id=driver_id, on=on, cpf=cpf)
    try:
        return fleet_client().send_driver_indication(indication)
    except FleetError as error:
        logger.warning("Driver indication of fine %s not sent: %s", fine.pk, error)
        raise _not_sent(error) from error


def _request(*, fine: Fine, driver_id: int, on: date, cpf: str | None) -> IndicationRequest:
    name = driver_names([driver_id]).get(driver_id, "")
    plate = fine.plate or fine.registration  # as the platform sent it, else as stored
    if not plate or not fine.reference:
        raise IndicationNotSent(
            _(
                "The platform cannot be sent this fine's indication: the fine has no "
                "plate or notice number. Indicate the driver another way."
            ),
            kind="incomplete",
        )
    if not name:
        raise IndicationNotSent(
            _(
                "The portal does not know the name of driver %(driver_id)s, which the "
                "platform needs. An administrator can add it in the admin (Drivers)."
            )
            % {"driver_id": driver_id},
            kind="incomplete",
        )
    indication = IndicationRequest(
        car_plate=plate,
        notice=fine.reference,
        driver_name=name,
        indicated_on=on,
        driver_cpf=cpf or None,
        driver_cnh=_licence_number(cpf) if cpf else None,
    )
    try:
        indication.check()
    except ValueError:
        raise IndicationNotSent(
            _("The driver's CPF must be its eleven digits."), kind="incomplete"
        ) from None
    return indication


def _licence_number(cpf: str) -> str | None:
    """The licence number the latest CNH lookup that found `cpf` gave, if any."""
    item = (
        CnhLookupItem.objects.filter(cpf=cpf, status=CnhItemStatus.OK, result__isnull=False)
        .order_by("-updated_at", "-pk")
        .only("result")
        .first()
    )
    if item is None or not isinstance(item.result, dict):
        return None
    return cnh_licence_from_json(item.result).number


def _not_sent(error: FleetError) -> IndicationNotSent:
    """The person's message for a failed call; the classes most specific first."""
    seconds = error.retry_after
    wait = {"seconds": round(seconds)} if seconds is not None else None
    if isinstance(error, IndicationRefused):
        message = _("The platform refused the indication: %(reason)s") % {"reason": error.message}
        return IndicationNotSent(message, kind="refused")
    if isinstance(error, RateLimited):
        if wait:
            message = _(
                "The platform is receiving too many requests. Try again in %(seconds)s seconds."
            )
            return IndicationNotSent(message % wait, kind="rate_limited", retry_after=seconds)
        message = _("The platform is receiving too many requests. Try again in a few minutes.")
        return IndicationNotSent(message, kind="rate_limited")
    if isinstance(error, GatewayTimeout | RetryLater):
        message = _(
            "The platform timed out before taking the indication. Try again in a few minutes."
        )
        return IndicationNotSent(message, kind="timeout", retry_after=seconds)
    if isinstance(error, CredentialsRejected):
        message = _(
            "The platform refused the portal's API credentials, so nothing was sent. "
            "An administrator must check FLEET_ACCESS_TOKEN and FLEET_SECRET_KEY."
        )
        return IndicationNotSent(message, kind="credentials")
    if isinstance(error, IndicationRouteMissing):
        message = _(
            "The platform has no route for indicating drivers. Indicate the driver another "
            "way; an administrator can turn FLEET_DRIVER_INDICATIONS_API off."
        )
        return IndicationNotSent(message, kind="no_route")
    if isinstance(error, InvalidResponse):
        message = _(
            "The platform answered something the portal does not understand: the "
            "indication may have been received. Check it on the platform before trying "
            "again."
        )
        return IndicationNotSent(message, kind="unexpected")
    if isinstance(error, UpstreamUnavailable):
        if error.sent:
            message = _(
                "The platform could not be reached or did not answer: the indication may "
                "have been received. Check it on the platform before trying again."
            )
        else:
            message = _("The platform could not be reached; nothing was sent. Try again later.")
        return IndicationNotSent(message, kind="unavailable")
    message = _("The platform did not take the indication: %(reason)s") % {"reason": error.message}
    return IndicationNotSent(message, kind="error")
