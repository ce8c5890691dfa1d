"""A fine's infraction facts (code, severity, points, place, issuing authority) on every
surface: the list's row (a phone's card is the same cells), the fine's page, the vehicle
page's fines, the CSV, the alert e-mail and the outgoing webhook. Each is optional: what
a payload lacks is "not sent" on the page and an empty cell in the CSV."""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime

import pytest
import time_machine

from alerts.models import Alert, AlertChannel
from alerts.services.emails import alert_email
from alerts.services.preferences import alert_preferences_save
from alerts.services.sending import webhook_payload
from fleet import plates
from fleet.services.vehicles import vehicle_search
from fleet.webhooks.facts import fine_facts
from tests.mail import html_of, text_of
from tests.scopes import grant_whole_fleet
from tests.webhooks.test_one_reading import fine_delivered

PORTUGUESE = {"Accept-Language": "pt-BR"}
ENGLISH = {"Accept-Language": "en"}
FACTS = {
    "infractionCode": "745-50",
    "severity": "média",
    "points": 4,
    "city": "São Paulo",
    "state": "SP",
    "authority": "DETRAN-SP",
}
FACT_COLUMNS = [
    "Código da infração",
    "Gravidade",
    "Pontos na CNH",
    "Cidade",
    "UF",
    "Órgão autuador",
]


def _csv(response) -> tuple[list[str], list[str]]:
    text = b"".join(response.streaming_content).decode("utf-8").removeprefix("\ufeff")
    header, row = csv.reader(io.StringIO(text), delimiter=";")
    return header, row


def fine_surfaces(client, manager, emulator, **facts):
    """The fine's surfaces, in Portuguese: pages, CSV (header, row), e-mail, webhook."""
    with time_machine.travel(datetime(2026, 12, 1, 12, 0, tzinfo=UTC)):
        vehicle = emulator.vehicles()[0]
        plate = plates.normalize(vehicle["car_plate"])
        manager.email = "marcos@example.com"
        manager.save()
        grant_whole_fleet(manager)
        alert_preferences_save(user=manager, delivery="immediate")
        vehicle_search()
        fine = fine_delivered(
            client, plate=plate, amount="130.16", occurred="2026-11-20T13:45:00Z", **facts
        )
        client.force_login(manager)
        pages = {
            "fines list": client.get("/fines/", headers=PORTUGUESE).text,
            "fine page": client.get(fine.get_absolute_url(), headers=PORTUGUESE).text,
            "vehicle page": client.get(f"/vehicles/{plate}/", headers=PORTUGUESE).text,
        }
        export = _csv(client.get("/fines/export.csv", headers=PORTUGUESE))
        alert = Alert.objects.get(fine=fine, channel=AlertChannel.EMAIL)
        message = alert_email(
            user=manager, alerts=[alert], language="pt-br", time_zone="America/Sao_Paulo"
        ).message()
        sent = webhook_payload(alert)["data"]
    pages |= {"e-mail text": text_of(message), "e-mail html": html_of(message)}
    return fine, pages, export, sent


@pytest.mark.django_db
def test_the_facts_sent_are_on_every_surface(client, manager, emulator):
    fine, pages, (header, row), sent = fine_surfaces(client, manager, emulator, **FACTS)

    for surface in ("fines list", "vehicle page"):
        assert "745-50 · média · 4 pontos · São Paulo/SP · DETRAN-SP" in pages[surface], surface
    page = pages["fine page"]
    for testid, shown in [
        ("fact-code", "745-50"),
        ("fact-severity", "média"),
        ("fact-points", "4"),
        ("fact-place", "São Paulo/SP"),
        ("fact-authority", "DETRAN-SP"),
    ]:
        assert f'data-testid="{testid}">{shown}</dd>' in page
    for surface in ("e-mail text", "e-mail html"):
        for shown in ("745-50", "média", "São Paulo/SP", "DETRAN-SP", "Pontos na CNH"):
            assert shown in pages[surface], (surface, shown)
    assert header[-11:-5] == FACT_COLUMNS
    assert row[-11:-5] == ["745-50", "média", "4", "São Paulo", "SP", "DETRAN-SP"]
    assert sent["infraction"] == {
        "code": "745-50",
        "severity": "média",
        "points": 4,
        "city": "São Paulo",
        "state": "SP",
        "authority": "DETRAN-SP",
    }
    assert fine.facts.code == "745-50"


@pytest.mark.django_db
def test_a_payload_without_them_says_not_sent_and_leaves_the_cells_empty(client, manager, emulator):
    _fine, pages, (header, row), sent = fine_surfaces(client, manager, emulator)

    page = pages["fine page"]
    for testid in ("fact-code", "fact-severity", "fact-points", "fact-place", "fact-authority"):
        assert f'data-testid="{testid}"><span class="muted">não enviado</span></dd>' in page
    assert 'data-testid="fine-facts"' not in pages["fines list"]
    assert "Pontos na CNH" not in pages["e-mail text"]
    assert header[-11:-5] == FACT_COLUMNS
    assert row[-11:-5] == [""] * 6
    assert set(sent["infraction"].values()) == {None}


@pytest.mark.django_db
def test_facts_of_an_unexpected_shape_are_shown_as_sent_never_guessed(client, manager, emulator):
    odd = {"points": "quatro", "severity": "moderada", "state": "São Paulo", "city": ["x"]}

    _fine, pages, (_header, row), sent = fine_surfaces(client, manager, emulator, **odd)

    page = pages["fine page"]
    assert 'data-testid="fact-points">quatro (como enviado: não é um número de pontos)<' in page
    assert 'data-testid="fact-severity">moderada</dd>' in page
    assert 'data-testid="fact-place">São Paulo</dd>' in page  # the city was not text
    assert row[-11:-5] == ["", "moderada", "quatro", "", "São Paulo", ""]
    assert sent["infraction"]["points"] == "quatro"


@pytest.mark.parametrize(
    ("sent", "points", "points_text"),
    [
        (4, 4, ""),
        ("7", 7, ""),
        (0, 0, ""),
        (-3, None, "-3"),
        (100, None, "100"),
        (True, None, ""),
        (4.5, None, "4.5"),
        ("\uff14", None, "\uff14"),  # a full-width 4: not a digit a Brazilian authority writes
        (None, None, ""),
    ],
)
def test_points_are_a_whole_number_of_the_licences_scale_or_text_as_sent(sent, points, points_text):
    facts = fine_facts({"points": sent})

    assert (facts.points, facts.points_text) == (points, points_text)


def test_the_severity_is_said_in_the_readers_language_whatever_its_accents():
    from django.utils import translation

    with translation.override("en"):
        assert str(fine_facts({"severity": "GRAVÍSSIMA"}).severity_shown) == "very serious"
        assert str(fine_facts({"severity": "media"}).severity_shown) == "medium"
    with translation.override("pt-br"):
        assert str(fine_facts({"severity": "gravissima"}).severity_shown) == "gravíssima"
    assert fine_facts({"state": "rj"}).state == "RJ"
    assert fine_facts({"city": "  Rio \n de Janeiro "}).city == "Rio de Janeiro"
    assert len(fine_facts({"authority": "x" * 1000}).authority) == 120
