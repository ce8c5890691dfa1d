"""The alert e-mails: one event, or a digest of several, in the user's language.

Text and HTML parts rendered from templates/alerts/email/, with the plate,
the event's fields and an absolute link to the record's page in the portal
(PORTAL_BASE_URL), never the platform's expiring document links. Every
e-mail carries the one-click unsubscribe of RFC 8058: a signed link in the
text and in `List-Unsubscribe`, with `List-Unsubscribe-Post`; the link works
for ALERTS_UNSUBSCRIBE_DAYS, and only while the user has the address it was
sent to.
"""

from __future__ import annotations

import email.policy
import re
import unicodedata
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo

from django.conf import settings
from django.contrib.auth.models import User
from django.core import signing
from django.core.mail import EmailMultiAlternatives
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone, translation
from django.utils.crypto import constant_time_compare, salted_hmac
from django.utils.formats import date_format
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from alerts.models import Alert, AlertEvent
from fleet.api.values import parse_amount, parse_moment
from fleet.models import BASIS_MARKS, MISSED, DeadlineBasis, DriverBasis, Indication
from fleet.webhooks.facts import FineFacts
from portal.lib import formatting

_UNSUBSCRIBE_SALT = "alerts.unsubscribe"


@dataclass(frozen=True, slots=True)
class Item:
    """One event as an e-mail shows it."""

    heading: str
    plate: str
    title: str
    fields: list[tuple[str, str]]
    url: str


def alert_email(
    *, user: User, alerts: Sequence[Alert], language: str, time_zone: str
) -> EmailMultiAlternatives:
    """The e-mail telling `user` of `alerts`: one alert alone, or a digest of several,
    in their language and time zone."""
    with translation.override(language), timezone.override(ZoneInfo(time_zone)):
        items = [_item(alert) for alert in alerts]
        unsubscribe = absolute_url(reverse("alerts:unsubscribe", args=[unsubscribe_token(user)]))
        context: dict[str, Any] = {
            "user": user,
            "items": items,
            "digest": len(items) > 1,
            "unsubscribe_url": unsubscribe,
            "preferences_url": absolute_url(reverse("alerts:preferences")),
        }
        if len(items) == 1:
            item = items[0]
            subject = (
                f"{item.heading}: {item.plate} · {item.title}"
                if item.plate
                else (f"{item.heading}: {item.title}")
            )
        else:
            subject = ngettext(
                "Fleet Portal: %(count)d alert", "Fleet Portal: %(count)d alerts", len(items)
            ) % {"count": len(items)}
        return _email(
            user=user,
            subject=subject,
            template="alerts/email/alerts",
            context=context,
            headers={
                "Message-ID": message_id(alerts),
                "List-Unsubscribe": f"<{unsubscribe}>",
                "List-Unsubscribe-Post": "List-Unsubscribe=One-Click",
            },
        )


# Line breaks of every kind (Python's e-mail package folds headers at all of these) and
# tabs: one space each run. Any other control character, and a lone surrogate (which
# UTF-8 cannot encode), is dropped.
_BREAKS = re.compile(r"[\t\n\v\f\r\x1c-\x1f\x85\u2028\u2029]+")
_DROPPED = frozenset({"Cc", "Cs"})


def one_line(text: str) -> str:
    """`text` as one line without control characters: fit for a header, and for a line of
    the e-mail (a payload's text may hold anything, and one bad character must not
    stop the message)."""
    text = _BREAKS.sub(" ", text)
    return "".join(c for c in text if unicodedata.category(c) not in _DROPPED)


def pause_notice_email(
    *, user: User, language: str, days: int, since: datetime
) -> EmailMultiAlternatives:
    """The last e-mail of a person paused for not signing in: alerts stop, and signing in
    to the portal starts them again (the link opens the alerts page, after sign-in)."""
    with translation.override(language):
        context: dict[str, Any] = {
            "user": user,
            "days": days,
            "resume_url": absolute_url(reverse("alerts:preferences")),
        }
        # The same on a retry of the same pause: a repeat is recognisable.
        stamp = int(since.timestamp())
        return _email(
            user=user,
            subject=_("Fleet Portal: your alerts have stopped"),
            template="alerts/email/paused",
            context=context,
            headers={"Message-ID": f"<alerts-paused-{user.pk}-{stamp}@{_message_domain()}>"},
        )


def _email(
    *, user: User, subject: str, template: str, context: dict[str, Any], headers: dict[str, str]
) -> EmailMultiAlternatives:
    """An e-mail of the alerts to `user` in the active language, from `template`'s text and
    HTML parts; every header one line without control characters."""
    language = translation.get_language() or settings.LANGUAGE_CODE
    headers = headers | {"Auto-Submitted": "auto-generated", "Content-Language": language}
    message = _AlertEmail(
        subject=one_line(subject)[:200],
        body=render_to_string(f"{template}.txt", context),
        from_email=one_line(settings.DEFAULT_FROM_EMAIL),
        to=[one_line(user.email)],
        headers={name: one_line(value) for name, value in headers.items()},
    )
    message.attach_alternative(render_to_string(f"{template}.html", context), "text/html")
    return message


