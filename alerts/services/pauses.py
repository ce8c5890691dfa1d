"""Alerts stop when access ends, and start again at the next sign-in.

A refusal at single sign-on of a person who has a portal account
(`portal.lib.identity.access_refused`) pauses their alerts at once. A person whose
access comes from an identity provider (a linked identity, or provisioned by it
over SCIM) and who has not
signed in for ALERTS_INACTIVE_DAYS is paused by the worker's daily run
(`alerts.tasks.alerts_pause_inactive`), and gets one last e-mail saying so and
how to resume. Local-only accounts (break-glass administrators, the demo) are
never paused for inactivity: no provider can end their access.

A paused person gets no new alert, e-mail or webhook (`alert_recipients`), and
their waiting ones are cancelled with the reason. A completed sign-in, through a
provider or the local form (`portal.lib.identity.access_granted`), or an
administrator's action in the admin resumes them.

The last e-mail goes once, never twice, however many workers run: the run that
pauses a person marks it `pending`, and a run sends it only after taking it
with a conditional UPDATE (`pending` → `sending`) that one run alone can win.
A worker killed in the middle of sending leaves it `sending`: it is not sent
again (one missing last e-mail rather than two). One the mail server refuses
is tried again by the next days' runs, ALERTS_MAX_ATTEMPTS times in all.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any, Final

from django.conf import settings
from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.db.models import F, Q
from django.utils import timezone, translation
from django.utils.translation import gettext as _

from alerts.models import Alert, AlertDelivery, AlertPause, AlertStatus, PauseNotice, PauseReason
from alerts.services.emails import pause_notice_email
from alerts.services.preferences import alert_preferences_get
from alerts.services.reminder_runs import indication_reminders_schedule
from portal.lib import worker

logger = logging.getLogger(__name__)

PAUSE_TASK: Final = "alerts.tasks.alerts_pause_inactive"
# The daily run: in the morning, when a last e-mail is read.
_RUN_HOUR: Final = 10


def alerts_paused(*, user: User) -> bool:
    return AlertPause.objects.current().filter(user=user).exists()


def alerts_pause(*, user: User, reason: PauseReason, detail: str, notice: bool = False) -> bool:
    """Pause `user`'s alerts and cancel their waiting ones; whether this call paused them
    (not when they were paused already, by this reason or another).

    With `notice`, the last e-mail is to be sent (`alert_pause_notices_send`).
    """
    values: dict[str, Any] = {
        "reason": reason,
        "detail": detail[:200],
        "since": timezone.now(),
        "resumed_at": None,
        "resumed_by": "",
        "notice": PauseNotice.PENDING if notice else PauseNotice.NONE,
        "notice_attempts": 0,
        "notice_error": "",
    }
    with transaction.atomic():
        # A pause that ended is taken again by one run only: its condition is evaluated
        # again on the row it locks. A new one is one row per user (a unique column).
        paused = bool(
            AlertPause.objects.filter(user=user, resumed_at__isnull=False).update(**values)
        )
        if not paused:
            try:
                with transaction.atomic():
                    AlertPause.objects.create(user=user, **values)
            except IntegrityError:
                return False  # paused already
            paused = True
        Alert.objects.filter(user=user, status=AlertStatus.PENDING).update(
            status=AlertStatus.CANCELLED, last_error=f"alerts paused: {detail}"[:2000]
        )
    logger.info("alerts of user %s paused (%s)", user.pk, reason)
    return paused


def alerts_resume(*, user: User, by: str) -> bool:
    """End `user`'s pause; whether they were paused. Alerts cancelled meanwhile stay so."""
    resumed = (
        AlertPause.objects.current()
        .filter(user=user)
        .update(resumed_at=timezone.now(), resumed_by=by[:200])
    )
    if resumed:
        logger.info("alerts of user %s resumed (%s)", user.pk, by)
    return bool(resumed)


def alert_pause_to_tell(*, user: User) -> AlertPause | None:
    """The pause the alerts page tells `user` of: the current one, or one that ended at or
    since their last sign-in."""
    pause = AlertPause.objects.filter(user=user).first()
    if pause is None or pause.resumed_at is None:
        return pause
    signed_in = user.last_login
    return pause if signed_in is not None and pause.resumed_at >= signed_in else None


# --- What sign-in signals -----------------------------------------------------------------


def alerts_pause_on_refusal(sender: Any, *, user: User, outcome: Any, **kwargs: Any) -> None:
    """`portal.lib.identity.access_refused` receiver: the refusal's outcome, in words, is why."""
    alerts_pause(
        user=user,
        reason=PauseReason.REFUSED,
        detail=_in_portal_language(lambda: str(getattr(outcome, "label", outcome))),
    )


def alerts_pause_on_access_end(
    sender: Any, *, user: User, reason: str, detail: str, **kwargs: Any
) -> None:
    """`portal.lib.identity.access_ended` receiver: blocked or deprovisioned, as `reason` says."""
    alerts_pause(user=user, reason=PauseReason(reason), detail=detail)


