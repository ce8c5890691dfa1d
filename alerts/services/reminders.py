"""Reminders of the deadlines to indicate a fine's driver, and of those missed: the
worker's daily run (`alerts.tasks.alerts_indications_daily`).

A fine still to indicate whose deadline is `ALERTS_INDICATION_DAYS` days away (7 and 2
by default) or nearer gets one reminder for the nearest of those days it is within
(`indication_due:<days>:<fine>`): a fine found 5 days before its deadline is reminded
for 7, then again at 2. A fine whose deadline passed with its driver still to indicate
(missed, `Fine.indication_missed`) gets one alert saying so (`indication_missed:<fine>`),
for a deadline of the last `MISSED_LOOKED_BACK` days. Each is written once (the
outbox's unique keys), to the people who see the vehicle and chose "indication
deadlines", on their channels: their e-mail (at once or in their digest) and their
webhooks. A fine indicated since is not reminded, and a reminder written before its
indication is cancelled when it is sent (`alerts.services.sending`).
"""

from __future__ import annotations

import logging
from datetime import date, timedelta
from typing import Final

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from alerts.models import Alert, AlertEvent
from alerts.services.outbox import alerts_for, alerts_send_soon, event_data
from alerts.services.preferences import alert_recipients
from fleet.models import Fine
from fleet.services.attribution import fine_drivers_told
from fleet.services.indication_sweep import fines_due_between
from fleet.services.scopes import scope_of

logger = logging.getLogger(__name__)

# Missed deadlines of these last days are told (a run that did not happen for a while
# tells the latest only, not every deadline since the fleet began).
MISSED_LOOKED_BACK: Final = 7


def indication_reminder_days() -> list[int]:
    """ALERTS_INDICATION_DAYS: the days before a deadline a reminder goes out, largest first."""
    return sorted(set(settings.ALERTS_INDICATION_DAYS), reverse=True)


def indication_reminders_create(*, today: date | None = None) -> dict[str, int]:
    """Write the reminders due `today` and the missed deadlines' alerts; how many fines
    were looked at, and how many alerts (e-mails and webhooks) were asked for (those
    already written by an earlier run of the day are not written again)."""
    today = today or timezone.localdate()
    days = indication_reminder_days()
    recipients = [(u, c) for u, c in alert_recipients() if c.indication_reminders]
    counts = {"fines": 0, "alerts": 0}
    if not recipients or not days:
        return counts
    subscriptions = {u.pk: [s for s in u.alert_webhooks.all() if s.active] for u, _ in recipients}
    first = today - timedelta(days=MISSED_LOOKED_BACK)
    for fines in fines_due_between(first, today + timedelta(days=days[0])):
        rows: list[Alert] = []
        drivers = fine_drivers_told(fines)
        now = timezone.now()
        for fine in fines:
            told = _told(fine, today, days)
            if told is None:
                continue
            event, key, left = told
            data = event_data(event, fine, driver=drivers.get(fine.pk)) | {"days_left": left}
            for user, choices in recipients:
                registration = fine.registration
                if not choices.covers(registration) or not scope_of(user).covers(registration):
                    continue
                rows += alerts_for(
                    user, choices, subscriptions[user.pk], event, fine, data, now, key=key
                )
        with transaction.atomic():  # those written before (a run again) are kept as they are
            Alert.objects.bulk_create(rows, ignore_conflicts=True)
        counts["alerts"] += len(rows)
        counts["fines"] += len(fines)
    if counts["alerts"]:
        transaction.on_commit(alerts_send_soon)
    logger.info("indication reminders: %(alerts)d alert(s) of %(fines)d fine(s)", counts)
    return counts


def _told(fine: Fine, today: date, days: list[int]) -> tuple[AlertEvent, str, int] | None:
    """The event `fine` makes today, its key and the days left; None for none."""
    assert fine.indication_due is not None
    left = (fine.indication_due - today).days
    if left < 0:
        return AlertEvent.INDICATION_MISSED, f"indication_missed:{fine.pk}", left
    within = min(day for day in days if day >= left)
    return AlertEvent.INDICATION_DUE, f"indication_due:{within}:{fine.pk}", left
