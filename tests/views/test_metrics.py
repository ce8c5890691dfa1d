"""`/metrics`: Prometheus' format for a scraper with the token, nothing for anyone else;
what the portal did (requests, Fleet API calls, deliveries, sign-ins, the vehicle list,
tasks) counted as it happens, and its backlog read at each scrape. Never a plate, a CPF,
an e-mail or a token in it.

The counts of this test process add up across tests: each test compares a scrape before
with one after."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
import time_machine
from django.test import Client
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from fleet import plates
from portal.lib import worker
from tests.conftest import run_tasks

pytestmark = pytest.mark.django_db

TOKEN = "prometheus-scrapes-with-this-Vq3nY8tZ2kL9wR4x"
RECEIVER = "/webhooks/fleet/dev-webhook-token/"

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


@pytest.fixture
def metrics_token(settings: Any) -> str:
    settings.METRICS_TOKEN = TOKEN
    return TOKEN


def scrape(token: str = TOKEN) -> Samples:
    answer = Client().get("/metrics", headers={"Authorization": f"Bearer {token}"})
    assert answer.status_code == 200, answer.content
    assert answer["Content-Type"].startswith("text/plain; version=")
    assert "no-store" in answer["Cache-Control"]
    samples: Samples = {}
    for family in text_string_to_metric_families(answer.content.decode()):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def grew(before: Samples, after: Samples, name: str, **labels: str) -> float:
    return value(after, name, **labels) - value(before, name, **labels)


def test_without_a_token_configured_the_path_does_not_exist(client, settings):
    settings.METRICS_TOKEN = ""
    answer = client.get("/metrics", headers={"Authorization": "Bearer anything"})
    assert answer.status_code == 404
    assert b"fleet_portal" not in answer.content


@pytest.mark.parametrize(
    "authorization",
    [None, "Bearer", "Bearer wrong-token", f"Basic {TOKEN}", f"Bearer {TOKEN}x", TOKEN],
    ids=["missing", "empty", "wrong", "basic", "longer", "no-scheme"],
)
def test_a_missing_or_wrong_token_is_refused(client, metrics_token, authorization):
    headers = {"Authorization": authorization} if authorization else {}
    answer = client.get("/metrics", headers=headers)
    assert answer.status_code == 401
    assert answer["WWW-Authenticate"].startswith("Bearer")
    assert b"fleet_portal" not in answer.content


def test_a_signed_in_administrator_without_the_token_is_refused_too(admin_client, metrics_token):
    assert admin_client.get("/metrics").status_code == 401


def test_requests_are_counted_by_view_and_status_never_by_path(
    manager_client, metrics_token, emulator
):
    plate = emulator.vehicles()[0]["car_plate"]
    before = scrape()
    assert manager_client.get("/vehicles/").status_code == 200
    assert manager_client.get(f"/vehicles/{plate}/").status_code in (200, 302)
    assert manager_client.get("/no/such/page/").status_code == 404
    after = scrape()

    assert (
        grew(
            before,
            after,
            "fleet_portal_http_requests_total",
            view="fleet:vehicles",
            method="GET",
            status="200",
        )
        == 1
    )
    assert (
        grew(
            before,
            after,
            "fleet_portal_http_requests_total",
            view="unmatched",
            method="GET",
            status="404",
        )
        == 1
    )
    assert (
        grew(
            before,
            after,
            "fleet_portal_http_request_duration_seconds_count",
            view="fleet:vehicles",
            method="GET",
        )
        == 1
    )
    views = {dict(labels).get("view") for (_name, labels) in after}
    assert not any(plate in str(view) or "/" in str(view) for view in views)


def test_fleet_api_calls_are_counted_by_route_and_outcome_with_their_cooldowns(
    manager_client, metrics_token, emulator
):
    before = scrape()
    assert manager_client.get("/vehicles/").status_code == 200  # the list fetched: ok
    emulator.fault("/v2/crlv/vehicles/{carPlate}", status=429, retry_after=30)
    plate = emulator.vehicles()[0]["car_plate"]
    manager_client.get(f"/vehicles/{plate}/")
    after = scrape()

    assert (
        grew(
            before,
            after,
            "fleet_portal_fleet_api_calls_total",
            endpoint="/key/list-cars",
            outcome="ok",
        )
        == 1
    )
    assert (
        grew(
            before,
            after,
            "fleet_portal_fleet_api_call_duration_seconds_count",
            endpoint="/key/list-cars",
        )
        == 1
    )
    assert (
        grew(
            before,
            after,
            "fleet_portal_fleet_api_calls_total",
            endpoint="/v2/crlv/vehicles/{carPlate}",
            outcome="rate_limited",
        )
        >= 1
    )
    assert grew(before, after, "fleet_portal_fleet_api_cooldowns_total", status="429") >= 1


def test_the_vehicle_list_cache_counts_its_refreshes_and_hits_and_tells_its_age(
    manager_client, metrics_token, emulator
):
    with time_machine.travel(timezone.now(), tick=False) as clock:
        before = scrape()
        manager_client.get("/vehicles/")
        manager_client.get("/vehicles/")
        clock.shift(timedelta(seconds=42))
        after = scrape()
    assert grew(before, after, "fleet_portal_vehicle_cache_total", event="miss") == 1
    assert grew(before, after, "fleet_portal_vehicle_cache_total", event="refresh") == 1
    assert grew(before, after, "fleet_portal_vehicle_cache_total", event="hit") >= 1
    assert 42 <= value(after, "fleet_portal_vehicle_cache_age_seconds") < 43


def fine(number: int, plate: str) -> bytes:
    return json.dumps(
        {
            "frame": {
                "id": number,
                "carPlate": plate,
                "autoInfracao": f"E0{number}",
                "description": "Avançar o sinal vermelho",
                "occurredAt": "2026-11-20T13:45:00Z",
                "amount": "293.47",
                "treated": False,
            },
            "linkFrame": None,
            "link": None,
        }
    ).encode()


@pytest.mark.django_db(transaction=True)
def test_deliveries_are_counted_at_each_stage_and_the_backlog_is_read_at_each_scrape(
    client, metrics_token, settings
):
    settings.FLEET_WEBHOOK_BATCH_SECONDS = 0
    with time_machine.travel(timezone.now(), tick=False) as clock:
        before = scrape()
        assert client.post(RECEIVER, fine(1, "ABC1D23"), content_type="application/json")
        assert client.post(RECEIVER, b"not json", content_type="text/plain").status_code == 415
        wrong = client.post("/webhooks/fleet/nope/", b"{}", content_type="application/json")
        assert wrong.status_code == 404
        clock.shift(timedelta(seconds=90))
        waiting = scrape()
        assert value(waiting, "fleet_portal_webhook_unprocessed") == 1
        assert value(waiting, "fleet_portal_webhook_oldest_unprocessed_age_seconds") == 90
        assert value(waiting, "fleet_portal_task_queue_depth", queue="webhooks") >= 1
        assert value(waiting, "fleet_portal_task_queue_oldest_age_seconds", queue="webhooks") >= 90
        run_tasks()
        after = scrape()

    assert grew(before, after, "fleet_portal_webhook_deliveries_total", stage="received") == 3
    assert grew(before, after, "fleet_portal_webhook_deliveries_total", stage="refused") == 1
    assert grew(before, after, "fleet_portal_webhook_deliveries_total", stage="stored") == 2
    assert grew(before, after, "fleet_portal_webhook_deliveries_total", stage="invalid") == 1
    assert grew(before, after, "fleet_portal_webhook_deliveries_total", stage="processed") == 1
    assert value(after, "fleet_portal_webhook_unprocessed") == 0
    assert value(after, "fleet_portal_webhook_oldest_unprocessed_age_seconds") == 0
    assert value(after, "fleet_portal_task_queue_depth", queue="webhooks") == 0
    assert (
        grew(before, after, "fleet_portal_tasks_total", queue="webhooks", outcome="succeeded") >= 1
    )
    # A scrape never shows what the deliveries held.
    text = Client().get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"}).content
    for secret in ("ABC1D23", plates.display("ABC1D23"), "dev-webhook-token", "E01"):
        assert secret.encode() not in text


@pytest.mark.django_db(transaction=True)
def test_a_task_waiting_past_its_time_shows_as_worker_lag(metrics_token):
    with time_machine.travel(timezone.now(), tick=False) as clock:
        worker.enqueue("alerts.tasks.alerts_send")
        clock.shift(timedelta(seconds=75))
        lagging = scrape()
        assert value(lagging, "fleet_portal_task_queue_depth", queue="alerts") == 1
        assert value(lagging, "fleet_portal_task_queue_oldest_age_seconds", queue="alerts") == 75
        assert value(lagging, "fleet_portal_task_queue_oldest_age_seconds", queue="cnh") == 0
        # One due later is not lag.
        worker.enqueue("cnh_lookups_purge", run_after=timezone.now() + timedelta(hours=3))
        assert value(scrape(), "fleet_portal_task_queue_depth", queue="cnh") == 0
        run_tasks()
        assert value(scrape(), "fleet_portal_task_queue_oldest_age_seconds", queue="alerts") == 0


def test_local_sign_ins_are_counted_by_outcome(client, manager, metrics_token):
    before = scrape()
    assert (
        client.post("/accounts/login/", {"username": "manager", "password": "wrong"}).status_code
        == 200
    )
    assert (
        client.post(
            "/accounts/login/", {"username": "manager", "password": "manager-demo-password"}
        ).status_code
        == 302
    )
    after = scrape()
    assert grew(before, after, "fleet_portal_sign_ins_total", method="local", outcome="failed") == 1
    assert (
        grew(before, after, "fleet_portal_sign_ins_total", method="local", outcome="signed_in") == 1
    )
    text = Client().get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"}).content
    assert b"manager" not in text.replace(b"fleet_portal", b"")


def test_the_families_exposed_are_those_the_rules_and_the_dashboard_name(metrics_token):
    """tests/deploy/metric_names.py is what deploy/prometheus and deploy/grafana are
    checked against: a metric added, renamed or dropped here must be named there too."""
    from tests.deploy.metric_names import COUNTERS, GAUGES, HISTOGRAMS

    answer = Client().get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    families = {
        family.name
        for family in text_string_to_metric_families(answer.content.decode())
        if family.name.startswith("fleet_portal")
    }
    assert families == COUNTERS | HISTOGRAMS | GAUGES
