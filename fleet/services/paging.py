"""Pages of lists of millions of records: counted no further than `COUNTED`, and a page
deep in the list read from the index that orders it."""

from __future__ import annotations

from collections.abc import Iterator
from functools import cached_property
from typing import Any, cast

from django.core.paginator import Page, Paginator
from django.db import connections, transaction
from django.db.models import QuerySet

from fleet.services.dashboard import COUNTED

# Rows an export reads from the database at a time.
EXPORT_CHUNK = 500


def streamed[T](records: QuerySet[Any, T]) -> Iterator[T]:
    """Every one of `records`, read `EXPORT_CHUNK` at a time as the database finds them.

    On PostgreSQL inside one transaction: a cursor declared outside one is held past its
    commit (WITH HOLD), which reads and keeps the whole answer before its first row —
    ten million fines sorted, minutes, while the download waits and the database works
    on after it is given up. A read there takes no lock a writer waits for. On SQLite
    outside any: the portal's transactions begin IMMEDIATE (settings), so one would hold
    the write lock for the export's length and stop the receiver and the worker; a read
    in WAL mode holds off no writer."""
    if connections[records.db].vendor != "postgresql":
        yield from records.iterator(EXPORT_CHUNK)
        return
    with transaction.atomic(using=records.db):
        yield from records.iterator(EXPORT_CHUNK)


class CappedPaginator(Paginator[Any]):
    """Django's paginator, counting no further than `COUNTED` records (`capped` says it
    stopped there): the count of a filter that selects millions reads ten thousand.

    A page after the first is read in two steps: the ids of its records, skipping those
    before it in the index that orders them (the index alone, not the rows), then
    those records by id. A page deep in the list reads fifty rows, not ten thousand."""

    capped = False

    def __init__(
        self,
        object_list: QuerySet[Any],
        per_page: int,
        *args: Any,
        counted: QuerySet[Any] | None = None,
        known: int | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(object_list, per_page, *args, **kwargs)
        # What is counted, if not the list itself: the same records, selected through
        # their indexes where the list walks its order's (`fleet.services.list_walks`).
        self.counted = counted
        # How many there are, when the dashboard's tallies say (nothing to count then).
        self.known = known

    @cached_property
    def count(self) -> int:
        if self.known is not None:
            self.capped = self.known > COUNTED
            return min(self.known, COUNTED)
        records = cast(QuerySet[Any], self.object_list if self.counted is None else self.counted)
        # Unordered: any index that selects them will do, read up to the cap.
        found: int = records.order_by()[: COUNTED + 1].count()
        self.capped = found > COUNTED
        return min(found, COUNTED)

    def page(self, number: int | str) -> Page[Any]:
        number = self.validate_number(number)
        bottom = (number - 1) * self.per_page
        if bottom == 0:
            return super().page(number)
        top = bottom + self.per_page
        if top + self.orphans >= self.count:
            top = self.count
        records = cast(QuerySet[Any], self.object_list)
        ids = list(records.values_list("pk", flat=True)[bottom:top])
        found = {record.pk: record for record in records.filter(pk__in=ids)}
        return Page([found[pk] for pk in ids if pk in found], number, self)
