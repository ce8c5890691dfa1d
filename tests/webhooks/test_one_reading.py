"""A fine's amount and time are read once (fleet/api/values.py), stored, and every
surface shows what was stored: the lists and pages, the dashboard, the CSV export, the
alert e-mail and the outgoing webhook. A value that cannot be read is null, and shown as
it was sent."""

from __future__ import annotations

import csv
import io
import json
import re
from datetime import UTC, date, datetime
from decimal import Decimal

import pytest
import time_machine

from alerts.models import Alert, AlertChannel
from alerts.services.emails import alert_email
from alerts.services.preferences import alert_preferences_save
from alerts.services.sending import webhook_payload
from fleet import plates
from fleet.api.licences import cnh_lookup_from_json
from fleet.api.values import parse_amount, parse_day, parse_moment
from fleet.models import Fine
from fleet.services.vehicles import vehicle_search
from fleet.webhooks.payloads import payload_amount, payload_occurred_at
from fleet.webhooks.processing import deliveries_process_received
from tests.mail import html_of, text_of
from tests.scopes import grant_whole_fleet

WEBHOOK = "/webhooks/fleet/dev-webhook-token/"
# 13:45 UTC is 10:45 in São Paulo, the portal's time zone (and the alert reader's).
COMMITTED = datetime(2026, 11, 20, 13, 45, tzinfo=UTC)
EPOCH = 1_795_182_300  # COMMITTED in Unix seconds


@pytest.mark.parametrize(
    ("sent", "read"),
    [
        ("1293.47", Decimal("1293.47")),
        ("1.293,47", Decimal("1293.47")),  # as a Brazilian writes it
        ("1,293.47", Decimal("1293.47")),  # both separators: the last one is the decimal one
        ("R$ 1.293,47", Decimal("1293.47")),
        ("R$1293.47", Decimal("1293.47")),
        ("R$\u00a01.293,47", Decimal("1293.47")),
        ("293.47", Decimal("293.47")),
        (" 293.47 ", Decimal("293.47")),
        ("293,47", Decimal("293.47")),
        ("R$ 293,47", Decimal("293.47")),
        ("1,293", Decimal("1.29")),  # one separator is the decimal one, a comma included
        ("-293,47", Decimal("-293.47")),
        ("R$ -293,47", Decimal("-293.47")),
        ("-R$ 293,47", Decimal("-293.47")),
        ("-10.005", Decimal("-10.00")),  # to the cent, half to even
        (88, Decimal("88.00")),
        (88.5, Decimal("88.50")),
        ("9999999999.99", Decimal("9999999999.99")),
        ("10000000000.00", None),  # more than Fine.amount holds
        ("9999999999.995", None),  # ...once rounded to the cent
        (10**12, None),
        ("1e40", None),
        ("12.93,47", None),  # thousands not in threes: not a number anyone writes
        ("1.293.000", None),
        ("- -1", None),
        ("NaN", None),
        ("Infinity", None),
        ("a lot", None),
        ("R$", None),
        ("", None),
        (None, None),
        (True, None),
        ({"value": 1}, None),
    ],
)
def test_amounts_in_either_notation_with_or_without_reais(sent, read):
    assert parse_amount(sent) == read
    assert payload_amount({"amount": sent}) == read


def test_a_missing_amount_or_payload_is_no_amount():
    assert payload_amount({}) is None
    assert payload_amount(["amount", "1.00"]) is None


@pytest.mark.parametrize(
    ("sent", "read"),
    [
        ("2026-11-20T13:45:00Z", COMMITTED),
        ("2026-11-20T10:45:00-03:00", COMMITTED),
        ("2026-11-20T13:45:00.000+00:00", COMMITTED),
        # No offset: UTC (the spec is silent; the platform's own times are UTC).
        ("2026-11-20T13:45:00", COMMITTED),
        ("2026-11-20 13:45", COMMITTED),
        ("2026-11-20", datetime(2026, 11, 20, tzinfo=UTC)),
        (EPOCH, COMMITTED),
        (float(EPOCH), COMMITTED),
        (str(EPOCH), COMMITTED),
        (EPOCH * 1000, COMMITTED),  # milliseconds
        (str(EPOCH * 1000), COMMITTED),
        # As a Brazilian writes it: Brasília time, so a date alone stays the 20th.
        ("20/11/2026 10:45", COMMITTED),
        ("20/11/2026 10:45:00", COMMITTED),
        ("20/11/2026", datetime(2026, 11, 20, 3, 0, tzinfo=UTC)),
        ("32/11/2026", None),
        ("yesterday", None),
        (10**20, None),
        ("", None),
        (None, None),
        (True, None),
        ({"at": EPOCH}, None),
    ],
)
def test_times_as_iso_epoch_or_brazilian_dates(sent, read):
    moment = parse_moment(sent)

    assert moment == read
    assert moment is None or moment.tzinfo is not None
    assert payload_occurred_at({"occurredAt": sent}) == read


@pytest.mark.parametrize(
    ("sent", "day"),
    [
        ("2031-05-01", date(2031, 5, 1)),
        ("2031-05-01T00:00:00-03:00", date(2031, 5, 1)),  # the day as written, not UTC's
        ("2031-05-01T23:30:00Z", date(2031, 5, 1)),
        ("01/05/2031", date(2031, 5, 1)),
        ("2031-02-30", None),
        ("soon", None),
        ("", None),
        (None, None),
    ],
)
def test_a_licences_days_are_read_by_the_same_reader(sent, day):
    assert parse_day(sent) == day
    answer = {"cpf": "52998224725", "name": "Ana", "expiresAt": sent, "firstLicenceAt": sent}
    licence = cnh_lookup_from_json(answer, cpf="52998224725").licence
    assert licence is not None
    assert (licence.expires_on, licence.first_licence_on) == (day, day)


