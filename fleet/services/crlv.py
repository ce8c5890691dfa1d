"""e-CRLV documents: a vehicle's view, a request's status and fresh download links.

Spec 2.4, 2.5, 4.3 and 4.4. The PDF link the API returns is valid for one
hour and every status call returns a new one (spec 2.4, 8), so the portal
never stores or renders one: a download asks the API again and hands the
browser the link it just got.

Plates and request ids are checked here before anything is sent: a bad one
costs no upstream call and no share of the rate limit.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable
from enum import StrEnum
from urllib.parse import urlsplit

from django.conf import settings
from django.utils import timezone
from django.utils.http import is_same_domain

from fleet import plates
from fleet.api import errors
from fleet.api.client import FleetClient

# Re-exported: views name these without importing the client's package.
from fleet.api.errors import Outcome as Outcome
from fleet.api.resources import CrlvRequest as CrlvRequest
from fleet.api.resources import VehicleCrlv as VehicleCrlv
from fleet.models import CrlvRequestVehicle
from fleet.services.connection import fleet_client
from fleet.services.scopes import WHOLE_FLEET, VehicleScope

logger = logging.getLogger(__name__)

# The spec does not fix the format of a requestId (4.3): any one path segment of
# URL-safe characters may be one (the emulator's are UUIDs, the vendor's may be
# numbers). A UUID is asked for in its canonical lower case; any other id as given.
_REQUEST_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._~-]{0,99}")
_UUID = re.compile(r"[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}")


class CrlvProblem(StrEnum):
    """Why the portal itself could not show or hand over an e-CRLV; when the API
    failed, the `Outcome` of its error says why."""

    INVALID = "invalid"  # not a plate / not a request id: nothing was asked
    NOT_READY = "not_ready"  # no document (yet): the request is not completed
    NO_LINK = "no_link"  # completed, but the document came without a link we could read
    INSECURE_LINK = "insecure_link"  # a plain http:// link outside the emulator: refused
    UNTRUSTED_LINK = "untrusted_link"  # a link to a host FLEET_DOWNLOAD_HOSTS does not allow


class CrlvUnavailable(Exception):
    """No e-CRLV answer; `outcome` says why, `retry_after` when to ask again."""

    def __init__(self, outcome: CrlvProblem | Outcome, *, retry_after: float | None = None) -> None:
        super().__init__(outcome.value)
        self.outcome = outcome
        self.retry_after = retry_after


def vehicle_crlv_get(*, plate: str, scope: VehicleScope = WHOLE_FLEET) -> VehicleCrlv:
    """The vehicle's latest issued e-CRLV and its request in progress, each if any.

    When the answer held neither under a name the portal knows but something
    that looked like e-CRLV information, the names of its members are logged
    (once per process for each set of names; never the values): the page says
    it has no e-CRLV information, and an operator learns what the vendor sent.
    """
    if not plates.is_valid(plate):
        raise CrlvUnavailable(CrlvProblem.INVALID)
    if not scope.covers(plate):  # as if it did not exist: a 404 says nothing of it
        raise CrlvUnavailable(Outcome.NOT_FOUND)
    canonical = plates.normalize(plate)
    view = _ask(lambda client: client.get_vehicle_crlv(canonical))
    if view.is_unreadable:
        _report_unrecognised(view)
    _requests_remember(canonical, view)
    return view


def crlv_request_get(*, request_id: str, scope: VehicleScope = WHOLE_FLEET) -> CrlvRequest:
    """An e-CRLV request's current status (with a fresh document when completed).

    Outside the whole fleet, only a request of a vehicle of `scope`: one seen on the
    page of such a vehicle, or whose status names one; any other is not found.
    """
    if not _REQUEST_ID.fullmatch(request_id) or ".." in request_id:
        raise CrlvUnavailable(CrlvProblem.INVALID)
    canonical = request_id.lower() if _UUID.fullmatch(request_id) else request_id
    seen = None
    if not scope.whole_fleet:
        seen = CrlvRequestVehicle.objects.filter(request_id=canonical).first()
        if seen is not None and not scope.covers(seen.registration):
            raise CrlvUnavailable(Outcome.NOT_FOUND)
    found = _ask(lambda client: client.get_crlv_request(canonical))
    if not scope.whole_fleet and seen is None:
        named = found.plate if found.plate and plates.is_valid(found.plate) else ""
        if not scope.covers(named):
            raise CrlvUnavailable(Outcome.NOT_FOUND)
    return found


def crlv_download_url(*, request_id: str, scope: VehicleScope = WHOLE_FLEET) -> str:
    """A PDF link minted just now for the request; `NOT_READY` unless completed."""
    return _download_url(crlv_request_get(request_id=request_id, scope=scope))


def vehicle_crlv_download_url(*, plate: str, scope: VehicleScope = WHOLE_FLEET) -> str:
    """A PDF link minted just now for the vehicle's latest e-CRLV; `NOT_READY` if none."""
    latest = vehicle_crlv_get(plate=plate, scope=scope).latest
    if latest is None:
        raise CrlvUnavailable(CrlvProblem.NOT_READY)
    return _download_url(latest)