class _AlertEmail(EmailMultiAlternatives):
    """Header lines up to RFC 5322's 998 characters, so that `List-Unsubscribe` keeps its
    URL as it is: with the usual 78, Python's e-mail package writes an unbreakable
    long value as RFC 2047 encoded-words, which mail providers do not read as a URL
    (and so offer no unsubscribe button)."""

    def message(self, *, policy: Any = email.policy.default) -> Any:
        return super().message(policy=(policy or email.policy.default).clone(max_line_length=998))


def message_id(alerts: Sequence[Alert]) -> str:
    """The same Message-ID whenever these alerts are sent: a repeat is recognisable."""
    ids = sorted(str(alert.public_id) for alert in alerts)
    name = ids[0] if len(ids) == 1 else str(uuid.uuid5(uuid.NAMESPACE_URL, ",".join(ids)))
    return f"<alert-{name}@{_message_domain()}>"


def _message_domain() -> str:
    return urlsplit(settings.PORTAL_BASE_URL).hostname or "localhost"


def absolute_url(path: str) -> str:
    return settings.PORTAL_BASE_URL.rstrip("/") + path


class UnsubscribeLinkRefused(Exception):
    """An unsubscribe link that does not unsubscribe anyone; `problem` says why."""

    INVALID = "invalid"  # not signed by this portal, or its user is gone or deactivated
    EXPIRED = "expired"  # older than ALERTS_UNSUBSCRIBE_DAYS
    STALE = "stale"  # sent to an address the user no longer has

    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem


def unsubscribe_token(user: User) -> str:
    """A signed, dated token naming `user` and the address it is sent to.

    The address is in it as a short keyed digest, never in clear: the link is
    in every e-mail, and e-mails are forwarded.
    """
    return signing.dumps(
        {"user": user.pk, "to": _address_digest(user.email, settings.SECRET_KEY)},
        salt=_UNSUBSCRIBE_SALT,
    )


def unsubscribe_user_find(*, token: str) -> User:
    """The user an unsubscribe link was sent to; `UnsubscribeLinkRefused` when the link was
    not signed here, is older than ALERTS_UNSUBSCRIBE_DAYS, or was sent to an address
    the user no longer has (changing the address ends the old links)."""
    try:
        value = signing.loads(
            token,
            salt=_UNSUBSCRIBE_SALT,
            max_age=timedelta(days=settings.ALERTS_UNSUBSCRIBE_DAYS),
        )
    except signing.SignatureExpired:
        raise UnsubscribeLinkRefused(UnsubscribeLinkRefused.EXPIRED) from None
    except signing.BadSignature:
        raise UnsubscribeLinkRefused(UnsubscribeLinkRefused.INVALID) from None
    user_id = value.get("user") if isinstance(value, dict) else None
    sent_to = value.get("to") if isinstance(value, dict) else None
    user = (
        User.objects.filter(pk=user_id, is_active=True).first()
        if isinstance(user_id, int)
        else None
    )
    if user is None:
        raise UnsubscribeLinkRefused(UnsubscribeLinkRefused.INVALID)
    secrets = [settings.SECRET_KEY, *settings.SECRET_KEY_FALLBACKS]
    if not isinstance(sent_to, str) or not any(
        constant_time_compare(sent_to, _address_digest(user.email, secret)) for secret in secrets
    ):
        raise UnsubscribeLinkRefused(UnsubscribeLinkRefused.STALE)
    return user


def masked_address(address: str) -> str:
    """`address` as a page may show it to whoever holds a link: `m•••@example.com`.

    The local part keeps its first character only when at least two more are hidden
    (`ab@…` and `a@…` become `•••@…`); the bullets are always three, so that they do
    not tell the length either. The domain is shown.
    """
    local, at, domain = address.rpartition("@")
    if not at:
        local, domain = address, ""
    shown = local[0] if len(local) >= 3 else ""
    return f"{shown}•••{at}{domain}"


def _address_digest(address: str, secret: str | bytes) -> str:
    """A short keyed digest of the normalised address (case and surrounding spaces aside)."""
    normalised = address.strip().casefold()
    return salted_hmac(
        _UNSUBSCRIBE_SALT, normalised, secret=secret, algorithm="sha256"
    ).hexdigest()[:16]


