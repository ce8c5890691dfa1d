"""e-CRLV documents: a vehicle's view, a request's status and fresh download links.

Spec 2.4, 2.5, 4.3 and 4.4. The PDF link the API returns is valid for one
hour and every status call returns a new one (spec 2.4, 8), so the portal
never stores or renders one: a download asks the API again and hands the
browser the link it just got.

Plates and request ids are checked here before anything is sent: a bad one
costs no upstream call and no share of the rate limit.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from enum import StrEnum
from urllib.parse import urlsplit

from fleet import plates
from fleet.api import errors
from fleet.api.client import FleetClient

# Re-exported: views name these records without importing the client's package.
from fleet.api.resources import CrlvRequest as CrlvRequest
from fleet.api.resources import VehicleCrlv as VehicleCrlv
from fleet.services.connection import fleet_client

# The spec does not fix the format of a requestId (4.3); the API's ids seen so
# far (and the emulator's) are UUIDs, so anything else cannot be one of them.
_REQUEST_ID = re.compile(r"[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}")


class CrlvOutcome(StrEnum):
    """Why an e-CRLV could not be shown or downloaded."""

    INVALID = "invalid"  # not a plate / not a request id: nothing was asked
    NOT_FOUND = "not_found"
    NOT_READY = "not_ready"  # no document (yet): the request is not completed
    RATE_LIMITED = "rate_limited"
    UNAVAILABLE = "unavailable"
    CREDENTIALS_REJECTED = "credentials_rejected"
    PERMISSION_DENIED = "permission_denied"
    ERROR = "error"


class CrlvUnavailable(Exception):
    """No e-CRLV answer; `outcome` says why, `retry_after` when to ask again."""

    def __init__(self, outcome: CrlvOutcome, *, retry_after: float | None = None) -> None:
        super().__init__(outcome.value)
        self.outcome = outcome
        self.retry_after = retry_after


def vehicle_crlv_get(*, plate: str) -> VehicleCrlv:
    """The vehicle's latest issued e-CRLV and its request in progress, each if any."""
    if not plates.is_valid(plate):
        raise CrlvUnavailable(CrlvOutcome.INVALID)
    canonical = plates.normalize(plate)
    return _ask(lambda client: client.get_vehicle_crlv(canonical))


def crlv_request_get(*, request_id: str) -> CrlvRequest:
    """An e-CRLV request's current status (with a fresh document when completed)."""
    if not _REQUEST_ID.fullmatch(request_id):
        raise CrlvUnavailable(CrlvOutcome.INVALID)
    canonical = request_id.lower()
    return _ask(lambda client: client.get_crlv_request(canonical))


def crlv_download_url(*, request_id: str) -> str:
    """A PDF link minted just now for the request; `NOT_READY` unless completed."""
    return _download_url(crlv_request_get(request_id=request_id))


def vehicle_crlv_download_url(*, plate: str) -> str:
    """A PDF link minted just now for the vehicle's latest e-CRLV; `NOT_READY` if none."""
    latest = vehicle_crlv_get(plate=plate).latest
    if latest is None:
        raise CrlvUnavailable(CrlvOutcome.NOT_READY)
    return _download_url(latest)


def _download_url(request: CrlvRequest) -> str:
    if request.document is None:
        raise CrlvUnavailable(CrlvOutcome.NOT_READY)
    url = request.document.download_url
    # The browser is sent there: only a web address, never `javascript:` or a path of ours.
    parts = urlsplit(url)
    if parts.scheme not in ("https", "http") or not parts.netloc:
        raise CrlvUnavailable(CrlvOutcome.ERROR)
    return url


def _ask[T](call: Callable[[FleetClient], T]) -> T:
    """`call` with the portal's client, its failures turned into `CrlvUnavailable`.

    The client has already logged each failure once, with the trace id.
    """
    try:
        return call(fleet_client())
    except errors.FleetError as error:
        retry_after = error.retry_after if isinstance(error, errors.RetryLater) else None
        raise CrlvUnavailable(_outcome_of(error), retry_after=retry_after) from error


def _outcome_of(error: errors.FleetError) -> CrlvOutcome:
    if isinstance(error, errors.NotFound):
        return CrlvOutcome.NOT_FOUND
    if isinstance(error, errors.CredentialsRejected):
        return CrlvOutcome.CREDENTIALS_REJECTED
    if isinstance(error, errors.PermissionDenied):
        return CrlvOutcome.PERMISSION_DENIED
    if isinstance(error, errors.RateLimited):
        return CrlvOutcome.RATE_LIMITED
    if isinstance(error, errors.UpstreamUnavailable | errors.GatewayTimeout):
        return CrlvOutcome.UNAVAILABLE
    return CrlvOutcome.ERROR
