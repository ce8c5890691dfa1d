"""Counts as people say them: every count through ngettext, and none said as "No fines",
"Nenhuma multa" (Portuguese's plural rule takes 0 as singular: "0 multa" otherwise)."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from fleet.models import VehicleGroup
from fleet.webhooks.facts import FineFacts

pytestmark = pytest.mark.django_db

ENGLISH = {"Accept-Language": "en"}
PORTUGUESE = {"Accept-Language": "pt-BR"}


@pytest.mark.parametrize(
    ("path", "query", "english", "portuguese"),
    [
        ("/fines/", {"q": "nada"}, "No fines", "Nenhuma multa"),
        ("/notifications/", {"q": "nada"}, "No notifications", "Nenhuma notificação"),
    ],
)
def test_a_list_that_finds_nothing_says_none(
    manager_client, fleet_settings, path, query, english, portuguese
):
    for headers, said in ((ENGLISH, english), (PORTUGUESE, portuguese)):
        text = manager_client.get(path, query, headers=headers).text
        count = text.split('data-testid="result-count"', 1)[1].split("</p>", 1)[0]
        assert said in count
        assert not re.search(r"\b0 ", count)


def test_a_vehicle_search_that_finds_nothing_says_none_of_the_fleet(
    manager_client, fleet_settings, emulator
):
    total = len(emulator.vehicles())

    english = manager_client.get("/vehicles/", {"q": "zzzz"}, headers=ENGLISH).text
    portuguese = manager_client.get("/vehicles/", {"q": "zzzz"}, headers=PORTUGUESE).text

    assert f"None of the {total} vehicles" in english
    assert f"Nenhum dos {total} veículos" in portuguese
    assert not re.search(r"\b0 ve", portuguese)


def test_an_empty_vehicle_group_says_it_holds_no_vehicle(admin_client):
    group = VehicleGroup.objects.create(name="Vazio")
    page = reverse("admin:fleet_vehiclegroup_change", args=[group.pk])

    assert "No vehicle in this group" in admin_client.get(page, headers=ENGLISH).text
    assert "Nenhum veículo neste grupo" in admin_client.get(page, headers=PORTUGUESE).text


def test_no_points_are_said_so():
    from django.utils import translation

    facts = FineFacts(points=0)
    with translation.override("pt-br"):
        assert facts.points_shown == "nenhum ponto"
    with translation.override("en"):
        assert facts.points_shown == "no points"


def test_the_dashboard_and_a_drivers_page_say_none_as_people_say_it(
    manager_client, fleet_settings, emulator
):
    """No fine yet: each card's label in the plural ("0 / multas não tratadas"), and the
    sentences that would read "0 multa" say "nenhuma"."""
    page = manager_client.get("/", headers=PORTUGUESE).text
    labels = re.findall(r'<span class="count__label">(.*?)</span>', page, re.S)
    said = " | ".join(" ".join(label.split()) for label in labels)
    assert "multas não tratadas" in said
    assert "multas sem o documento oficial" in said
    assert "nenhuma multa não tratada" in said
    assert not re.search(
        r"\b0 multa\b|\bmulta não tratada\b(?!s)", said.replace("nenhuma multa não tratada", "")
    )
    english = manager_client.get("/", headers=ENGLISH).text
    assert "no untreated fine" in english
    driver = emulator.vehicles()[0]["driver_id"]
    page = manager_client.get(f"/drivers/{driver}/", headers=PORTUGUESE).text
    labels = re.findall(r'<span class="count__label">(.*?)</span>', page, re.S)
    assert [" ".join(label.split()) for label in labels] == [
        "multas, R$ 0,00",
        "não tratadas, R$ 0,00",
    ]
