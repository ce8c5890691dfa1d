"""A fine whose deadline to indicate its driver passes without one is "missed", by the
clock alone (nothing is written to the fine): the NIC to expect is shown on its page, its
list row and the dashboard, counted in the tallies; it stays first in the queue, may
still be indicated (late, said so), and a later deadline typed from the notice ends it.
Fines marked missed before it was the clock's (migration 0034) become "needed" again."""

from __future__ import annotations

import importlib
from datetime import timedelta

import pytest
from django.apps import apps
from django.contrib.auth.models import User

from fleet.models import Fine, FineIndicationChange, Indication
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
    listed = indicating_client.get("/fines/", headers=ENGLISH).text  # 01/12: none passed
    assert "Indicate the driver by 02/12/2026" in listed
    assert "Indication deadline missed" not in listed
    assert not late.indication_missed

    clock.shift(timedelta(days=2))  # 03/12: the 2nd has passed

    late.refresh_from_db()
    later.refresh_from_db()
    assert (late.indication_missed, later.indication_missed) == (True, False)
    assert (late.indication, later.indication) == (Indication.NEEDED, Indication.NEEDED)
    assert not FineIndicationChange.objects.exists()  # the clock's: nothing written
    page = indicating_client.get(late.get_absolute_url(), headers=ENGLISH).text
    assert "Deadline missed: expect the NIC" in page
    assert "expect a second fine (NIC) of about R$" in page
    assert "missed 1 day ago: expect the NIC" in page
    assert 'data-testid="late"' in page  # it may still be indicated, late
    listed = indicating_client.get("/fines/", headers=ENGLISH).text
    assert "Indication deadline missed (02/12/2026): expect the NIC" in listed
    queue = indicating_client.get("/fines/indications/", headers=ENGLISH).text
    assert queue.index('data-key="1"') < queue.index('data-key="2"')  # missed first
    assert "missed 1 day ago: expect the NIC" in queue
    dashboard = indicating_client.get("/", headers=ENGLISH).text
    assert figure(dashboard, "to-indicate-overdue") == "1"
    assert figure(dashboard, "nic-expected") == "NICs to expect: R$&nbsp;200.00"
    assert figure(dashboard, "at-risk") == "R$&nbsp;600.00"  # twice 100 + 200
    assert fine_tallies_differences() == {}


def test_the_rows_kept_before_midnight_are_the_new_days_after_it(client, indicating_client, clock):
    send(client, 1, indicationDeadline="2026-12-01")
    clock.shift(timedelta(hours=14, minutes=55))  # 23:55 in São Paulo, the deadline's day
    listed = indicating_client.get("/fines/", headers=ENGLISH).text
    queue = indicating_client.get("/fines/indications/", headers=ENGLISH).text
    assert "Indicate the driver by 01/12/2026" in listed
    assert '<span class="badge badge--error" data-testid="days-left">today</span>' in queue

    clock.shift(timedelta(minutes=10))  # 00:05: the rows kept 10 minutes ago are stale

    listed = indicating_client.get("/fines/", headers=ENGLISH).text
    queue = indicating_client.get("/fines/indications/", headers=ENGLISH).text
    assert "Indication deadline missed (01/12/2026): expect the NIC" in listed
    assert "missed 1 day ago: expect the NIC" in queue


def test_a_later_deadline_typed_from_the_notice_ends_a_missed_one(client, indicating_client, clock):
    fine = send(client, 1, amount="100.00")  # estimated: received 01/12 + 30 days
    clock.shift(timedelta(days=31))
    indicating_client.force_login(User.objects.get(username="marcos"))  # a month later
    fine.refresh_from_db()
    assert fine.indication_missed

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
    assert not fine.indication_missed
    page = indicating_client.get(fine.get_absolute_url(), headers=ENGLISH).text
    assert "Deadline missed" not in page
    assert "9 days left" in page
    assert fine_tallies_differences() == {}


def test_a_missed_fine_may_still_be_indicated(client, indicating_client, clock):
    fine = send(client, 1, amount="100.00", indicationDeadline="2026-12-02")
    clock.shift(timedelta(days=2))

    response = indicating_client.post(
        f"/fines/{fine.pk}/indicate",
        {"driver": "", "channel": "post", "on": "2026-12-02", "seen": "needed:assumed"},
        headers=ENGLISH,
    )
    assert response.status_code == 400  # no driver: the form says so, nothing changes
    assert "Its deadline has passed" in response.text
    assert Fine.objects.get(pk=fine.pk).indication_missed


def test_a_treated_fine_or_one_needing_no_indication_is_never_missed(
    client, indicating_client, clock
):
    send(client, 1, indicationDeadline="2026-12-02", treated=True)
    needless = send(client, 2, indicationDeadline="2026-12-02", indicationRequired=False)
    clock.shift(timedelta(days=5))

    assert not needless.indication_missed
    queue = indicating_client.get("/fines/indications/", headers=ENGLISH)
    assert 'data-testid="queue-empty"' in queue.text
    dashboard = indicating_client.get("/", headers=ENGLISH).text
    assert figure(dashboard, "to-indicate-overdue") == "0"


def test_the_fines_marked_missed_before_become_needed_again(client, clock):
    fines = [send(client, number, indicationDeadline="2026-11-20") for number in (1, 2, 3)]
    Fine.objects.filter(pk__in=[fines[0].pk, fines[2].pk]).update(indication="missed")
    Fine.objects.filter(pk=fines[1].pk).update(indication=Indication.INDICATED)
    migration = importlib.import_module("fleet.migrations.0034_missed_by_the_clock")

    migration.missed_to_needed(apps, None)

    states = dict(Fine.objects.values_list("external_id", "indication"))
    assert states == {"1": "needed", "2": "indicated", "3": "needed"}
    assert Fine.objects.get(external_id="1").indication_missed
