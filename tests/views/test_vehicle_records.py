"""A vehicle's fines and notifications: the lists' plate filter and the vehicle page's
summary, matching a vehicle under its old plate and the Mercosul plate that replaced it."""

from __future__ import annotations

import json
import re

import pytest

from fleet import plates
from fleet.models import Fine
from fleet.webhooks.processing import deliveries_process_received

pytestmark = pytest.mark.django_db

WEBHOOK = "/webhooks/fleet/dev-webhook-token/"
ENGLISH = {"Accept-Language": "en"}
HTMX = {"HX-Request": "true"}
ROW = re.compile(r'<tr data-testid="(?:fine|notification)" data-key="([^"]*)"')


def deliver(client, *payloads) -> None:
    for payload in payloads:
        response = client.post(WEBHOOK, data=json.dumps(payload), content_type="application/json")
        assert response.status_code == 202, response.content
    deliveries_process_received()  # the worker's next run


def fine(id, plate, *, treated=False, amount=None):
    frame = {"id": id, "treated": treated, "carPlate": plate}
    if amount is not None:
        frame["amount"] = amount
    return {"frame": frame, "linkFrame": None}


def notification(id, plate, *, treated=False):
    return {"notification": {"id": id, "treated": treated, "carPlate": plate}}


def keys(response) -> list[str]:
    return ROW.findall(response if isinstance(response, str) else response.text)


def test_a_fine_knows_its_vehicle_in_the_mercosul_format(client):
    deliver(client, fine(1, "abc-1234"), fine(2, "ABC1D23"), fine(3, "not a plate"), fine(4, None))

    registrations = dict(Fine.objects.values_list("external_id", "registration"))

    assert registrations == {"1": "ABC1C34", "2": "ABC1D23", "3": "NOTAPLATE", "4": ""}


def test_an_update_that_corrects_the_plate_moves_the_fine_to_that_vehicle(client):
    deliver(client, fine(1, "ABC1234"))
    deliver(client, fine(1, "XYZ9J99", treated=True))

    assert Fine.objects.get().registration == "XYZ9J99"


def test_the_fines_of_a_vehicle_under_either_plate(manager_client, client):
    # ABC-1234 became ABC1C34 when the vehicle got its Mercosul plate.
    deliver(client, fine(1, "ABC-1234"), fine(2, "ABC1C34"), fine(3, "ABC1234"), fine(4, "DEF5678"))

    for typed in ("abc-1234", "ABC1C34", " abc 1c34 "):
        response = manager_client.get("/fines/", {"plate": typed}, headers=ENGLISH)
        assert response.status_code == 200
        assert sorted(keys(response)) == ["1", "2", "3"], typed
        assert "3 fines" in response.text


def test_the_plate_filter_combines_with_the_others_and_pages_keep_it(manager_client, client):
    deliver(client, *(fine(id, "ABC1C34", treated=id % 2 == 0) for id in range(1, 104)))
    deliver(client, fine(500, "DEF5678"))

    first = manager_client.get("/fines/", {"plate": "ABC-1234", "treated": "0"}, headers=ENGLISH)

    assert "52 fines" in first.text
    assert 'href="?treated=0&amp;plate=ABC1234&amp;page=2"' in first.text
    second = manager_client.get("/fines/", {"treated": "0", "plate": "ABC1234", "page": "2"})
    assert len(keys(second)) == 2


def test_a_malformed_plate_is_explained_and_the_list_left_unfiltered(manager_client, client):
    deliver(client, fine(1, "ABC1234"), fine(2, "DEF5678"))

    for headers in (ENGLISH, ENGLISH | HTMX):
        response = manager_client.get("/fines/", {"plate": "AB-12"}, headers=headers)
        assert response.status_code == 200
        assert "“AB-12” is not a plate: type it like ABC-1234 or ABC1D23." in response.text
        assert sorted(keys(response)) == ["1", "2"]


def test_no_fine_for_a_vehicle_offers_the_whole_list(manager_client, client):
    deliver(client, fine(1, "ABC1234"))

    response = manager_client.get("/fines/", {"plate": "DEF5678"}, headers=ENGLISH)

    assert "No fine matches these filters." in response.text
    assert 'href="/fines/"' in response.text


def test_the_notifications_of_a_vehicle_under_either_plate(manager_client, client):
    deliver(client, notification(1, "ABC1234"), notification(2, "abc1c34"), notification(3, "X"))

    response = manager_client.get("/notifications/", {"plate": "ABC1C34"}, headers=ENGLISH)

    assert sorted(keys(response)) == ["1", "2"]


