"""The indication packet: a PDF per fine and one for the fines ticked in the queue, in
Portuguese whatever the reader's language, with the fine's facts, the vehicle, the driver
and their licence from the newest CNH lookup naming them (else lines to fill in, never a
guess), and lines to sign. A fine the user does not see is not found; the CPF is shown
in full only to those allowed, and recorded."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from io import BytesIO

import pytest
import time_machine
from django.contrib.auth.models import Permission
from pypdf import PdfReader

from fleet.models import (
    CnhItemStatus,
    CnhLookup,
    CnhLookupItem,
    CpfDisclosure,
    Driver,
    DriverIndication,
    Fine,
    VehicleGroup,
    VehicleGroupMember,
)
from fleet.services.packets import PACKET_LIMIT
from fleet.services.scopes import vehicle_groups_changed
from fleet.webhooks.processing import deliveries_process_received
from tests.scopes import grant_whole_fleet

pytestmark = pytest.mark.django_db

WEBHOOK = "/webhooks/fleet/dev-webhook-token/"
ENGLISH = {"Accept-Language": "en"}
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
CPF = "52998224725"


@pytest.fixture(autouse=True)
def clock():
    with time_machine.travel(NOW, tick=False) as traveller:
        yield traveller


@pytest.fixture
def manager(django_user_model):
    return grant_whole_fleet(django_user_model.objects.create_user("marcos", password="pw-1"))


def send(client, number: int, plate: str = "ABC1D23", **fields) -> Fine:
    frame = {
        "id": number,
        "carPlate": plate,
        "autoInfracao": f"E0{number}",
        "description": "Avançar o sinal vermelho do semáforo",
        "amount": "293.47",
        "treated": False,
        "indicationDeadline": "2026-12-20",
        "infractionCode": "605-03",
        "city": "Campinas",
        "state": "SP",
        "authority": "DER-SP",
        **fields,
    }
    body = json.dumps({"frame": frame, "linkFrame": None, "link": "https://boletos.example/1"})
    assert client.post(WEBHOOK, data=body, content_type="application/json").status_code == 202
    deliveries_process_received()
    fine = Fine.objects.get(reference=f"E0{number}")
    Fine.objects.filter(pk=fine.pk).update(driver_id=7001, driver_basis="history")
    return Fine.objects.get(pk=fine.pk)


def looked_up(owner, *, name: str, number: str, days_ago: int = 0) -> CnhLookup:
    """A finished lookup of `owner` whose answer names `name`, with licence `number`."""
    lookup = CnhLookup.objects.create(owner=owner, kind="single", purpose="fine", status="done")
    CnhLookup.objects.filter(pk=lookup.pk).update(created_at=NOW - timedelta(days=days_ago))
    result = {"name": name, "cnhNumber": number, "category": "AB", "expiresAt": "2029-03-15"}
    CnhLookupItem.objects.create(
        lookup=lookup, position=0, cpf=CPF, status=CnhItemStatus.OK, result=result
    )
    return lookup


def pages(response) -> list[str]:
    assert response.status_code == 200, response.content[:500]
    assert response["Content-Type"] == "application/pdf"
    return [page.extract_text() for page in PdfReader(BytesIO(response.content)).pages]


def test_a_fines_packet_has_its_facts_and_the_drivers_licence_in_portuguese(
    client, manager, manager_client
):
    Driver.objects.create(driver_id=7001, name="Ana Souza")
    looked_up(manager, name="ANA SOUZA", number="11111111111", days_ago=20)
    looked_up(manager, name="Ana  Souza", number="98765432100", days_ago=2)  # the newest
    looked_up(manager, name="Bruno Lima", number="55555555555", days_ago=1)
    fine = send(client, 1)

    response = manager_client.get(f"/fines/{fine.pk}/packet.pdf", headers=ENGLISH)

    [text] = pages(response)
    assert "ABC1D23" in text
    assert "E01" in text
    assert "605-03" in text
    assert "Avançar o sinal vermelho" in text
    assert "Campinas/SP" in text
    assert "DER-SP" in text
    assert "R$ 293,47" in text
    assert "20/12/2026" in text
    assert "enviado pela plataforma" in text
    assert "Ana Souza" in text
    assert "98765432100" in text
    assert "11111111111" not in text
    assert "55555555555" not in text
    assert "AB" in text
    assert "15/03/2029" in text
    assert "Identificação do condutor infrator" in text
    assert "Número do auto de infração" in text
    assert "Assinatura do condutor" in text
    assert "Assinatura do representante da empresa" in text
    assert "Notice number" not in text
    assert response["Content-Disposition"] == 'attachment; filename="indicacao-ABC1D23-E01.pdf"'


def test_the_packet_is_never_stored(client, manager_client):
    fine = send(client, 1)

    response = manager_client.get(f"/fines/{fine.pk}/packet.pdf")

    directives = {part.strip() for part in response["Cache-Control"].split(",")}
    assert {"private", "no-store"} <= directives


def test_an_unknown_licence_is_a_line_to_fill_in_never_a_guess(client, manager, manager_client):
    Driver.objects.create(driver_id=7001, name="Ana Souza")
    looked_up(manager, name="Ana Souza Lima", number="98765432100")  # another person
    fine = send(client, 1)

    [text] = pages(manager_client.get(f"/fines/{fine.pk}/packet.pdf"))

    assert "Ana Souza" in text
    assert "98765432100" not in text
    assert "CNH não consultada" in text
    assert "____" in text


def test_a_lookup_the_user_may_not_open_is_not_used(client, manager_client, django_user_model):
    Driver.objects.create(driver_id=7001, name="Ana Souza")
    someone = django_user_model.objects.create_user("outra", password="pw-1")
    looked_up(someone, name="Ana Souza", number="98765432100")
    fine = send(client, 1)

    [text] = pages(manager_client.get(f"/fines/{fine.pk}/packet.pdf"))

    assert "98765432100" not in text


def test_the_cpf_in_full_only_with_the_permission_and_recorded(client, manager, manager_client):
    Driver.objects.create(driver_id=7001, name="Ana Souza")
    lookup = looked_up(manager, name="Ana Souza", number="98765432100")
    fine = send(client, 1)

    [hidden] = pages(manager_client.get(f"/fines/{fine.pk}/packet.pdf"))
    manager.user_permissions.add(Permission.objects.get(codename="view_full_cpf"))
    [shown] = pages(manager_client.get(f"/fines/{fine.pk}/packet.pdf"))

    assert "529.982.247-25" not in hidden
    assert "CPF não exibido" in hidden
    assert "529.982.247-25" in shown
    [disclosure] = CpfDisclosure.objects.all()
    assert (disclosure.lookup, disclosure.place, disclosure.cpf_count) == (lookup, "packet", 1)


@pytest.mark.scoped
def test_a_fine_outside_the_users_vehicles_is_not_found(client, django_user_model):
    fine = send(client, 1)
    group = VehicleGroup.objects.create(name="Norte")
    group.plates.create(registration="XYZ9A87")
    vehicle_groups_changed([group.pk])
    user = django_user_model.objects.create_user("regional", password="pw-1")
    VehicleGroupMember.objects.create(group=group, user=user)
    client.force_login(user)
    own = send(client, 2, plate="XYZ9A87")

    assert client.get(f"/fines/{own.pk}/packet.pdf").status_code == 200
    assert client.get(f"/fines/{fine.pk}/packet.pdf").status_code == 404
    assert client.post("/fines/indications/packet.pdf", {"fine": [own.pk]}).status_code == 200
    both = {"fine": [own.pk, fine.pk]}
    assert client.post("/fines/indications/packet.pdf", both).status_code == 404
    assert client.post("/fines/indications/packet.pdf", {"fine": [fine.pk]}).status_code == 404


def test_the_queues_selection_is_one_pdf_with_a_page_per_fine(client, manager_client):
    first = send(client, 1, plate="ABC1D23")
    second = send(client, 2, plate="BRA2E19", indicationDeadline="2026-12-10")
    send(client, 3, plate="XYZ9A87")  # not ticked

    queue = manager_client.get("/fines/indications/").content.decode()
    response = manager_client.post(
        "/fines/indications/packet.pdf", {"fine": [first.pk, second.pk]}, headers=ENGLISH
    )

    assert 'form id="queue-selection"' in queue
    assert 'id="queue-actions"' in queue
    assert f'name="fine" value="{first.pk}"' in queue
    texts = pages(response)
    assert len(texts) == 2
    assert "BRA2E19" in texts[0]
    assert "E02" in texts[0]
    assert "ABC1D23" in texts[1]
    assert "E01" in texts[1]
    assert not any("XYZ9A87" in text for text in texts)
    assert response["Content-Disposition"] == 'attachment; filename="indicacoes-2026-12-01.pdf"'


def test_more_fines_than_a_packet_holds_are_refused_with_a_reason(client, manager_client):
    fine = send(client, 1)

    response = manager_client.post(
        "/fines/indications/packet.pdf", {"fine": [fine.pk] * (PACKET_LIMIT + 1)}, headers=ENGLISH
    )

    assert response.status_code == 400
    assert f"a packet holds at most {PACKET_LIMIT}" in response.content.decode()


def test_the_fine_page_links_to_its_packet_while_it_needs_an_indication(client, manager_client):
    fine = send(client, 1)
    not_needed = send(client, 2, indicationRequired=False)

    page = manager_client.get(f"/fines/{fine.pk}/").content.decode()
    other = manager_client.get(f"/fines/{not_needed.pk}/").content.decode()

    assert f'href="/fines/{fine.pk}/packet.pdf"' in page
    assert "packet.pdf" not in other


def test_the_driver_is_the_one_indicated_unless_the_authority_refused_it(client, manager_client):
    Driver.objects.create(driver_id=7001, name="Ana Souza")
    Driver.objects.create(driver_id=7002, name="Bruno Lima")
    fine = send(client, 1)
    DriverIndication.objects.create(
        fine=fine, driver_id=7002, channel="post", indicated_on=NOW.date(), user_name="marcos"
    )

    [indicated] = pages(manager_client.get(f"/fines/{fine.pk}/packet.pdf"))
    DriverIndication.objects.update(outcome="refused", outcome_reason="assinatura")
    [refused] = pages(manager_client.get(f"/fines/{fine.pk}/packet.pdf"))

    assert "Bruno Lima" in indicated
    assert "indicado em 01/12/2026" in indicated
    assert "Ana Souza" not in indicated
    assert "Ana Souza" in refused
    assert "Bruno Lima" not in refused


def test_a_fine_without_a_driver_leaves_the_driver_to_fill_in(client, manager_client):
    fine = send(client, 1)
    Fine.objects.filter(pk=fine.pk).update(driver_id=None, driver_basis="uncertain")

    [text] = pages(manager_client.get(f"/fines/{fine.pk}/packet.pdf"))

    assert "O portal não sabe quem dirigia" in text
