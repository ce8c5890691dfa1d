"""Single sign-on into the fleet web application (spec 4.2).

The portal logs a manager into the fleet app by minting a single-use
accessKey with the manager's fleet login and sending the browser to
`{login_url}/login?accessKey=…`. A key is minted for one response and never
stored; every attempt is written to the audit trail without it.
"""

from __future__ import annotations

import logging
import time
from typing import NoReturn
from urllib.parse import urlencode

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from fleet.api import errors
from fleet.api.errors import Outcome
from fleet.models import AccessKeyMint, FleetAccount, MintOutcome, MintPurpose
from fleet.services.connection import fleet_client
from portal.lib.encryption import UndecryptableSecret

logger = logging.getLogger(__name__)

_DETAIL_LENGTH = AccessKeyMint._meta.get_field("detail").max_length or 500


class MintFailed(Exception):
    """No key was minted; `outcome` says why, `retry_after` when to try again.

    When the fleet service refused with an answer of its own, `code`, `message`
    and `trace_id` are the vendor's words (redacted, safe to show): a refusal
    the portal does not know is shown as what it is, not guessed at.
    """

    def __init__(
        self,
        outcome: MintOutcome,
        *,
        retry_after: float | None = None,
        code: str = "",
        message: str = "",
        trace_id: str = "",
    ) -> None:
        super().__init__(outcome.value)
        self.outcome = outcome
        self.retry_after = retry_after
        self.code = code
        self.message = message
        self.trace_id = trace_id


def access_key_mint(*, user: User, purpose: MintPurpose) -> str:
    """A fresh accessKey for `user`'s linked fleet login; `MintFailed` otherwise."""
    account = FleetAccount.objects.filter(user=user).first()
    if account is None:
        _audit(user=user, email="", purpose=purpose, outcome=MintOutcome.NO_ACCOUNT)
        raise MintFailed(MintOutcome.NO_ACCOUNT)
    return _mint(user=user, account=account, purpose=purpose)


def fleet_app_url(*, access_key: str) -> str:
    """Where the browser logs in with `access_key` (spec 4.2, rule 2)."""
    return f"{settings.FLEET_LOGIN_URL}/login?{urlencode({'accessKey': access_key})}"


def fleet_account_link(*, user: User, email: str, password: str) -> FleetAccount:
    """Link (or update) `user`'s fleet login, after checking it by minting once.

    Nothing is saved when the check fails: `MintFailed` says why.
    """
    _mint(user=user, purpose=MintPurpose.LINK_CHECK, email=email, password=password)
    account = FleetAccount.objects.filter(user=user).first() or FleetAccount(user=user)
    account.email = email
    account.set_password(password)
    account.forget_results()
    account.last_success_at = timezone.now()
    account.save()
    return account


def fleet_account_check(*, account: FleetAccount, by: User) -> MintOutcome:
    """An administrator's test of a stored fleet login; the key is discarded."""
    try:
        _mint(user=by, account=account, purpose=MintPurpose.ADMIN_TEST)
    except MintFailed as failure:
        return failure.outcome
    return MintOutcome.MINTED


def _mint(
    *,
    user: User,
    purpose: MintPurpose,
    account: FleetAccount | None = None,
    email: str = "",
    password: str = "",
) -> str:
    """Call `POST /key/generator` with a stored `account`'s login or the one given.

    Every attempt is audited and, for a stored account, noted on it.
    """
    started = time.monotonic()
    if account is not None:
        email = account.email
        try:
            password = account.password()
        except UndecryptableSecret as error:
            logger.error("fleet account %s: %s", account.pk, error)
            _fail(user, account, email, purpose, MintOutcome.ERROR, detail=str(error))
    try:
        key = fleet_client().create_access_key(email=email, password=password)
    except errors.FleetError as error:
        # The audit records no "not found": a 404 from the key generator is an error.
        outcome = (
            MintOutcome.ERROR if error.outcome is Outcome.NOT_FOUND else MintOutcome(error.outcome)
        )
        _fail(
            user,
            account,
            email,
            purpose,
            outcome,
            detail=str(error),
            trace_id=error.trace_id or "",
            retry_after=error.retry_after,
            started=started,
            cause=error,
        )

    # After the call, never around it: one short transaction, one commit.
    with transaction.atomic():
        _audit(user=user, email=email, purpose=purpose, outcome=MintOutcome.MINTED, started=started)
        if account is not None:
            FleetAccount.objects.filter(pk=account.pk).update(last_success_at=timezone.now())
    return key


def _fail(
    user: User,
    account: FleetAccount | None,
    email: str,
    purpose: MintPurpose,
    outcome: MintOutcome,
    *,
    detail: str,
    trace_id: str = "",
    retry_after: float | None = None,
    started: float | None = None,
    cause: Exception | None = None,
) -> NoReturn:
    with transaction.atomic():
        _audit(
            user=user,
            email=email,
            purpose=purpose,
            outcome=outcome,
            trace_id=trace_id,
            detail=detail,
            started=started,
        )
        if account is not None:
            FleetAccount.objects.filter(pk=account.pk).update(
                last_failure_at=timezone.now(), last_failure_outcome=outcome
            )
    said = cause if isinstance(cause, errors.ApiError) else None
    raise MintFailed(
        outcome,
        retry_after=retry_after,
        code=(said.code or "") if said else "",
        message=said.message if said and said.message != said.summary else "",
        trace_id=trace_id,
    ) from cause


def _audit(
    *,
    user: User,
    email: str,
    purpose: MintPurpose,
    outcome: MintOutcome,
    trace_id: str = "",
    detail: str = "",
    started: float | None = None,
) -> None:
    duration_ms = None if started is None else round((time.monotonic() - started) * 1000)
    AccessKeyMint.objects.create(
        user=user,
        fleet_email=email,
        purpose=purpose,
        outcome=outcome,
        trace_id=trace_id,
        detail=detail[:_DETAIL_LENGTH],
        duration_ms=duration_ms,
    )