def _download_url(request: CrlvRequest) -> str:
    if request.document is None:
        raise CrlvUnavailable(CrlvProblem.NOT_READY)
    url = request.document.download_url
    if url is None:
        logger.warning("e-CRLV document without a download link the portal could read")
        raise CrlvUnavailable(CrlvProblem.NO_LINK)
    # The browser is sent there: only a web address, never `javascript:` or a path of ours.
    parts = urlsplit(url)
    if parts.scheme not in ("https", "http") or not parts.netloc:
        raise CrlvUnavailable(Outcome.ERROR)
    # The API is served over HTTPS only (spec 4): a plain-http link to a manager's
    # document is refused everywhere but on the local emulator.
    if parts.scheme == "http" and settings.FLEET_ENVIRONMENT != "emulator":
        # The host only: the link itself opens the document for an hour.
        logger.warning(
            "e-CRLV download refused: the fleet service gave a plain http:// link (host %s)",
            parts.hostname,
        )
        raise CrlvUnavailable(CrlvProblem.INSECURE_LINK)
    # The portal's name vouches for where it redirects: only to the vendor's hosts, so
    # that a tampered or mistaken answer cannot send a manager to a look-alike site.
    if not _is_download_host(url):
        logger.warning(
            "e-CRLV download refused: the fleet service gave a link to host %s, which "
            "FLEET_DOWNLOAD_HOSTS does not allow (add it there if the vendor serves its "
            "documents from it)",
            _printable_host(parts.hostname),
        )
        raise CrlvUnavailable(CrlvProblem.UNTRUSTED_LINK)
    return url


def _download_hosts() -> list[str]:
    """The hosts a download may send the browser to: FLEET_DOWNLOAD_HOSTS, or when it
    is empty the hosts of the Fleet API and of its web application."""
    if configured := settings.FLEET_DOWNLOAD_HOSTS:
        return list(configured)
    urls = (settings.FLEET_BASE_URL, settings.FLEET_LOGIN_URL)
    return [host for url in urls if (host := urlsplit(url).hostname)]


def _is_download_host(url: str) -> bool:
    # A browser reads a backslash as a slash: `https://evil.example\@vendor.example/`
    # takes it to evil.example, where urlsplit reads vendor.example. No vendor sends a
    # link with a backslash, blanks or user info, so such a link is refused outright.
    if "\\" in url or any(ord(char) <= 0x20 or ord(char) == 0x7F for char in url):
        return False
    parts = urlsplit(url)
    if parts.hostname is None or "@" in parts.netloc:
        return False
    return any(is_same_domain(parts.hostname, allowed) for allowed in _download_hosts())


def _printable_host(host: str | None) -> str:
    """A host for a log line: at most 100 printable characters."""
    shown = "".join(char for char in host or "" if char.isprintable())
    return repr(shown[:100])


# The sets of member names already reported, so that each is logged once per process.
_REPORTED: set[tuple[str, ...]] = set()
_REPORTED_LOCK = threading.Lock()
_REPORTED_MAX = 32


def crlv_reports_forget() -> None:
    """Forget which unrecognised e-CRLV views this process has logged: each is logged again."""
    with _REPORTED_LOCK:
        _REPORTED.clear()


def _report_unrecognised(view: VehicleCrlv) -> None:
    with _REPORTED_LOCK:
        if view.members in _REPORTED or len(_REPORTED) >= _REPORTED_MAX:
            return
        _REPORTED.add(view.members)
    logger.warning(
        "e-CRLV view of a vehicle without a part the portal recognises: it came with the "
        "members %s (%s looked like e-CRLV information); the page shows no e-CRLV "
        "information. The names the portal accepts are in fleet/api/resources.py.",
        _names(view.members),
        _names(view.unrecognised),
    )


def _names(names: tuple[str, ...]) -> str:
    """Member names for a log line: each shortened, at most 30 of them."""
    shown = [name if len(name) <= 40 else f"{name[:39]}…" for name in names[:30]]
    more = f" and {len(names) - 30} more" if len(names) > 30 else ""
    return ", ".join(repr(name) for name in shown) + more


def _ask[T](call: Callable[[FleetClient], T]) -> T:
    """`call` with the portal's client, its failures turned into `CrlvUnavailable`.

    The client has already logged each failure once, with the trace id.
    """
    try:
        return call(fleet_client())
    except errors.FleetError as error:
        raise CrlvUnavailable(error.outcome, retry_after=error.retry_after) from error


def _requests_remember(plate: str, view: VehicleCrlv) -> None:
    """Note the vehicle of the requests its e-CRLV view names: their pages are scoped by it."""
    registration, now = plates.registration(plate), timezone.now()
    seen = {
        (r.request_id.lower() if _UUID.fullmatch(r.request_id) else r.request_id)
        for r in (view.in_progress, view.latest)
        if r is not None and r.request_id and len(r.request_id) <= 200
    }
    if seen:  # one statement for both, whether noted before or not
        CrlvRequestVehicle.objects.bulk_create(
            [
                CrlvRequestVehicle(request_id=i, registration=registration, seen_at=now)
                for i in seen
            ],
            update_conflicts=True,
            unique_fields=["request_id"],
            update_fields=["registration", "seen_at"],
        )
