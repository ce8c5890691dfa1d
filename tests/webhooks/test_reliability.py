"""The reliability check of bench/webhooks_reliability.py, smaller: the emulator sends
duplicated, shuffled, partly malformed deliveries with extra keys to a live portal,
a real `manage.py db_worker` processes them, and nothing is lost or applied twice."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from typing import Any

import pytest

from bench.webhooks_reliability import check, portal_state
from tests.conftest import ROOT

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("db_worker")]


def send(live_server, tmp_path, *extra: str) -> dict[str, Any]:
    """Have the emulator send, then wait until the worker has processed every delivery."""
    manifest = tmp_path / "manifest.json"
    completed = subprocess.run(
        [
            sys.executable, "-m", "emulator", "send-webhooks",
            "--url", f"{live_server.url}/webhooks/fleet/dev-webhook-token/",
            "--manifest", str(manifest), *extra,
        ],
        cwd=ROOT, capture_output=True, text=True, timeout=100, check=False,
    )  # fmt: skip
    assert completed.returncode == 0, completed.stdout + completed.stderr
    from fleet.models import DeliveryStatus, WebhookDelivery

    deadline = time.monotonic() + 60
    while WebhookDelivery.objects.filter(status=DeliveryStatus.RECEIVED).exists():
        assert time.monotonic() < deadline, "the worker left deliveries unprocessed"
        time.sleep(0.05)
    return json.loads(manifest.read_text())


def test_every_delivery_is_stored_and_every_record_is_there_once_in_its_final_state(
    live_server, tmp_path
):
    manifest = send(
        live_server, tmp_path,
        "--count", "400", "--duplicates", "0.2", "--malformed", "0.05",
        "--shuffle", "--extra-keys", "--concurrency", "4", "--seed", "7",
    )  # fmt: skip

    verdict = check(manifest, portal_state())

    assert verdict.problems == []
    assert verdict.counts["stored"] == 400
    assert verdict.counts["malformed kept for replay"] >= 20
    assert verdict.counts["records present"] == verdict.counts["records expected"] > 100


def test_the_check_sees_a_record_that_is_not_in_its_final_state(live_server, tmp_path):
    from fleet.models import Fine

    manifest = send(live_server, tmp_path, "--count", "60", "--seed", "3")
    Fine.objects.filter(pk=Fine.objects.filter(treated=True).first().pk).update(treated=False)

    problems = check(manifest, portal_state()).problems

    assert any("not in their final state" in problem for problem in problems)


def test_the_check_sees_a_lost_delivery(live_server, tmp_path):
    from fleet.models import WebhookDelivery

    manifest = send(live_server, tmp_path, "--count", "30", "--seed", "4")
    WebhookDelivery.objects.filter(pk=WebhookDelivery.objects.earliest("pk").pk).delete()

    problems = check(manifest, portal_state()).problems

    assert "1 deliveries sent were not stored" in problems
