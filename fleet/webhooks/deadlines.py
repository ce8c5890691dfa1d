"""A fine's deadlines and whether its driver is to be indicated, from its payload: the
columns `Fine.indication`, `indication_due` and `payment_due`, each with how it is known
(`fleet.models.indications`).

What the platform says wins over the portal's estimate, and a person's entry (typed from
the paper notice, `fleet.services.indications`) over both: a later event of the same fine
never undoes it. None of these members is in the spec; their names are those the
emulator's full mode sends (its README):

- `indicationRequired` (boolean): whether the infraction is the driver's conduct (CTB art.
  257 §3), whose driver the owner indicates; not sent, the fine needs one (the safe
  default: a needless indication costs a form, a missed one a second fine of twice the
  first), said to be assumed;
- `indicationDeadline` (a day): the deadline printed on the notice; not sent, estimated as
  the notice's day (`noticeDate`), else the day the portal received the fine, plus
  `FLEET_INDICATION_DAYS` (30: art. 257 §7 counts from the notice);
- `paymentDueDate` (a day): the slip's due date; not sent, unknown (no estimate: the
  portal does not know when the authority will issue the penalty).

Days are read by `fleet.api.values.parse_day` (ISO, or as a Brazilian writes them); a
value it cannot read, or a day outside `PLAUSIBLE`, counts as not sent.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING, Any, Final

from django.conf import settings
from django.utils import timezone

from fleet.api.values import parse_day
from fleet.models.indications import DeadlineBasis, Indication, NeedBasis

if TYPE_CHECKING:
    from fleet.models import Fine

# Days a sent deadline may be: a value outside these is a wrong one, not a deadline.
PLAUSIBLE: Final = (date(2000, 1, 1), date(2100, 1, 1))
# The states a payload's flag may set; later ones (a person's work) it never changes.
_FROM_PAYLOAD: Final = (None, Indication.NEEDED, Indication.NOT_NEEDED)


@dataclass(frozen=True, slots=True)
class NoticeSays:
    """What a fine's payload says of its notice: None for what it does not say."""

    notice: date | None = None
    indication_deadline: date | None = None
    payment_due: date | None = None
    required: bool | None = None


def notice_says(payload: object) -> NoticeSays:
    """The notice's days and flag `payload` (a fine's event object) carries."""
    if not isinstance(payload, dict):
        return NoticeSays()
    required = payload.get("indicationRequired")
    return NoticeSays(
        notice=_day(payload.get("noticeDate")),
        indication_deadline=_day(payload.get("indicationDeadline")),
        payment_due=_day(payload.get("paymentDueDate")),
        required=required if isinstance(required, bool) else None,
    )


def indication_days() -> int:
    return int(settings.FLEET_INDICATION_DAYS)


def estimated_indication_due(notice: date | None, received: datetime) -> date:
    """The deadline the portal estimates: the notice's day, else the day the fine was
    received (in the portal's time zone), plus `FLEET_INDICATION_DAYS`."""
    start = notice if notice is not None else timezone.localdate(received)
    return start + timedelta(days=indication_days())


def deadline_columns(payload: object, *, received: datetime, fine: Fine | None) -> dict[str, Any]:
    """The columns `payload` sets on `fine` (None: a fine being created, received at
    `received`): only those it may change, as the module's docstring says."""
    said = notice_says(payload)
    columns: dict[str, Any] = {}
    need_basis = fine.indication_basis if fine is not None else None
    if need_basis != NeedBasis.TYPED and (fine is None or fine.indication in _FROM_PAYLOAD):
        if said.required is not None:
            state = Indication.NEEDED if said.required else Indication.NOT_NEEDED
            columns |= {"indication": state, "indication_basis": NeedBasis.SENT}
        elif need_basis != NeedBasis.SENT:  # a later event that omits the flag keeps it
            columns |= {"indication": Indication.NEEDED, "indication_basis": NeedBasis.ASSUMED}
    due_basis = fine.indication_due_basis if fine is not None else None
    if said.indication_deadline is not None and due_basis != DeadlineBasis.TYPED:
        columns |= {
            "indication_due": said.indication_deadline,
            "indication_due_basis": DeadlineBasis.SENT,
        }
    elif due_basis in (None, DeadlineBasis.ESTIMATED):
        columns |= {
            "indication_due": estimated_indication_due(said.notice, received),
            "indication_due_basis": DeadlineBasis.ESTIMATED,
        }
    payment_basis = fine.payment_due_basis if fine is not None else None
    if said.payment_due is not None and payment_basis != DeadlineBasis.TYPED:
        columns |= {"payment_due": said.payment_due, "payment_due_basis": DeadlineBasis.SENT}
    return columns


def _day(value: Any) -> date | None:
    day = parse_day(value) if isinstance(value, str) else None
    return day if day is not None and PLAUSIBLE[0] <= day < PLAUSIBLE[1] else None
