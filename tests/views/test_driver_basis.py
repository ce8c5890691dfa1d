"""How each fine's driver is known, on every page that names one, and a person's
correction of it: by name, among the drivers the user sees, from → to in its history.

One vehicle handed from D1 (Ana Souza) to D2 (Bruno Lima), seen by five refreshes: a
fine inside D1's period (the history: a fact), one in the hand-over's window (uncertain:
D1 or D2), one older than the history (probable: the vehicle list's driver, D2)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth.models import Permission

from fleet.models import DriverBasis, Fine, FineDriverCorrection
from fleet.services.drivers import driver_names_add
from tests.conftest import Emulator
from tests.driving import HOUR, MINUTE, Clocks, deliver, lone_handover
from tests.scopes import grant_whole_fleet

pytestmark = pytest.mark.django_db

ENGLISH = {"Accept-Language": "en"}
PORTUGUESE = {"Accept-Language": "pt-BR"}


@pytest.fixture
def clocks(fleet_settings: Any, emulator: Emulator, time_machine: Any) -> Clocks:
    fleet_settings.FLEET_DRIVER_HISTORY = True
    emulator.switch_handovers(True)
    return Clocks(time_machine, emulator)


@pytest.fixture
def three(client: Any, clocks: Clocks, emulator: Emulator, manager: Any) -> dict[str, Any]:
    plate, h, d1, d2 = lone_handover(emulator)
    for minutes in (-150, -90, -30, 30, 90):
        clocks.observe(h + minutes * MINUTE)
    driver_names_add(names={d1: "Ana Souza", d2: "Bruno Lima"})
    fact = deliver(client, 1, plate, h - 60 * MINUTE)
    uncertain = deliver(client, 2, plate, h - 10 * MINUTE)
    probable = deliver(client, 3, plate, h - 10 * HOUR)
    assert [f.driver_basis for f in (fact, uncertain, probable)] == ["history", "uncertain", "list"]
    manager.user_permissions.add(Permission.objects.get(codename="change_fine_driver"))
    client.force_login(grant_whole_fleet(manager))
    return {
        "plate": plate,
        "d1": d1,
        "d2": d2,
        "fact": fact,
        "uncertain": uncertain,
        "probable": probable,
    }


def marks(page: str) -> dict[str, str]:
    """Each mark of how a driver is known on the page, by basis: its text."""
    found = re.findall(
        r'data-testid="driver-basis" data-basis="(\w+)" title="[^"]+">([^<]+)<', page
    )
    return {basis: " ".join(text.split()) for basis, text in found}


def keys(page: str) -> list[str]:
    return sorted(re.findall(r'<tr data-testid="fine" data-key="([^"]*)"', page))


def test_every_list_marks_each_driver_with_how_it_is_known(client: Any, three: Any) -> None:
    expected = {
        "history": "had the vehicle",
        "uncertain": "uncertain: Ana Souza or Bruno Lima",
        "list": "probable",
    }
    assert marks(client.get("/fines/", headers=ENGLISH).text) == expected
    assert marks(client.get(f"/vehicles/{three['plate']}/", headers=ENGLISH).text) == expected
    # D2's page: the fine older than the history is theirs only as a guess.
    driver_page = client.get(f"/drivers/{three['d2']}/", headers=ENGLISH).text
    assert marks(driver_page) == {"list": "probable"}
    # The fine's own page, and the explanation on hover.
    page = client.get(three["probable"].get_absolute_url(), headers=ENGLISH).text
    assert marks(page) == {"list": "probable"}
    assert 'title="A guess: the vehicle list&#x27;s driver when the fine arrived' in page
    # In Portuguese too.
    portuguese = marks(client.get("/fines/", headers=PORTUGUESE).text)
    assert portuguese["list"] == "provável"
    assert portuguese["uncertain"] == "incerto: Ana Souza ou Bruno Lima"


@pytest.mark.parametrize(
    ("basis", "listed"),
    [
        ("history", ["1"]),
        ("uncertain", ["2"]),
        ("list", ["3"]),
        ("manual", []),
        ("established", ["1"]),
        ("", ["1", "2", "3"]),
    ],
)
def test_the_fines_list_filters_by_how_the_driver_is_known(
    client: Any, three: Any, basis: str, listed: list[str]
) -> None:
    page = client.get("/fines/", {"basis": basis}, headers=ENGLISH).text
    assert keys(page) == listed
    # The CSV is the same fines, each with its mark and what it means.
    response = client.get("/fines/export.csv", {"basis": basis}, headers=ENGLISH)
    csv = b"".join(response.streaming_content).decode("utf-8-sig")
    assert len(csv.strip().splitlines()) == len(listed) + 1


def test_a_correction_by_name_is_written_and_read_back_from_to(client: Any, three: Any) -> None:
    fine = three["probable"]
    # Offered first: the vehicle's other driver by the history, with their period.
    page = client.get(fine.get_absolute_url(), headers=ENGLISH).text
    assert re.findall(r'name="choice" value="(\d+)" data-testid="fine-driver-candidate"', page) == [
        str(three["d1"])
    ]

    response = client.post(
        f"/fines/{fine.pk}/driver",
        {"choice": "other", "driver": "ana sou", "reason": "Seen on the camera"},
        headers=ENGLISH,
    )

    assert response.status_code == 302
    fine.refresh_from_db()
    assert (fine.driver_id, fine.driver_basis) == (three["d1"], DriverBasis.MANUAL)
    page = client.get(fine.get_absolute_url(), headers=ENGLISH).text
    history = re.findall(r'data-testid="driver-correction">(.*?)</li>', page, re.S)
    assert len(history) == 1
    said = " ".join(re.sub(r"<[^>]+>", "", history[0]).split())
    assert said.startswith("Bruno Lima (probable) → Ana Souza · Marcos · ")
    assert said.endswith("· “Seen on the camera”")
    listed = client.get("/fines/", {"basis": "manual"}, headers=ENGLISH).text
    assert keys(listed) == ["3"]
    established = client.get("/fines/", {"basis": "established"}, headers=ENGLISH).text
    assert keys(established) == ["1", "3"]
    assert marks(listed) == {"manual": "set by a person"}
    # The admin names both drivers, in either language.
    from django.contrib.auth.models import User

    User.objects.filter(pk=fine.driver_corrections.get().user_id).update(
        is_staff=True, is_superuser=True
    )
    for headers, words in ((ENGLISH, "(probable)"), (PORTUGUESE, "(provável)")):
        admin = client.get("/admin/fleet/finedrivercorrection/", headers=headers).text
        assert f"Bruno Lima {words}" in admin
        assert "Ana Souza" in admin


@pytest.mark.parametrize("typed", ["99999", "Nobody Known"])
def test_a_driver_nobody_has_is_refused_and_nothing_is_written(
    client: Any, three: Any, typed: str
) -> None:
    fine = three["probable"]
    response = client.post(
        f"/fines/{fine.pk}/driver",
        {"choice": "other", "driver": typed, "reason": "a try"},
        headers=ENGLISH,
    )

    assert response.status_code == 400
    assert (
        "No driver of your vehicles has the id 99999." in response.text
        if typed.isdigit()
        else "No driver&#x27;s name begins like “Nobody Known”" in response.text
    )
    after = Fine.objects.get(pk=fine.pk)
    assert (after.driver_id, after.driver_basis) == (three["d2"], DriverBasis.LIST)
    assert not FineDriverCorrection.objects.exists()
    assert client.get("/drivers/99999/").status_code == 404


def test_a_lists_count_by_basis_follows_a_correction_that_changes_no_tally(
    client: Any, three: Any
) -> None:
    """The count of a list by how the driver is known is kept under the tallies' version:
    a driver confirmed by hand (had the vehicle → set by a person, the same driver)
    changes no tally, and moves the version all the same."""
    fact = three["fact"]

    def count(basis: str) -> str:
        page = client.get("/fines/", {"basis": basis}, headers=ENGLISH).text
        found = re.search(r'data-testid="result-count"><span>(.*?)</span>', page, re.S)
        assert found is not None
        return " ".join(found[1].split())

    assert (count("manual"), count("history")) == ("No fines", "1 fine")

    response = client.post(
        f"/fines/{fact.pk}/driver",
        {"choice": str(three["d1"]), "reason": "confirmed"},
        headers=ENGLISH,
    )

    assert response.status_code == 302
    assert (count("manual"), count("history")) == ("1 fine", "No fines")
