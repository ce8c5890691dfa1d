"""The queue of fines to indicate (`/fines/indications/`): the fines of the user's vehicles
whose driver is still to be indicated, untreated, the overdue first then by days left;
its filters, its keyset pages and its CSV."""

from __future__ import annotations

import csv
import io
import json
import re
from datetime import UTC, date, datetime, timedelta

import pytest
import time_machine
from django.utils import timezone

from fleet.models import Fine
from fleet.services.indications import QUEUE_PAGE
from fleet.webhooks.processing import deliveries_process_received
from tests.scopes import grant_whole_fleet

pytestmark = pytest.mark.django_db

WEBHOOK = "/webhooks/fleet/dev-webhook-token/"
PORTUGUESE = {"Accept-Language": "pt-BR"}
ENGLISH = {"Accept-Language": "en"}
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)  # 09:00 in São Paulo, 01/12
ROW = re.compile(r'<tr data-testid="queue-row" data-key="([^"]*)" data-due="([^"]*)"')


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


def send(client, number: int, plate: str = "ABC1D23", **fields) -> None:
    frame = {
        "id": number,
        "carPlate": plate,
        "autoInfracao": f"E0{number}",
        "description": f"Infração {number}",
        "amount": "130.16",
        "treated": False,
        **fields,
    }
    body = json.dumps({"frame": frame, "linkFrame": None, "link": "https://boletos.example/1"})
    assert client.post(WEBHOOK, data=body, content_type="application/json").status_code == 202


def keys(response) -> list[str]:
    return [key for key, _due in ROW.findall(response.text)]


def test_the_queue_is_the_fines_still_to_indicate_overdue_first(client, manager_client):
    send(client, 1, indicationDeadline="2026-12-20")
    send(client, 2, indicationDeadline="2026-11-28")  # overdue
    send(client, 3, indicationDeadline="2026-12-03")
    send(client, 4)  # estimated: 31/12
    send(client, 5, indicationDeadline="2026-12-02", indicationRequired=False)
    send(client, 6, indicationDeadline="2026-12-02", treated=True)
    deliveries_process_received()

    response = manager_client.get("/fines/indications/", headers=PORTUGUESE)

    assert response.status_code == 200
    assert keys(response) == ["2", "3", "1", "4"]
    page = response.text
    assert "perdido há 3 dias: espere a NIC" in page
    assert "2 dias restantes" in page
    assert page.count('data-testid="estimated"') == 1
    assert "R$ 260,32" in page  # the NIC: twice 130,16


def test_filters_by_plate_in_either_spelling_by_driver_and_by_how_soon(client, manager_client):
    send(client, 1, plate="ABC1234", indicationDeadline="2026-11-30")
    send(client, 2, plate="XYZ9K87", indicationDeadline="2026-12-05")
    send(client, 3, plate="XYZ9K87", indicationDeadline="2026-12-25")
    deliveries_process_received()
    Fine.objects.filter(external_id="3").update(driver_id=7001, driver_basis="list")

    def found(query: str) -> list[str]:
        return keys(manager_client.get(f"/fines/indications/?{query}"))

    assert found("plate=ABC-1234") == ["1"]
    assert found("plate=ABC1C34") == ["1"]  # the Mercosul spelling of the same plate
    assert found("within=overdue") == ["1"]
    assert found("within=7") == ["2"]  # from today, as the dashboard counts them
    assert found("within=30") == ["2", "3"]
    assert found("driver=7001") == ["3"]
    page = manager_client.get("/fines/indications/?driver=7001", headers=ENGLISH).text
    assert "probable" in page  # the vehicle list's driver: a guess, said so
    refused = manager_client.get("/fines/indications/?plate=ZZ", headers=ENGLISH)
    assert refused.status_code == 200
    assert "“ZZ” is not a plate" in refused.text
    assert keys(refused) == ["1", "2", "3"]  # the filter is not applied, the rest is shown


def test_keyset_pages_go_through_every_fine_once_in_order(client, manager_client):
    total = QUEUE_PAGE * 2 + 7
    start = date(2026, 12, 2)
    for number in range(1, total + 1):
        # Several fines a day: the pages part within a day too.
        send(client, number, indicationDeadline=str(start + timedelta(days=number // 4)))
    deliveries_process_received()

    seen: list[tuple[str, str]] = []
    path = "/fines/indications/"
    pages = 0
    while path:
        response = manager_client.get(path)
        seen += ROW.findall(response.text)
        pages += 1
        following = re.search(r'href="(\?[^"]*after=[^"]*)" rel="next"', response.text)
        path = f"/fines/indications/{following[1].replace('&amp;', '&')}" if following else ""

    assert pages == 3
    assert len(seen) == total
    assert len({key for key, _ in seen}) == total
    assert [due for _key, due in seen] == sorted(due for _key, due in seen)


def test_the_csv_is_the_whole_queue_with_how_each_deadline_and_driver_is_known(
    client, manager_client
):
    send(client, 1, indicationDeadline="2026-11-30")
    send(client, 2)
    deliveries_process_received()

    response = manager_client.get("/fines/indications/export.csv", headers=PORTUGUESE)

    text = b"".join(response.streaming_content).decode().removeprefix("\ufeff")
    header, *rows = csv.reader(io.StringIO(text), delimiter=";")
    assert header == [
        "Placa", "Infração", "Auto", "Indicar o condutor até",
        "Como o prazo de indicação é conhecido", "Dias restantes", "Id do condutor", "Condutor",
        "Como o condutor é conhecido",
        "Valor (R$)", "NIC se não indicada (R$)",
    ]  # fmt: skip
    assert [row[2:6] for row in rows] == [
        ["E01", "30/11/2026", "enviado pela plataforma", "-1"],
        ["E02", "31/12/2026", "estimativa: confira a notificação", "30"],
    ]
    assert [row[9:] for row in rows] == [["130,16", "260,32"]] * 2


def test_a_fine_leaves_the_queue_when_treated_or_marked_not_needed(client, manager_client):
    send(client, 1, updatedAt="2026-12-01T10:00:00Z")
    send(client, 2)
    deliveries_process_received()
    assert keys(manager_client.get("/fines/indications/")) == ["1", "2"]

    send(client, 1, treated=True, updatedAt="2026-12-01T11:00:00Z")
    deliveries_process_received()
    Fine.objects.filter(external_id="2").update(indication="not_needed")

    response = manager_client.get("/fines/indications/", headers=ENGLISH)
    assert keys(response) == []
    assert "No fine of your vehicles is waiting for its driver to be indicated." in response.text
    assert timezone.localdate() == date(2026, 12, 1)
