"""The worker's daily look at the deadlines: the fines whose deadline to indicate their
driver has passed without one become "missed" (`Indication.MISSED`: the NIC, twice the
fine, is to be expected), each change audited as the portal's (`FineIndicationChange`
with no user), and the fines still to indicate whose deadline is near are found for the
reminders (`alerts.services.reminders`).

At ten million fines the deadlines are read through the partial index of the fines
still to indicate (`fleet_fine_still_to_indicate`: untreated, by deadline), `CHUNK`
fines a short transaction, so that writers of fines never wait long on the run.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import date
from typing import Final

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from fleet.models import (
    STILL_TO_INDICATE,
    Fine,
    FineIndicationChange,
    Indication,
    IndicationField,
)
from fleet.services.dashboard import fine_figures_prepare
from fleet.services.tallies import FineState, fine_tallies_apply

logger = logging.getLogger(__name__)

# Fines one transaction marks, or one read of the reminders takes.
CHUNK: Final = 1000


def indications_mark_missed(*, today: date | None = None, chunk_size: int = CHUNK) -> int:
    """Mark missed the untreated fines still `NEEDED` whose indication deadline is before
    `today` (the portal's local day), `chunk_size` a transaction; how many."""
    today = today or timezone.localdate()
    marked = 0
    # The index's own condition (`indication IN ...`, which SQLite needs word for word to
    # use a partial index), then the state sought; each chunk after the last one's.
    due = Fine.objects.filter(
        indication__in=STILL_TO_INDICATE,
        treated=False,
        indication_due__lt=today,
    ).filter(indication=Indication.NEEDED)
    after: tuple[date, int] | None = None
    while True:
        with transaction.atomic():
            chunk = (due if after is None else due.filter(_after(*after))).order_by(
                "indication_due", "pk"
            )
            keys = list(chunk.values_list("indication_due", "pk")[:chunk_size])
            if not keys:
                break
            last_due, last_pk = keys[-1]
            assert last_due is not None  # before today
            after = (last_due, last_pk)
            ids = [pk for _due, pk in keys]
            fines = list(due.select_for_update().filter(pk__in=ids))
            changes = []
            for fine in fines:
                counted = FineState.of(fine)
                fine.indication = Indication.MISSED
                changes.append((counted, FineState.of(fine)))
            Fine.objects.bulk_update(fines, ["indication"])
            FineIndicationChange.objects.bulk_create(
                FineIndicationChange(
                    fine=fine,
                    user=None,
                    user_name="",  # the portal's, by the clock: the page says so
                    field=IndicationField.INDICATION,
                    before=Indication.NEEDED,
                    before_basis=fine.indication_basis or "",
                    after=Indication.MISSED,
                    reason="",
                )
                for fine in fines
            )
            fine_tallies_apply(changes)
        marked += len(fines)
    if marked:
        fine_figures_prepare()
        logger.info("%d fine(s) missed their indication deadline", marked)
    return marked


def _after(due: date, pk: int) -> Q:
    """The fines after (`due`, `pk`) in the order of the index: a keyset."""
    return Q(indication_due__gt=due) | Q(indication_due=due, pk__gt=pk)


def fines_due_between(first: date, last: date) -> Iterator[list[Fine]]:
    """The untreated fines still to indicate whose deadline is from `first` to `last`
    (both included; missed ones too), by deadline, `CHUNK` at a time, each chunk read in
    a query of its own (a keyset on the index), never in a long transaction."""
    fines = Fine.objects.filter(
        indication__in=STILL_TO_INDICATE,
        treated=False,
        indication_due__gte=first,
        indication_due__lte=last,
    ).order_by("indication_due", "pk")
    after: tuple[date, int] | None = None
    while True:
        page = fines
        if after is not None:
            page = fines.filter(_after(*after))
        found = list(page[:CHUNK])
        if not found:
            return
        yield found
        last_fine = found[-1]
        assert last_fine.indication_due is not None
        after = (last_fine.indication_due, last_fine.pk)