def _item(alert: Alert) -> Item:
    # The event's texts are the payload's, and may hold any character.
    data = {key: one_line(v) if isinstance(v, str) else v for key, v in alert.data.items()}
    headings = {
        AlertEvent.NEW_FINE: _("New fine"),
        AlertEvent.FINE_DOCUMENT: _("Official document available"),
        AlertEvent.FINE_TREATED: _("Fine treated"),
        AlertEvent.NEW_NOTIFICATION: _("New notification"),
        AlertEvent.INDICATION_DUE: _("Indicate the driver"),
        AlertEvent.INDICATION_MISSED: _("Indication deadline missed"),
    }
    fields: list[tuple[str, str]] = _reminder_fields(alert.event, data.get("days_left"))
    if data.get("record") == "fine":
        title = data.get("description") or data.get("reference") or data.get("external_id") or ""
        if data.get("reference"):
            fields.append((_("Notice"), data["reference"]))
        # The fine's columns as `event_data` wrote them (or the text as sent), read back.
        if occurred := data.get("occurred_at"):
            shown = formatting.moment(parse_moment(occurred), sent=occurred)
            fields.append((_("Committed on"), shown))
        if amount := data.get("amount"):
            fields.append((_("Amount"), formatting.amount(parse_amount(amount), sent=amount)))
        fields += _infraction_fields(data.get("infraction"))
        fields += _indication_fields(data.get("indication"))
        if told := _driver_told(data.get("driver")):
            fields.append((_("Driver"), told))
        fields.append(
            (
                _("Official document"),
                _("available in the portal")
                if data.get("document_available")
                else _("not yet available from the issuing authority"),
            )
        )
    else:
        title = data.get("title") or data.get("external_id") or ""
        if data.get("message"):
            fields.append((_("Message"), data["message"]))
    fields.append((_("Handling"), _("Treated") if data.get("treated") else _("Untreated")))
    return Item(
        heading=headings.get(AlertEvent(alert.event), alert.event),
        plate=data.get("plate", ""),
        title=str(title),
        fields=fields,
        url=absolute_url(data.get("path", "/")),
    )


def _reminder_fields(event: str, days_left: Any) -> list[tuple[str, str]]:
    """What a reminder of an indication deadline says first: the days left, or that it
    passed and the second fine (NIC, twice this one) is to be expected."""
    if not isinstance(days_left, int):
        return []
    if event == AlertEvent.INDICATION_MISSED:
        told = _(
            "The deadline passed with no indication recorded: expect a second fine (NIC) "
            "of twice this one. If the notice gives a later deadline, type it on the "
            "fine's page."
        )
        return [(_("Deadline"), told)]
    if event != AlertEvent.INDICATION_DUE:
        return []
    if days_left == 0:
        return [(_("Deadline"), _("today"))]
    left = ngettext("%(days)d day left", "%(days)d days left", days_left) % {"days": days_left}
    return [(_("Deadline"), left)]


def _infraction_fields(told: Any) -> list[tuple[str, str]]:
    """The infraction's facts `event_data` wrote (`_infraction_told`), those sent only."""
    if not isinstance(told, dict):
        return []
    sent = {key: str(value) for key, value in told.items() if value not in (None, "")}
    facts = FineFacts(
        code=sent.get("code", ""),
        severity=sent.get("severity", ""),
        city=sent.get("city", ""),
        state=sent.get("state", ""),
        authority=sent.get("authority", ""),
    )
    fields = [
        (_("Infraction code"), facts.code),
        (_("Severity"), str(facts.severity_shown)),
        (_("Points on the licence"), sent.get("points", "")),
        (_("Place"), facts.place),
        (_("Issuing authority"), facts.authority),
    ]
    return [(label, value) for label, value in fields if value]


def _indication_fields(told: Any) -> list[tuple[str, str]]:
    """The deadlines `event_data` wrote (`_indication_told`), each with how it is known."""
    if not isinstance(told, dict):
        return []
    known = dict(DeadlineBasis.choices)
    fields: list[tuple[str, str]] = []
    if told.get("state") == Indication.NOT_NEEDED:
        fields.append((_("Driver indication"), _("No indication needed")))
    elif told.get("state") in (Indication.NEEDED, MISSED) and (due := _iso_day(told.get("due"))):
        basis = known.get(told.get("due_basis") or "", "")
        fields.append((_("Indicate the driver by"), f"{_day_shown(due)} ({basis})"))
    if due := _iso_day(told.get("payment_due")):
        basis = known.get(told.get("payment_due_basis") or "", "")
        fields.append((_("Payment due"), f"{_day_shown(due)} ({basis})"))
    return fields


def _iso_day(value: Any) -> date | None:
    try:
        return date.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        return None


def _day_shown(day: date) -> str:
    return date_format(day, "SHORT_DATE_FORMAT")


def _driver_told(driver: Any) -> str:
    """The fine's driver as `event_data` wrote it (`fine_drivers_told`), in a line: who,
    and how it is known; "" while not attributed yet."""
    if not isinstance(driver, dict):
        return ""

    def who(one: Any) -> str:
        if not isinstance(one, dict) or one.get("id") is None:
            return _("nobody (the vehicle left the list)")
        name = one_line(str(one.get("name") or ""))
        return f"{name} ({one['id']})" if name else str(one["id"])

    basis = driver.get("basis") or ""
    candidates = driver.get("candidates") or []
    mark, meaning = (
        BASIS_MARKS.get(DriverBasis(basis), ("", "")) if basis in DriverBasis.values else ("", "")
    )
    if basis == DriverBasis.UNCERTAIN and len(candidates) == 2:
        return _("%(mark)s: %(first)s or %(second)s. %(meaning)s") % {
            "mark": str(mark).capitalize(),
            "first": who(candidates[0]),
            "second": who(candidates[1]),
            "meaning": meaning,
        }
    if driver.get("id") is None:
        return _("not known: the vehicle had no driver in the vehicle list") if basis else ""
    return f"{who(driver)} — {mark}: {meaning}" if mark else who(driver)
