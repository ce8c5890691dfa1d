"""Reading CNH lookups: who may open one, a user's history, and each CPF as its page shows it.

A lookup's items keep what the API answered (`fleet.services.cnh` stores it);
the licence is read from that answer each time a page shows it, and an item
without a result says why in words a person can act on.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Final
from uuid import UUID

from django.contrib.auth.models import User
from django.core.paginator import Page, Paginator
from django.db.models import Count, Q, QuerySet
from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from fleet.api.licences import CnhLicence, cnh_licence_from_json
from fleet.models import CnhItemStatus, CnhLookup, CnhReason
from fleet.services.cnh import MISSING, UNREADABLE
from fleet.services.cnh_recovery import INTERRUPTED
from fleet.services.scopes import scope_of, scope_people

HISTORY_PAGE_SIZE: Final = 20


class CnhLookupNotFound(Exception):
    """No such lookup, or not one this user may see (the two look the same)."""


def cnh_lookups_seen(*, user: User) -> QuerySet[CnhLookup]:
    """The lookups `user` may open: their own, and for staff those of the owners they
    administer (every owner for the whole fleet: `scope_people`)."""
    lookups = CnhLookup.objects.all()
    if user.is_staff:
        people = scope_people(scope_of(user), User.objects.all())
        return lookups.filter(Q(owner=user) | Q(owner__in=people))
    return lookups.filter(owner=user)


def cnh_lookup_get(*, user: User, public_id: UUID) -> CnhLookup:
    """The lookup, if `user` may open it (`cnh_lookups_seen`); `CnhLookupNotFound`
    otherwise."""
    lookups = cnh_lookups_seen(user=user).select_related("owner")
    try:
        return lookups.get(public_id=public_id)
    except CnhLookup.DoesNotExist:
        raise CnhLookupNotFound(public_id) from None


def cnh_lookup_history(*, user: User, page: int | str | None) -> Page[Any]:
    """The user's own lookups, newest first, a page at a time, with their counts."""
    lookups = (
        CnhLookup.objects.filter(owner=user)
        .annotate(
            item_count=Count("items"),
            found_count=Count("items", filter=Q(items__status=CnhItemStatus.OK)),
            error_count=Count("items", filter=Q(items__status=CnhItemStatus.ERROR)),
            unknown_count=Count("items", filter=Q(items__status=CnhItemStatus.UNKNOWN)),
        )
        .prefetch_related("items")
        .order_by("-created_at", "-pk")
    )
    return Paginator(lookups, HISTORY_PAGE_SIZE).get_page(page)


# What an item's error code means, in the user's words; other codes show the API's message.
_PROBLEMS: Final[dict[str, Promise]] = {
    "gateway-timeout": _("The licensing service did not answer in time."),
    "not-found": _("No driver licence was found for this CPF."),
    "bad-request": _("The fleet service refused this CPF."),
    MISSING: _("The fleet service's answer did not include this CPF."),
    **{reason.value: reason.label for reason in CnhReason},
    CnhReason.NO_ANSWER.value: _(
        "The fleet service did not answer: this CPF may have been looked up, and charged, "
        "without the result reaching the portal."
    ),
    UNREADABLE: _(
        "The fleet service answered, but its answer could not be read: this CPF was "
        "probably looked up, and charged, without the result reaching the portal."
    ),
    INTERRUPTED: _(
        "The lookup was interrupted while it was being sent: this CPF may have been "
        "looked up, and charged, without the result reaching the portal."
    ),
}
# Licence situations as the licensing service writes them (DETRAN's words).
_SITUATIONS: Final[dict[str, Promise]] = {
    "REGULAR": pgettext_lazy("CNH situation", "Regular"),
    "VENCIDA": pgettext_lazy("CNH situation", "Expired"),
    "SUSPENSA": pgettext_lazy("CNH situation", "Suspended"),
    "CASSADA": pgettext_lazy("CNH situation", "Revoked"),
}
# Remarks a licence carries, as codes (the licence card's "observações").
_REMARKS: Final[dict[str, Promise]] = {
    "EAR": _("Exerce atividade remunerada: the licence allows paid driving"),
}


def situation_label(raw: str) -> str:
    """A licence's situation, translated when it is one the portal knows."""
    known = _SITUATIONS.get(raw.upper())
    return str(known) if known else raw


def remark_label(code: str) -> str:
    """A licence's remark written out, when the portal knows its code."""
    known = _REMARKS.get(code.upper())
    return str(known) if known else code


@dataclass(frozen=True, slots=True)
class CnhItemRow:
    """One CPF of a lookup as its page shows it (its repr leaves the CPF out)."""

    position: int
    cpf: str = field(repr=False)
    status: str = ""
    licence: CnhLicence | None = None
    # Members the portal does not know, as (name, text), in the order received.
    extra: list[tuple[str, str]] = field(default_factory=list)
    error_code: str = ""
    error_message: str = ""

    @property
    def problem(self) -> str:
        """Why this CPF has no result, in words a person can act on."""
        if known := _PROBLEMS.get(self.error_code):
            return str(known)
        return self.error_message or self.error_code

    @property
    def situation(self) -> str:
        """The licence's situation, translated when it is one the portal knows."""
        raw = self.licence.situation if self.licence else None
        return situation_label(raw) if raw is not None else ""

    @property
    def remarks(self) -> list[str]:
        """The licence's remarks written out (EAR: paid driving allowed)."""
        codes = self.licence.remarks if self.licence else None
        return [remark_label(code) for code in codes or ()]


def cnh_lookup_rows(*, lookup: CnhLookup) -> list[CnhItemRow]:
    """The lookup's items with their licences read from what the API answered."""
    rows = []
    for item in lookup.items.order_by("position"):
        licence = None
        if item.status == CnhItemStatus.OK and isinstance(item.result, dict):
            licence = cnh_licence_from_json(item.result)
        rows.append(
            CnhItemRow(
                position=item.position,
                cpf=item.cpf,
                status=item.status,
                licence=licence,
                extra=[(name, _as_text(value)) for name, value in licence.extra.items()]
                if licence
                else [],
                error_code=item.error_code,
                error_message=item.error_message,
            )
        )
    return rows


def _as_text(value: Any) -> str:
    """An unknown member's value, readable: lists joined, objects as JSON."""
    if isinstance(value, list) and all(isinstance(v, str | int | float) for v in value):
        return ", ".join(str(v) for v in value) or "—"
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, bool):
        return "✓" if value else "✗"
    return str(value)
