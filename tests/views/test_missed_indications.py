"""A fine whose deadline to indicate its driver passes without one is "missed", by the
clock (the worker's daily run): the NIC to expect is shown on its page, its list row and
the dashboard, counted in the tallies; it stays first in the queue, may still be
indicated (late, said so), and a later deadline typed from the notice reopens it."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import User

from fleet.models import Fine, FineIndicationChange, Indication
from fleet.services.indication_sweep import indications_mark_missed
from fleet.services.tallies import fine_tallies_differences
from tests.views.test_dashboard_indications import figure
from tests.views.test_fine_deadlines import ENGLISH, clock, send

__all__ = ["clock"]  # the fixture

pytestmark = pytest.mark.django_db


def test_the_deadline_passes_and_the_fine_is_missed_with_its_nic_shown_and_counted(
    client, indicating_client, clock
):
    late = send(client, 1, amount="100.00", indicationDeadline="2026-12-02")
    later = send(client, 2, amount="200.00", indicationDeadline="2026-12-20")
    assert indications_mark_missed() == 0  # 01/12: neither has passed

    clock.shift(timedelta(days=2))  # 03/12: the 2nd has passed
    assert indications_mark_missed() == 1
    assert indications_mark_missed() == 0  # once

    late.refresh_from_db()
    later.refresh_from_db()
    assert (late.indication, later.indication) == (Indication.MISSED, Indication.NEEDED)
    change = FineIndicationChange.objects.get(fine=late)
    assert (change.before, change.after, change.user) == ("needed", "missed", None)
    page = indicating_client.get(late.get_absolute_url(), headers=ENGLISH).text
    assert "Deadline missed: expect the NIC" in page
    assert "expect a second fine (NIC) of about R$" in page
    assert "the portal: the deadline passed" in page
    assert "missed 1 day ago: expect the NIC" in page
    assert 'data-testid="late"' in page  # it may still be indicated, late
    listed = indicating_client.get("/fines/", headers=ENGLISH).text
    assert "Indication deadline missed (02/12/2026): expect the NIC" in listed
    queue = indicating_client.get("/fines/indications/", headers=ENGLISH).text
    assert queue.index('data-key="1"') < queue.index('data-key="2"')  # missed first
    dashboard = indicating_client.get("/", headers=ENGLISH).text
    assert figure(dashboard, "to-indicate-overdue") == "1"
    assert figure(dashboard, "nic-expected") == "NICs to expect: R$&nbsp;200.00"
    assert figure(dashboard, "at-risk") == "R$&nbsp;600.00"  # twice 100 + 200
    assert fine_tallies_differences() == {}


def test_a_later_deadline_typed_from_the_notice_reopens_a_missed_fine(
    client, indicating_client, clock
):
    fine = send(client, 1, amount="100.00")  # estimated: received 01/12 + 30 days
    clock.shift(timedelta(days=31))
    assert indications_mark_missed() == 1
    indicating_client.force_login(User.objects.get(username="marcos"))  # a month later
    fine.refresh_from_db()
    assert fine.indication == Indication.MISSED

    response = indicating_client.post(
        f"/fines/{fine.pk}/deadline",
        {
            "field": "indication_due",
            "day": "2027-01-10",
            "seen": "2026-12-31:estimated",
            "reason": "A notificação recebida em 02/01",
        },
    )

    assert response.status_code == 302
    fine.refresh_from_db()
    assert (fine.indication, fine.indication_due_basis) == (Indication.NEEDED, "typed")
    assert fine_tallies_differences() == {}


def test_a_missed_fine_may_still_be_indicated_and_leaves_the_queue(
    client, indicating_client, clock
):
    fine = send(client, 1, amount="100.00", indicationDeadline="2026-12-02")
    clock.shift(timedelta(days=2))
    indications_mark_missed()

    response = indicating_client.post(
        f"/fines/{fine.pk}/indicate",
        {"driver": "", "channel": "post", "on": "2026-12-02", "seen": "missed:assumed"},
    )
    assert response.status_code == 400  # no driver: the form says so, nothing changes
    assert Fine.objects.get(pk=fine.pk).indication == Indication.MISSED


def test_a_treated_fine_or_one_indicated_is_never_missed(client, indicating_client, clock):
    send(client, 1, indicationDeadline="2026-12-02", treated=True)
    send(client, 2, indicationDeadline="2026-12-02", indicationRequired=False)
    clock.shift(timedelta(days=5))

    assert indications_mark_missed() == 0


def test_the_run_goes_a_chunk_at_a_time_past_the_fines_it_marked(client, clock):
    for number in range(1, 8):
        send(client, number, indicationDeadline=f"2026-12-0{2 + number % 3}")
    send(client, 8, indicationDeadline="2026-12-20")
    clock.shift(timedelta(days=5))  # 06/12: seven have passed

    assert indications_mark_missed(chunk_size=2) == 7

    missed = Fine.objects.filter(indication=Indication.MISSED).count()
    assert (missed, FineIndicationChange.objects.count()) == (7, 7)
    assert fine_tallies_differences() == {}
