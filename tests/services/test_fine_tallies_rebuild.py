"""`fine_tallies --rebuild` at any size: it counts in a snapshot and corrects the tallies a
chunk at a time, so a writer of fines never waits for it (the worker would otherwise
wait as long as the count over every fine takes) and the tallies end exact."""

from __future__ import annotations

import threading
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest
from django.db import connection, connections

from fleet.models import Fine, FineTally, TallyDimension
from fleet.services.tallies import REBUILD_CHUNK, fine_tallies_rebuild
from fleet.webhooks.processing import deliveries_process_received
from tests.services.test_fine_tallies import assert_exact, deliver, fleet, frame, store

__all__ = ["fleet"]  # the fixture

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(300)]


class HeldAtFirstRead:
    """A database hook (`connection.execute_wrapper`) that holds its thread at the first
    query reading the fines, until `go` is set."""

    def __init__(self) -> None:
        self.reading = threading.Event()
        self.go = threading.Event()

    def __call__(self, execute: Callable[..., Any], sql: str, *args: Any) -> Any:
        if '"fleet_fine"' in sql and not self.reading.is_set():
            self.reading.set()
            assert self.go.wait(timeout=240), "the test never let the rebuild go on"
        return execute(sql, *args)


def written_while_counting[T](count: Callable[[], T]) -> T:
    """Run `count` in a thread held at its first read of the fines; meanwhile process the
    deliveries waiting, in another thread, which must not wait for it (a fine's processing
    takes milliseconds); then let it go on. What `count` returned."""
    hold = HeldAtFirstRead()
    counted: list[T] = []

    def counting() -> None:
        try:
            with connection.execute_wrapper(hold):
                counted.append(count())
        finally:
            connections.close_all()

    counter = threading.Thread(target=counting)
    counter.start()
    try:
        assert hold.reading.wait(timeout=120), "the count did not begin"
        written: list[Any] = []

        def write() -> None:
            try:
                written.append(deliveries_process_received())
            finally:
                connections.close_all()

        writer = threading.Thread(target=write)
        writer.start()
        writer.join(timeout=60)  # not held: a fine's processing takes milliseconds
        assert not writer.is_alive(), "the fine's writer waited for the count"
        assert written[0]["processed"] == 1
    finally:
        hold.go.set()
        counter.join(timeout=120)
    assert not counter.is_alive()
    assert counted, "the count failed"
    return counted[0]


def test_a_fine_written_while_the_rebuild_counts_waits_for_nothing_and_is_counted(client, fleet):
    deliver(client, frame(1, plate=fleet[0]["car_plate"]), frame(2, months_ago=2))
    Fine.objects.filter(external_id="1").update(amount=Decimal("7.00"))  # past the tallies
    store(client, frame(3, plate=fleet[1]["car_plate"], amount="55.10"))  # not processed yet

    written_while_counting(fine_tallies_rebuild)

    assert Fine.objects.count() == 3
    assert_exact()


def test_the_rebuild_corrects_in_transactions_of_a_chunk_of_tallies(client, fleet):
    """Each correction is a short transaction of `REBUILD_CHUNK` tallies at most (and the
    version counted up in each), however many tallies are off."""
    deliver(client, frame(1, plate=fleet[0]["car_plate"]))
    off = REBUILD_CHUNK * 2 + 7
    FineTally.objects.bulk_create(
        FineTally(dimension=TallyDimension.VEHICLE, key=f"ZZZ{n:04d}", count=1, cents=100)
        for n in range(off)
    )
    version = FineTally.objects.get(dimension=TallyDimension.VERSION).count

    fine_tallies_rebuild()

    assert FineTally.objects.get(dimension=TallyDimension.VERSION).count == version + 3
    assert not FineTally.objects.filter(key__startswith="ZZZ").exclude(count=0).exists()
    assert_exact()
