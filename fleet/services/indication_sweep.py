"""The worker's daily look at the deadlines to indicate a fine's driver: the fines still to
indicate whose deadline is near, or passed in the last days (missed: by the clock, a fine
still `NEEDED` after its day; nothing is written to the fine), found for the reminders
(`alerts.services.reminders`).

At ten million fines the deadlines are read through the partial index of the fines
still to indicate (`fleet_fine_to_indicate`: untreated, by deadline), `CHUNK` fines a
query, a keyset on that index, never in a long transaction.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date
from typing import Final

from django.db.models import Q, QuerySet

from fleet.models import Fine, Indication

# Fines one read of the reminders takes.
CHUNK: Final = 1000


def after_deadline(due: date, pk: int) -> Q:
    """The fines after (`due`, `pk`) in the order of the index: a keyset."""
    return Q(indication_due__gt=due) | Q(indication_due=due, pk__gt=pk)


def fines_due_from_to(first: date, last: date) -> QuerySet[Fine]:
    """The untreated fines still to indicate whose deadline is from `first` to `last`, in
    the order of the index that finds them."""
    return Fine.objects.filter(
        indication=Indication.NEEDED,
        treated=False,
        indication_due__gte=first,
        indication_due__lte=last,
    ).order_by("indication_due", "pk")


def fines_due_between(first: date, last: date) -> Iterator[list[Fine]]:
    """The untreated fines still to indicate whose deadline is from `first` to `last`
    (both included; missed ones too), by deadline, `CHUNK` at a time, each chunk read in
    a query of its own (a keyset on the index), never in a long transaction."""
    fines = fines_due_from_to(first, last)
    after: tuple[date, int] | None = None
    while True:
        page = fines
        if after is not None:
            page = fines.filter(after_deadline(*after))
        found = list(page[:CHUNK])
        if not found:
            return
        yield found
        last_fine = found[-1]
        assert last_fine.indication_due is not None
        after = (last_fine.indication_due, last_fine.pk)
