"""Recording what became of each answer of an identity provider (SsoAttempt), and
saying it once in the log."""

from __future__ import annotations

import logging
from typing import Any

from django.contrib.auth.models import User
from django.http import HttpRequest

from portal.lib import metrics
from portal.lib.addresses import client_address
from portal.lib.redaction import redact
from signin.models import SsoAttempt, SsoOutcome

logger = logging.getLogger(__name__)

_DETAIL_LENGTH = SsoAttempt._meta.get_field("detail").max_length or 300


def sso_attempt_record(
    *,
    request: HttpRequest,
    provider: str,
    outcome: SsoOutcome,
    subject: str = "",
    email: str = "",
    user: User | None = None,
    role: str = "",
    detail: str = "",
) -> SsoAttempt:
    attempt = SsoAttempt.objects.create(
        provider=provider[:200],
        subject=subject[:255],
        email=email[:254],
        address=client_address(request),
        user=user if user is not None and user.pk else None,
        outcome=outcome,
        role=role,
        detail=redact(detail)[:_DETAIL_LENGTH],
    )
    metrics.SIGN_INS.labels("sso", outcome.value).inc()
    level = logging.INFO if outcome in SsoOutcome.successes() else logging.WARNING
    logger.log(
        level,
        "Single sign-on through %s from %s: %s (subject %s, e-mail %s)%s",
        provider,
        attempt.address or "an unknown address",
        outcome.value,
        subject or "-",
        email or "-",
        f": {attempt.detail}" if attempt.detail else "",
    )
    return attempt


def local_sign_in_count(sender: Any, request: HttpRequest, user: User, **kwargs: Any) -> None:
    """`user_logged_in` receiver: count a sign-in with the local form (portal.lib.metrics); one
    through a provider is counted with its outcome, by `sso_attempt_record`."""
    backend = str(getattr(user, "backend", "") or "")
    if not backend.startswith("allauth."):
        metrics.SIGN_INS.labels("local", "signed_in").inc()


def local_sign_in_failure_count(sender: Any, **kwargs: Any) -> None:
    """`user_login_failed` receiver: a wrong username or password, or a locked one."""
    metrics.SIGN_INS.labels("local", "failed").inc()
