"""A fine's official document, payment slip and deep link into the fleet app: compact icon
buttons in the lists, each named for screen readers by its label, in both languages."""

from __future__ import annotations

import json
import re

import pytest

from fleet.webhooks.processing import deliveries_process_received

pytestmark = pytest.mark.django_db

WEBHOOK = "/webhooks/fleet/dev-webhook-token/"
DOCUMENT = "https://autoridade.example/autos/S1.pdf"
SLIP = "https://boletos.example/1"
# An icon button: its icon hidden from screen readers, its label (the accessible name) beside.
ICON_BUTTON = re.compile(
    r'<(a|button|span) [^>]*class="icon-button[^"]*"[^>]*title="([^"]*)"[^>]*>'
    r'<svg class="icon"[^>]* aria-hidden="true"[^>]*>.*?</svg>'
    r'<span class="icon-button__label">([^<]*)</span>'
    r'(?:<span class="icon-button__short" aria-hidden="true">[^<]*</span>)?</\1>'
)


@pytest.fixture
def manager_client(client, django_user_model):
    client.force_login(django_user_model.objects.create_user("marcos", password="pw-123456"))
    return client


def deliver(client, *payloads) -> None:
    for payload in payloads:
        response = client.post(WEBHOOK, data=json.dumps(payload), content_type="application/json")
        assert response.status_code == 202, response.content
    deliveries_process_received()


def a_fine(id, *, link_frame, link):
    frame = {"id": id, "treated": False, "description": f"Infração {id}"}
    return {"frame": frame, "linkFrame": link_frame, "link": link}


def icon_buttons(html: str) -> list[tuple[str, str, str]]:
    """(element, tooltip, label) of each icon button, in the page's order."""
    return ICON_BUTTON.findall(html)


@pytest.mark.parametrize(
    ("language", "names"),
    [
        (
            "en",
            [
                "Open the official document",
                "Open the payment slip",
                "Handle in the fleet app",
                "Not yet available from the issuing authority",
                "No payment slip yet",
                "Handle in the fleet app",
            ],
        ),
        (
            "pt-BR",
            [
                "Abrir o documento oficial",
                "Abrir o boleto",
                "Tratar no aplicativo da frota",
                "Ainda não disponível no órgão autuador",
                "Ainda sem boleto",
                "Tratar no aplicativo da frota",
            ],
        ),
    ],
)
def test_each_fine_row_has_three_named_icon_buttons(manager_client, client, language, names):
    deliver(client, a_fine(1, link_frame=None, link=None))
    deliver(client, a_fine(2, link_frame=DOCUMENT, link=SLIP))  # the latest comes first

    page = manager_client.get("/fines/", headers={"Accept-Language": language}).text

    buttons = icon_buttons(page.split('data-testid="fine-table"')[1])
    assert [label for _, _, label in buttons] == names
    assert all(tooltip == label for _, tooltip, label in buttons)  # what a mouse shows
    assert [element for element, _, _ in buttons] == ["a", "a", "button", "span", "span", "button"]
    assert (
        f'<a href="{DOCUMENT}" target="_blank" rel="noopener noreferrer" class="icon-button"'
        in page
    )
    assert f'<a href="{SLIP}" target="_blank" rel="noopener noreferrer" class="icon-button"' in page


def test_the_notifications_share_the_deep_link_button(manager_client, client):
    deliver(client, {"notification": {"id": 1, "treated": False, "title": "Aviso"}})

    page = manager_client.get("/notifications/", headers={"Accept-Language": "en"}).text

    assert [label for _, _, label in icon_buttons(page)] == ["Handle in the fleet app"]


def test_a_fines_page_shows_the_same_buttons_with_their_labels(manager_client, client):
    deliver(client, a_fine(1, link_frame=DOCUMENT, link=SLIP))
    from fleet.models import Fine

    page = manager_client.get(
        Fine.objects.get().get_absolute_url(), headers={"Accept-Language": "en"}
    )

    labels = [label for _, _, label in icon_buttons(page.text)]
    assert labels == [
        "Open the official document",
        "Open the payment slip",
        "Handle in the fleet app",
    ]
    assert 'class="table"' not in page.text  # outside a table, the labels are shown (portal.css)