# What each surface shows of the fine below, in Brazilian Portuguese and São Paulo time.
READABLE = {
    "amount": "R$ 1.293,47",
    "number": "1.293,47",
    "cell": "1293,47",
    "json amount": "1293.47",
    "moment": "20/11/2026 10:45",
    "json moment": "2026-11-20T13:45:00Z",
}


@pytest.mark.parametrize(
    ("amount", "occurred", "shown"),
    [
        pytest.param("R$ 1.293,47", "2026-11-20T10:45:00-03:00", READABLE, id="brazilian"),
        pytest.param("1,293.47", EPOCH, READABLE, id="english-and-epoch"),
        pytest.param(1293.47, "20/11/2026 10:45", READABLE, id="json-number-and-brazilian-date"),
        pytest.param(
            "a lot",
            "yesterday",
            dict.fromkeys(("amount", "cell", "json amount"), "a lot")
            | dict.fromkeys(("moment", "json moment"), "yesterday"),
            id="as-sent",
        ),
    ],
)
@pytest.mark.django_db
def test_every_surface_shows_the_stored_amount_and_time(
    client, manager, emulator, amount, occurred, shown
):
    with time_machine.travel(datetime(2026, 12, 1, 12, 0, tzinfo=UTC)):
        vehicle = next(v for v in emulator.vehicles() if v["driver_id"] is not None)
        plate = plates.normalize(vehicle["car_plate"])
        manager.email = "marcos@example.com"
        manager.save()
        grant_whole_fleet(manager)  # alerted of every vehicle's fines
        alert_preferences_save(user=manager, delivery="immediate")
        vehicle_search()  # the vehicle list the fine's driver is taken from

        fine = fine_delivered(client, plate=plate, amount=amount, occurred=occurred)

        stored = _stored(fine)
        if stored:
            assert (fine.amount, fine.occurred_at) == (Decimal("1293.47"), COMMITTED)
        client.force_login(manager)
        pages = {
            "fines list": client.get("/fines/").text,
            "fine page": client.get(fine.get_absolute_url()).text,
            "vehicle page": client.get(f"/vehicles/{plate}/").text,
            "driver page": client.get(f"/drivers/{vehicle['driver_id']}/").text,
        }
        dashboard = client.get("/").text
        export = client.get("/fines/export.csv")
        alert = Alert.objects.get(fine=fine, channel=AlertChannel.EMAIL)
        message = alert_email(
            user=manager, alerts=[alert], language="pt-br", time_zone="America/Sao_Paulo"
        ).message()
        sent = webhook_payload(alert)["data"]

    pages |= {"e-mail text": text_of(message), "e-mail html": html_of(message)}
    for surface, text in pages.items():
        assert shown["amount"] in text, surface
        assert shown["moment"] in text, surface
    (row,) = _csv_rows(export)
    assert row[3:5] == [shown["moment"], shown["cell"]]
    assert (sent["amount"], sent["occurred_at"]) == (shown["json amount"], shown["json moment"])
    if stored:
        assert f'data-testid="untreated-amount">R$&nbsp;{shown["number"]}<' in dashboard
        month = re.search(r'<tr data-testid="month" data-month="2026-11">.*?</tr>', dashboard, re.S)
        assert month is not None
        assert f'data-testid="month-amount">{shown["number"]}<' in month[0]
        assert f'data-testid="vehicle-amount">{shown["number"]}<' in dashboard
        # The driver is the vehicle list's (no history): not ranked, its fine left out.
        left_out = re.search(r'data-testid="left-out-probable"[^>]*>(.*?)</a>', dashboard, re.S)
        assert left_out is not None
        assert f"(R$ {shown['number']})" in left_out[1]
    else:  # counted, without an amount to add or a month to put it in
        assert 'data-testid="untreated-amount">R$&nbsp;0,00<' in dashboard
        assert 'data-testid="month-count">1<' not in dashboard


def fine_delivered(client, *, plate, amount, occurred, **fields) -> Fine:
    """The fine as the platform sends it (with `fields` beside the spec's), through the
    receiver and the worker's processing."""
    frame = {
        "id": 100001,
        "carPlate": plate,
        "autoInfracao": "E0100001",
        "description": "Avançar o sinal vermelho do semáforo",
        "occurredAt": occurred,
        "amount": amount,
        "treated": False,
        **fields,
    }
    body = json.dumps({"frame": frame, "linkFrame": None, "link": "https://boletos.example/1"})
    response = client.post(WEBHOOK, data=body, content_type="application/json")
    assert response.status_code == 202, response.content
    deliveries_process_received()
    return Fine.objects.get()


def _stored(fine: Fine) -> bool:
    """Whether the fine's columns hold its amount and time (both, or neither, here)."""
    assert (fine.amount is None) == (fine.occurred_at is None)
    return fine.amount is not None


def _csv_rows(response) -> list[list[str]]:
    text = b"".join(response.streaming_content).decode("utf-8").removeprefix("\ufeff")
    _header, *rows = csv.reader(io.StringIO(text), delimiter=";")
    return rows
