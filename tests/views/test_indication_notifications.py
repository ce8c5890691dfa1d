"""The platform's "Indicação de condutor" notification links to its fine (the one of the
notice number it names, else the vehicle's fine still to indicate whose deadline is
nearest, said to be a guess) and offers to indicate; the fine links back."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime

import pytest
import time_machine

from fleet.models import Fine, Notification
from fleet.webhooks.processing import deliveries_process_received
from tests.scopes import grant_whole_fleet

pytestmark = pytest.mark.django_db

WEBHOOK = "/webhooks/fleet/dev-webhook-token/"
ENGLISH = {"Accept-Language": "en"}
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


@pytest.fixture(autouse=True)
def clock():
    with time_machine.travel(NOW, tick=False) as traveller:
        yield traveller


@pytest.fixture
def manager_client(client, django_user_model):
    user = django_user_model.objects.create_user("marcos", password="pw-123456")
    grant_whole_fleet(user)
    client.force_login(user)
    return client


def post(client, payload) -> None:
    body = json.dumps(payload)
    assert client.post(WEBHOOK, data=body, content_type="application/json").status_code == 202


def fine(client, number: int, plate: str, deadline: str) -> None:
    frame = {
        "id": number,
        "carPlate": plate,
        "autoInfracao": f"E0{number}",
        "description": f"Infração {number}",
        "amount": "130.16",
        "treated": False,
        "indicationDeadline": deadline,
    }
    post(client, {"frame": frame, "linkFrame": None, "link": "https://boletos.example/1"})


def notification(client, number: int, plate: str, **fields) -> Notification:
    event = {
        "id": number,
        "type": "driver",
        "title": "Indicação de condutor",
        "message": f"Indique o condutor da multa do veículo {plate}.",
        "carPlate": plate,
        "treated": False,
        **fields,
    }
    post(client, {"notification": event})
    deliveries_process_received()
    return Notification.objects.get(external_id=str(number))


def test_it_links_to_the_vehicles_fine_nearest_its_deadline_as_a_guess(client, manager_client):
    fine(client, 1, "ABC1D23", "2026-12-20")
    fine(client, 2, "ABC1D23", "2026-12-10")
    fine(client, 3, "XYZ9K87", "2026-12-05")  # another vehicle's
    notice = notification(client, 500, "ABC-1D23")

    page = manager_client.get(notice.get_absolute_url(), headers=ENGLISH).text

    nearest = Fine.objects.get(external_id="2")
    section = re.search(r'<section [^>]*data-testid="notified-fine".*?</section>', page, re.S)
    assert section is not None
    assert 'data-how="nearest"' in section[0]
    assert "probable" in section[0]
    assert f'href="{nearest.get_absolute_url()}" data-testid="indicate-link"' in section[0]
    assert "9 days left" in section[0]
    # The fine links back to it; the other fine of the vehicle does not.
    back = manager_client.get(nearest.get_absolute_url(), headers=ENGLISH).text
    assert f'href="{notice.get_absolute_url()}"' in back
    other = Fine.objects.get(external_id="1")
    assert notice.get_absolute_url() not in manager_client.get(other.get_absolute_url()).text


def test_a_notice_number_it_names_is_the_fine_whatever_its_deadline(client, manager_client):
    fine(client, 1, "ABC1D23", "2026-12-20")
    fine(client, 2, "ABC1D23", "2026-12-10")
    notice = notification(client, 500, "ABC1D23", autoInfracao="E01")

    page = manager_client.get(notice.get_absolute_url(), headers=ENGLISH).text

    named = Fine.objects.get(external_id="1")
    assert 'data-how="notice"' in page
    assert f'href="{named.get_absolute_url()}" data-testid="indicate-link"' in page


@pytest.mark.parametrize(
    ("fields", "why"),
    [
        ({"type": "license", "title": "Licenciamento a vencer"}, "another kind of notification"),
        ({"carPlate": "QWE1R23"}, "a vehicle without a fine to indicate"),
    ],
)
def test_no_fine_is_offered_where_there_is_none_to_indicate(client, manager_client, fields, why):
    fine(client, 1, "ABC1D23", "2026-12-20")
    notice = notification(client, 500, "ABC1D23", **fields)

    page = manager_client.get(notice.get_absolute_url()).text

    assert 'data-testid="notified-fine"' not in page, why
