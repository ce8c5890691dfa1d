"""What `make soak` (bench/soak.py) takes from deploy/, and how it tells a fault's 5xx
from an unexplained one. The soak itself runs in .ci/run, after the suites."""

from __future__ import annotations

import sys

import requests

from bench.soak import WEBHOOK_ROUTE, Fault, Request, Timeline, _explanation
from bench.soak_services import read_unit
from bench.soak_subscribers import Interruption, Subscribers
from tests.conftest import ROOT


def test_the_soak_runs_the_portal_and_its_worker_as_the_shipped_units_do():
    portal = read_unit("fleet-portal.service")
    worker = read_unit("fleet-portal-worker.service")

    config = str(ROOT / "deploy" / "gunicorn.conf.py")
    assert portal.command == [sys.executable, "-m", "gunicorn", "--config", config]
    assert worker.command == [sys.executable, "manage.py", "db_worker"]
    assert (worker.nice, worker.restart_seconds) == (5, 2.0)


KILL = Fault("gunicorn worker SIGKILLed", start=100.0, end=100.0, grace=3)
EMULATOR_503 = Fault("emulator 503", start=200.0, end=210.0, grace=15)


def test_a_request_under_way_when_a_worker_is_killed_is_explained_by_it():
    in_flight = Request(at=99.0, route="/fines/", status=502, milliseconds=1500)
    just_after = Request(at=102.0, route="/fines/", status=502, milliseconds=5)

    assert _explanation(in_flight, [KILL]) == KILL.name
    assert _explanation(just_after, [KILL]) == KILL.name


def test_a_5xx_before_or_well_after_a_fault_is_unexplained():
    before = Request(at=90.0, route="/fines/", status=500, milliseconds=20)
    long_after = Request(at=104.0, route="/fines/", status=500, milliseconds=20)

    assert _explanation(before, [KILL]) is None
    assert _explanation(long_after, [KILL]) is None


def test_the_fleet_apis_faults_never_explain_a_failed_webhook_delivery():
    page = Request(at=205.0, route="/vehicles/[plate]/", status=503, milliseconds=30)
    delivery = Request(at=205.0, route=WEBHOOK_ROUTE, status=503, milliseconds=30)

    assert _explanation(page, [EMULATOR_503]) == EMULATOR_503.name
    assert _explanation(delivery, [EMULATOR_503]) is None


def test_the_ten_minute_run_has_two_bursts_of_30_s_at_the_rate_asked():
    timeline = Timeline(600.0, 220)

    assert [(b["start"], b["end"] - b["start"]) for b in timeline.bursts] == [
        (180.0, 30.0),
        (468.0, 30.0),
    ]
    assert timeline.deliveries == 13_200
    assert timeline.without_slow[1] <= 90.0 <= timeline.with_slow[0]  # slowloris opens at 90 s


def test_the_healthy_subscriber_counts_lost_alerts_and_repeats_no_interruption_explains():
    subscribers = Subscribers()
    try:
        for message in ("msg_1", "msg_2", "msg_2", "msg_3", "msg_3"):
            requests.post(
                subscribers.healthy.url, data=b"{}", headers={"webhook-id": message}, timeout=5
            )
        first = subscribers.healthy.first_at
        # The POSTs came a few milliseconds apart: windows of an instant each.
        kill = Interruption("db_worker SIGKILLed", first["msg_2"], first["msg_2"])
        restart = Interruption("PostgreSQL restarted", first["msg_3"], first["msg_3"])
        long_before = Interruption("Redis restarted", first["msg_1"] - 60, first["msg_1"] - 50)
        held = {"alerts": {}, "ok": 0, "errors": {}, "longest_ms": 0}
        state = {
            "healthy": {
                "alerts": {"sent": 4, "pending": 1},
                "sent_ids": ["msg_1", "msg_2", "msg_3", "msg_4"],
            },
            "drips": held,
            "never answers": held,
        }

        # msg_4 sent but never received, one alert still waiting; two repeats, each first
        # received while something came between a POST's answer and its mark, or not.
        assert subscribers.report(state, interruptions=[kill, restart]) == 2
        assert subscribers.report(state, interruptions=[kill]) == 2 + 1
        assert subscribers.report(state, interruptions=[long_before]) == 2 + 2
        # A fault between a repeat's two receipts explains it however long after the first
        # it came (a busy worker marks late); one after the last explains nothing.
        last = subscribers.healthy.last_at
        between = [
            Interruption(name, moment, moment)
            for name, moment in (
                ("db_worker SIGKILLed", (first["msg_2"] + last["msg_2"]) / 2),
                ("PostgreSQL restarted", (first["msg_3"] + last["msg_3"]) / 2),
            )
        ]
        after = Interruption("db_worker SIGKILLed", last["msg_3"] + 10, last["msg_3"] + 20)
        assert subscribers.report(state, interruptions=between) == 2
        assert subscribers.report(state, interruptions=[after]) == 2 + 2
    finally:
        subscribers.stop()