def test_the_vehicle_page_sums_up_its_fines_and_notifications(manager_client, client, emulator):
    # A vehicle with an old plate (ABC1234): its fines may come under ABC1C34 as well.
    old = next(
        plate
        for plate in (plates.normalize(v["car_plate"]) for v in emulator.vehicles())
        if re.fullmatch(r"[A-Z]{3}[0-9]{4}", plate)
    )
    mercosul = f"{old[:4]}{chr(ord('A') + int(old[4]))}{old[5:]}"
    deliver(
        client,
        fine(1, f"{old[:3]}-{old[3:]}", amount="293.47"),
        fine(2, mercosul, treated=True, amount="130.16"),
        fine(3, mercosul, amount="1467.35"),
        notification(1, mercosul, treated=True),
        fine(4, "DEF5678", amount="88.38"),
    )

    page = manager_client.get(f"/vehicles/{old}/", headers=ENGLISH).text

    # The lists are filtered by the plate the page shows; they match either format.
    assert f'<a href="/fines/?plate={old}" data-testid="vehicle-fines">3 fines</a>' in page
    assert '<span data-testid="vehicle-fines-amount">(R$&nbsp;1,890.98)</span>' in page
    assert "2 untreated, R$ 1,760.82" in page
    assert (
        f'<a href="/notifications/?plate={old}" data-testid="vehicle-notifications">'
        "1 notification</a>"
    ) in page
    assert "1 untreated" not in page
    listed = manager_client.get(f"/fines/?plate={old}")
    assert sorted(keys(listed)) == ["1", "2", "3"]


def an_old_plate(emulator) -> str:
    """A plate of the emulator's fleet in the old format (ABC1234)."""
    return next(
        plate
        for plate in (plates.normalize(v["car_plate"]) for v in emulator.vehicles())
        if re.fullmatch(r"[A-Z]{3}[0-9]{4}", plate)
    )


def test_the_vehicle_page_lists_its_fines_and_notifications_beside_its_ecrlv(
    manager_client, client, emulator
):
    old = an_old_plate(emulator)
    mercosul = plates.registration(old)
    deliver(
        client,
        fine(1, old, treated=True),
        fine(2, mercosul),
        fine(3, "DEF5678"),
        notification(7, f"{old[:3]}-{old[3:]}"),
        notification(8, "DEF5678"),
    )

    page = manager_client.get(f"/vehicles/{old}/", headers=ENGLISH).text

    fines = page.split('data-testid="vehicle-fine-list"')[1].split("</section>")[0]
    notifications = page.split('data-testid="vehicle-notification-list"')[1]
    assert keys(fines) == ["2", "1"]  # under either plate, untreated first
    assert keys(notifications.split("</section>")[0]) == ["7"]
    assert fines.count('data-testid="handle-in-app"') == 2
    assert "Not yet available from the issuing authority" in fines  # the compact buttons
    assert page.index('data-testid="vehicle-crlv"') < page.index('data-testid="vehicle-fine-list"')
    assert "See all" not in page  # every one is listed


def test_the_vehicle_page_of_an_old_plate_is_found_by_its_mercosul_registration(
    manager_client, client, emulator
):
    # The dashboard and the fines name a vehicle by its registration (Mercosul form).
    old = an_old_plate(emulator)
    deliver(client, fine(1, plates.registration(old)))

    page = manager_client.get(
        f"/vehicles/{plates.registration(old)}/", headers=ENGLISH, follow=True
    )

    assert page.redirect_chain == [(f"/vehicles/{old}/", 302)]
    assert f'<dd class="plate">{plates.display(old)}</dd>' in page.text
    assert keys(page.text.split('data-testid="vehicle-fine-list"')[1]) == ["1"]


def test_the_vehicle_page_lists_the_first_ten_and_links_to_the_rest(
    manager_client, client, emulator, django_assert_max_num_queries
):
    old = an_old_plate(emulator)
    deliver(client, *(fine(id, old, treated=id > 3) for id in range(1, 13)))
    manager_client.get(f"/vehicles/{old}/")  # the vehicle list, now cached

    # Session, user, the two of the user's permissions (whole fleet?), the vehicle of each
    # e-CRLV request shown (latest, in progress), two counts, two lists at most.
    with django_assert_max_num_queries(12):
        page = manager_client.get(f"/vehicles/{old}/", headers=ENGLISH).text

    listed = keys(page.split('data-testid="vehicle-fine-list"')[1])
    assert len(listed) == 10
    assert set(listed[:3]) == {"1", "2", "3"}  # the untreated ones first
    assert (
        f'<a href="/fines/?plate={old}" data-testid="vehicle-fines-more">See all 12 fines</a>'
    ) in page
    assert 'data-testid="vehicle-notification-list"' not in page


def test_the_vehicle_page_says_when_nothing_was_received(manager_client, emulator):
    plate = emulator.vehicles()[0]["car_plate"]

    page = manager_client.get(f"/vehicles/{plate.replace('-', '')}/", headers=ENGLISH).text

    assert "The fleet platform has sent no fine or notification for this vehicle." in page
    assert '<a href="/vehicles/" aria-current="page">Vehicles</a>' in page  # where you are


def test_the_admin_finds_a_vehicles_records_by_its_plate_in_either_format(admin_client, client):
    deliver(client, fine(1, "ABC1234"), fine(2, "ABC1C34"), fine(3, "DEF5678"))
    deliver(client, notification(7, "abc-1234"), notification(8, "XYZ9999"))

    fines = admin_client.get("/admin/fleet/fine/", {"q": "abc-1234"}, headers=ENGLISH).text
    notifications = admin_client.get(
        "/admin/fleet/notification/", {"q": "ABC1C34"}, headers=ENGLISH
    ).text

    assert "2 results" in fines
    assert "ABC1C34" in fines
    assert "DEF5678" not in fines
    assert "1 result (" in notifications