def alerts_resume_on_restore(sender: Any, *, user: User, by: str, **kwargs: Any) -> None:
    """`portal.lib.identity.access_restored` receiver: an administrator lifted the block."""
    alerts_resume(user=user, by=by)


def alerts_resume_on_sign_in(sender: Any, *, user: User, **kwargs: Any) -> None:
    """`portal.lib.identity.access_granted` receiver; it also makes sure the daily run waits."""
    alerts_resume(user=user, by=_in_portal_language(lambda: _("signed in")))
    transaction.on_commit(alert_inactivity_schedule)
    transaction.on_commit(indication_reminders_schedule)


# --- Inactivity ----------------------------------------------------------------------------


def alerts_pause_inactive() -> Counter[str]:
    """Pause the people of a provider who have not signed in for ALERTS_INACTIVE_DAYS, then
    send the last e-mails waiting; how many ended how."""
    days = settings.ALERTS_INACTIVE_DAYS
    cutoff = timezone.now() - timedelta(days=days)
    candidates = (
        # Of a provider: an identity it signs them in with, or provisioned by it over SCIM
        # (with no externalId, a person has no identity until their first sign-in).
        User.objects.filter(is_active=True)
        .filter(
            Q(socialaccount__isnull=False)
            | Q(scim_identities__isnull=False, scim_identities__deleted_at__isnull=True)
        )
        .filter(Q(last_login__lt=cutoff) | Q(last_login__isnull=True, date_joined__lt=cutoff))
        .exclude(pk__in=AlertPause.objects.current().values("user_id"))
        .distinct()
        .order_by("pk")
    )
    outcomes: Counter[str] = Counter()
    detail = _in_portal_language(lambda: _("not signed in for %(days)d days") % {"days": days})
    for user in candidates:
        if alerts_pause(
            user=user, reason=PauseReason.INACTIVE, detail=detail, notice=_told_by_alerts(user)
        ):
            outcomes["paused"] += 1
    outcomes.update(alert_pause_notices_send())
    return outcomes


def alert_pause_notices_send() -> Counter[str]:
    """Send the last e-mails of the current pauses that wait for theirs; how many ended how."""
    outcomes: Counter[str] = Counter()
    if not settings.PORTAL_BASE_URL:
        return outcomes  # the e-mail's link needs it; alerts_send_due says so in the log
    waiting = AlertPause.objects.current().filter(notice=PauseNotice.PENDING)
    for pause in waiting.select_related("user").order_by("pk"):
        taken = (
            AlertPause.objects.current()
            .filter(pk=pause.pk, notice=PauseNotice.PENDING)
            .update(notice=PauseNotice.SENDING, notice_attempts=F("notice_attempts") + 1)
        )
        if taken:
            outcomes[_notice_send(pause)] += 1
    return outcomes


def alert_inactivity_next_run() -> datetime:
    """When the daily run is next: the portal's next 10:00 at least an hour away."""
    return worker.daily_at(_RUN_HOUR)


def alert_inactivity_schedule() -> None:
    """Start the daily run, unless one waits: each run asks for the next day's."""
    try:
        worker.enqueue_unless_waiting(PAUSE_TASK, run_after=alert_inactivity_next_run())
    except Exception:
        logger.exception("could not ask the worker for the daily check of inactive people")


def _told_by_alerts(user: User) -> bool:
    """Whether `user` hears of alerts today, and so is to be told they stop (by e-mail)."""
    if not user.email:
        return False
    emails = alert_preferences_get(user=user).delivery != AlertDelivery.OFF
    return emails or user.alert_webhooks.filter(active=True).exists()


def _notice_send(pause: AlertPause) -> str:
    user = pause.user
    language = alert_preferences_get(user=user).language
    message = pause_notice_email(
        user=user, language=language, days=settings.ALERTS_INACTIVE_DAYS, since=pause.since
    )
    mine = AlertPause.objects.filter(pk=pause.pk, notice=PauseNotice.SENDING)
    try:
        message.send(using="default")
    except Exception as error:
        logger.warning("the last alert e-mail to user %s failed: %s", user.pk, error)
        again = pause.notice_attempts + 1 < settings.ALERTS_MAX_ATTEMPTS
        mine.update(
            notice=PauseNotice.PENDING if again else PauseNotice.FAILED,
            notice_error=f"{type(error).__name__}: {error}"[:500],
        )
        return "retry" if again else "failed"
    mine.update(notice=PauseNotice.SENT, notice_error="")
    logger.info("the last alert e-mail went to user %s (not signed in)", user.pk)
    return "told"


def _in_portal_language(words: Callable[[], object]) -> str:
    """Words kept on the row, in the portal's language (LANGUAGE_CODE), whoever's request
    it is: the admin reads them."""
    with translation.override(settings.LANGUAGE_CODE):
        return str(words())
