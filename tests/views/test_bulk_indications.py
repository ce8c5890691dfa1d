"""Indicating the drivers of several fines at once from the queue: the fines ticked, a
review page with each fine's driver filled in from the attribution (a guess said so),
then each recorded on its own (audited); a driver left out or unknown refuses the whole
page, nothing recorded; a fine changed meanwhile is named and the others recorded; a
fine the user does not see makes it not found, and without the permission it is refused."""

from __future__ import annotations

import pytest

from fleet.models import Driver, DriverIndication, Fine, FineIndicationChange, Indication
from fleet.services.tallies import fine_tallies_differences, fine_tallies_rebuild
from tests.scopes import grant_whole_fleet
from tests.views.test_fine_deadlines import ENGLISH, clock, send

__all__ = ["clock"]  # the fixture

pytestmark = pytest.mark.django_db


def three_fines(client) -> list[Fine]:
    Driver.objects.create(driver_id=7001, name="Ana Souza")
    Driver.objects.create(driver_id=7002, name="Bruno Lima")
    fines = [send(client, number, indicationDeadline=f"2026-12-1{number}") for number in (1, 2, 3)]
    Fine.objects.filter(pk=fines[0].pk).update(driver_id=7001, driver_basis="list")
    Fine.objects.filter(pk=fines[1].pk).update(driver_id=7002, driver_basis="history")
    fine_tallies_rebuild()
    return [Fine.objects.get(pk=fine.pk) for fine in fines]


def ticked(*fines: Fine) -> dict[str, list[str]]:
    return {"fine": [str(fine.pk) for fine in fines]}


def test_the_queues_ticked_fines_are_reviewed_then_each_recorded(client, indicating_client, clock):
    first, second, third = three_fines(client)
    queue = indicating_client.get("/fines/indications/", headers=ENGLISH).text
    assert 'data-testid="queue-indicate"' in queue

    review = indicating_client.post(
        "/fines/indications/indicate", ticked(first, second, third), headers=ENGLISH
    )

    assert review.status_code == 200
    page = review.text
    assert page.count('data-testid="bulk-row"') == 3
    assert 'value="Ana Souza (7001)"' in page
    assert 'value="Bruno Lima (7002)"' in page
    assert page.count(">probable<") == 1  # the vehicle list's guess, said so
    assert not DriverIndication.objects.exists()  # nothing until confirmed

    form = ticked(first, second, third) | {
        "confirm": "1",
        "channel": "post",
        "on": "2026-12-01",
        f"driver-{first.pk}": "Ana Souza (7001)",
        f"driver-{second.pk}": "7002",
        f"driver-{third.pk}": "Bruno",
        f"seen-{first.pk}": "needed:assumed",
        f"seen-{second.pk}": "needed:assumed",
        f"seen-{third.pk}": "needed:assumed",
    }
    done = indicating_client.post("/fines/indications/indicate", form, headers=ENGLISH)

    assert done.status_code == 302
    assert sorted(DriverIndication.objects.values_list("driver_id", flat=True)) == [
        7001,
        7002,
        7002,
    ]
    assert set(Fine.objects.values_list("indication", flat=True)) == {Indication.INDICATED}
    assert FineIndicationChange.objects.filter(after="indicated").count() == 3
    after = indicating_client.get("/fines/indications/", headers=ENGLISH).text
    assert "3 indications recorded" in after
    assert 'data-testid="queue-empty"' in after
    assert fine_tallies_differences() == {}


def test_a_driver_missing_refuses_the_page_and_records_nothing(client, indicating_client, clock):
    first, second, _third = three_fines(client)
    form = ticked(first, second) | {
        "confirm": "1",
        "channel": "post",
        "on": "2026-12-01",
        f"driver-{first.pk}": "7001",
        f"driver-{second.pk}": "",
    }

    response = indicating_client.post("/fines/indications/indicate", form, headers=ENGLISH)

    assert response.status_code == 400
    assert "Choose who was driving." in response.text
    assert not DriverIndication.objects.exists()


def test_a_fine_changed_meanwhile_is_named_and_the_others_recorded(
    client, indicating_client, clock
):
    first, second, _third = three_fines(client)
    form = ticked(first, second) | {
        "confirm": "1",
        "channel": "authority",
        "on": "2026-12-01",
        f"driver-{first.pk}": "7001",
        f"driver-{second.pk}": "7002",
        f"seen-{first.pk}": "needed:assumed",
        f"seen-{second.pk}": "needed:assumed",
    }
    Fine.objects.filter(pk=second.pk).update(indication="not_needed", indication_basis="typed")
    fine_tallies_rebuild()

    response = indicating_client.post("/fines/indications/indicate", form, headers=ENGLISH)

    assert response.status_code == 302
    assert list(DriverIndication.objects.values_list("fine_id", flat=True)) == [first.pk]
    page = indicating_client.get("/fines/indications/", headers=ENGLISH).text
    assert "1 indication recorded" in page
    assert (
        f"Changed meanwhile, not recorded (see each fine&#x27;s page): {second.reference}" in page
    )


def test_without_the_permission_it_is_refused_and_the_button_is_not_shown(
    client, django_user_model, clock
):
    fines = three_fines(client)
    user = django_user_model.objects.create_user("leo", password="pw-123456")
    grant_whole_fleet(user)
    client.force_login(user)

    assert 'data-testid="queue-indicate"' not in client.get("/fines/indications/").text
    response = client.post("/fines/indications/indicate", ticked(*fines))

    assert response.status_code == 403
