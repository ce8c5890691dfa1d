"""Diagnosis of the portal's Fleet API configuration, for `manage.py fleet_doctor`.

Each finding says what was checked and, when it failed, what an operator can
do about it. None of them contains a credential, the signature or an accessKey.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterator
from urllib.parse import urlsplit

from django.conf import settings
from django.utils.translation import gettext as _

from fleet.api import errors
from fleet.api.client import FleetClient
from fleet.api.credentials import credential_problems
from fleet.services.connection import fleet_client

# A plate that cannot exist: a v2 call that reaches the route proves v2 auth works.
_PROBE_PLATE = "ZZZ0Z00"


@dataclasses.dataclass(frozen=True, slots=True)
class Finding:
    check: str
    ok: bool
    detail: str


def configuration_diagnose(*, live: bool = True) -> list[Finding]:
    """Check the credentials locally, then (when `live`) with one call per API version."""
    findings = list(_local_findings())
    if live and all(finding.ok for finding in findings):
        findings.extend(_live_findings())
    return findings


def _local_findings() -> Iterator[Finding]:
    for name in ("FLEET_ACCESS_TOKEN", "FLEET_SECRET_KEY"):
        problems = credential_problems(getattr(settings, name))
        yield Finding(
            name,
            not problems,
            "; ".join(problems) if problems else _("set, no stray characters"),
        )
    if settings.FLEET_ACCESS_TOKEN == settings.FLEET_SECRET_KEY:
        yield Finding(
            _("credential pair"),
            False,
            _("FLEET_ACCESS_TOKEN and FLEET_SECRET_KEY are equal: copy both again from the panel"),
        )
    scheme = urlsplit(settings.FLEET_BASE_URL).scheme
    https_ok = scheme == "https" or settings.FLEET_ENVIRONMENT == "emulator"
    yield Finding(
        "FLEET_BASE_URL",
        https_ok,
        _("%(url)s (%(environment)s)")
        % {"url": settings.FLEET_BASE_URL, "environment": settings.FLEET_ENVIRONMENT}
        if https_ok
        else _("the Fleet API is only served over HTTPS"),
    )


def _live_findings() -> Iterator[Finding]:
    client = fleet_client()
    yield _live(_("v1 call (GET /key/list-cars)"), lambda: _v1_probe(client))
    yield _live(_("v2 call (GET /v2/crlv/vehicles/…)"), lambda: _v2_probe(client))


def _v1_probe(client: FleetClient) -> str:
    total = client.list_vehicle_columns(retry_budget=0).total
    return _("accepted; the account lists %(total)s vehicles") % {"total": total}


def _v2_probe(client: FleetClient) -> str:
    # Reaching the route at all (even a 404 for the made-up plate) proves v2 auth.
    with contextlib.suppress(errors.NotFound):
        client.get_vehicle_crlv(_PROBE_PLATE, retry_budget=0)
    return _("accepted")


def _live(check: str, call: Callable[[], str]) -> Finding:
    try:
        return Finding(check, True, call())
    except errors.FleetError as error:
        return Finding(check, False, explain(error))


def explain(error: errors.FleetError) -> str:
    """An operator's reading of a failure: what happened and what to do, by its `Outcome`
    (as every page reads it); an answer that is not the API's at all is told apart."""
    trace = (
        _(" (upstream trace id %(trace)s)") % {"trace": error.trace_id} if error.trace_id else ""
    )
    outcome = error.outcome
    if outcome is errors.Outcome.CREDENTIALS_REJECTED:
        text = _(
            "the signature was rejected: check that FLEET_SECRET_KEY is the key exactly "
            "as the panel shows it and FLEET_ACCESS_TOKEN the token (not swapped), "
            "and that both belong to the %(environment)s environment at %(url)s; "
            "if they were regenerated in the panel, copy the new pair"
        ) % {"environment": settings.FLEET_ENVIRONMENT, "url": settings.FLEET_BASE_URL}
    elif outcome is errors.Outcome.PERMISSION_DENIED:
        text = _(
            "the credentials are valid but the account has no permission for this company: "
            "ask the company's fleet administrator to grant it, or use an administrator's pair"
        )
    elif outcome is errors.Outcome.RATE_LIMITED:
        text = _("the Fleet API is rate limiting this account: run again in %(seconds)s s") % {
            "seconds": int(getattr(error, "retry_after", None) or 60)
        }
    elif isinstance(error, errors.InvalidResponse):
        text = _(
            "the answer is not the Fleet API's: check that FLEET_BASE_URL (%(url)s) is the "
            "API base address, not the web application's"
        ) % {"url": settings.FLEET_BASE_URL}
    elif outcome is errors.Outcome.UNAVAILABLE:
        text = _(
            "the Fleet API could not be reached at %(url)s (%(reason)s): check the address, "
            "the network and the vendor's status page"
        ) % {"url": settings.FLEET_BASE_URL, "reason": error.message}
    else:
        text = _("the Fleet API answered an error: %(message)s") % {"message": error}
    return text + trace
