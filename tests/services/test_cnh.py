"""CNH lookups in the background: the real worker loop, the emulator over HTTP, time-machine.

Each test runs django-tasks-db's worker in this process (`run_tasks`) so that
time-machine drives the clock it schedules retries by; the emulator's timeout
CPF answers 504 with `Retry-After: 30` after 0.2 s.

Lookups are charged (spec 4.5): a call that was sent and got no answer, a
success answer that cannot be read, and a call its worker may have been
making when it died are never sent again by themselves, whatever the budget
of attempts.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.db import transaction
from django.tasks import TaskResultStatus
from django.utils import translation
from django_tasks_db.models import DBTaskResult

from bench.servers import free_port
from fleet.api.client import CNH_READ_TIMEOUT
from fleet.models import CnhItemStatus, CnhLookup, CnhLookupStatus, CnhReason
from fleet.services.cnh import (
    INTERRUPTED,
    RUNNING_LEASE,
    UNREADABLE,
    InvalidCpfs,
    _claim,
    cnh_lookup_create,
    cnh_lookup_process,
    cnh_lookup_recover,
    cnh_lookup_retry_failed,
)
from fleet.services.cnh_results import cnh_lookup_rows
from fleet.services.connection import fleet_client
from tests.conftest import Emulator, run_tasks

pytestmark = pytest.mark.django_db(transaction=True)

START = datetime(2026, 11, 23, 13, 0, tzinfo=UTC)
TIMEOUT_CPF, NO_LICENCE_CPF = "50450450406", "00000040495"
CPF, OTHER_CPF = "52998224725", "11144477735"
LOOKUP, BATCH = "/v2/cnh/lookup", "/v2/cnh/lookup/batch"
LOOKUP_CALLS, BATCH_CALLS = f"POST {LOOKUP}", f"POST {BATCH}"


@pytest.fixture
def owner(django_user_model, fleet_settings):
    return django_user_model.objects.create_user(username="marcos", password="x")


@pytest.fixture
def clock():
    with time_machine.travel(START, tick=False) as traveller:
        yield traveller


def single(owner, cpf: str) -> CnhLookup:
    return cnh_lookup_create(owner=owner, cpfs=[cpf], batch=False, purpose="periodic")


def fresh(lookup: CnhLookup) -> CnhLookup:
    lookup.refresh_from_db()
    return lookup


def item_statuses(lookup: CnhLookup) -> list[str]:
    return list(lookup.items.order_by("position").values_list("status", flat=True))


LOOKUP_TASK = "fleet.tasks.cnh_lookup_run"


def tasks_waiting() -> int:
    """Lookup tasks enqueued and not run yet, whenever they are due."""
    return DBTaskResult.objects.filter(task_path=LOOKUP_TASK, status=TaskResultStatus.READY).count()


def sweeps_waiting() -> int:
    """Runs of the sweep of lookups left running, enqueued and not run yet."""
    waiting = DBTaskResult.objects.filter(status=TaskResultStatus.READY)
    return waiting.filter(task_path="fleet.tasks.cnh_lookups_recover").count()


def closed_port_url() -> str:
    """A loopback URL nobody listens on: connections are refused, nothing is sent."""
    return f"http://127.0.0.1:{free_port()}"


# --- Individual lookups: 504, Retry-After, bounded retries ------------------------------


def test_the_timeout_cpf_is_retried_after_retry_after_and_then_gets_its_licence(
    owner, emulator: Emulator, clock
):
    emulator.control("POST", "cnh", recover_after=1)  # the licensing service comes back
    lookup = single(owner, TIMEOUT_CPF)

    assert run_tasks() == 1
    waiting = fresh(lookup)
    assert waiting.status == CnhLookupStatus.WAITING_RETRY
    assert waiting.reason == CnhReason.UPSTREAM_TIMEOUT
    assert waiting.attempts == 1
    assert waiting.next_attempt_at == START + timedelta(seconds=30)
    assert emulator.calls(LOOKUP_CALLS) == 1

    clock.shift(29)
    assert run_tasks() == 0  # not before Retry-After
    assert emulator.calls(LOOKUP_CALLS) == 1

    clock.shift(1)
    assert run_tasks() == 1
    done = fresh(lookup)
    assert done.status == CnhLookupStatus.DONE
    assert (done.attempts, done.reason, done.next_attempt_at) == (2, "", None)
    assert done.finished_at == START + timedelta(seconds=30)
    (row,) = cnh_lookup_rows(lookup=done)
    assert row.status == CnhItemStatus.OK
    assert row.licence is not None
    assert row.licence.name
    assert emulator.calls(LOOKUP_CALLS) == 2


def test_the_timeout_cpf_fails_for_good_after_the_last_attempt_and_is_not_retried_again(
    owner, emulator: Emulator, clock, settings
):
    settings.FLEET_CNH_MAX_ATTEMPTS = 3
    lookup = single(owner, TIMEOUT_CPF)

    for attempt in (1, 2):
        assert run_tasks() == 1
        assert fresh(lookup).status == CnhLookupStatus.WAITING_RETRY
        assert lookup.attempts == attempt
        clock.shift(30)
    assert run_tasks() == 1

    failed = fresh(lookup)
    assert failed.status == CnhLookupStatus.FAILED
    assert failed.reason == CnhReason.UPSTREAM_TIMEOUT
    assert failed.attempts == 3
    assert "HTTP 504" in failed.detail
    assert item_statuses(failed) == [CnhItemStatus.ERROR]
    assert failed.items.get().error_code == "gateway-timeout"
    clock.shift(3600)
    assert run_tasks() == 0
    assert emulator.calls(LOOKUP_CALLS) == 3


def test_without_retry_after_the_waits_double_from_30_s(owner, emulator: Emulator, clock):
    emulator.fault("/v2/cnh/lookup", status=504, count=2)
    lookup = single(owner, CPF)

    run_tasks()
    assert fresh(lookup).next_attempt_at == START + timedelta(seconds=30)
    assert lookup.reason == CnhReason.UPSTREAM_TIMEOUT
    clock.shift(30)
    run_tasks()
    assert fresh(lookup).next_attempt_at == START + timedelta(seconds=30 + 60)
    assert lookup.reason == CnhReason.UPSTREAM_TIMEOUT
    clock.shift(60)
    run_tasks()

    assert fresh(lookup).status == CnhLookupStatus.DONE
    assert emulator.calls(LOOKUP_CALLS) == 3


@pytest.mark.parametrize(
    ("route", "calls", "batch"), [(LOOKUP, LOOKUP_CALLS, False), (BATCH, BATCH_CALLS, True)]
)
def test_a_rate_limit_is_waited_out_for_its_retry_after(
    owner, emulator: Emulator, clock, route, calls, batch
):
    emulator.fault(route, status=429, retry_after=7)
    lookup = cnh_lookup_create(owner=owner, cpfs=[CPF], batch=batch, purpose="periodic")

    run_tasks()
    assert fresh(lookup).status == CnhLookupStatus.WAITING_RETRY
    assert lookup.reason == CnhReason.RATE_LIMITED
    assert lookup.next_attempt_at == START + timedelta(seconds=7)
    clock.shift(6)
    assert run_tasks() == 0  # not before Retry-After
    assert emulator.calls(calls) == 1
    clock.shift(1)
    assert run_tasks() == 1

    assert fresh(lookup).status == CnhLookupStatus.DONE
    assert item_statuses(lookup) == [CnhItemStatus.OK]
    assert lookup.finished_at == START + timedelta(seconds=7)
    assert emulator.calls(calls) == 2


def test_rate_limits_count_against_the_attempts_too(owner, emulator: Emulator, clock, settings):
    settings.FLEET_CNH_MAX_ATTEMPTS = 2
    emulator.fault(LOOKUP, status=429, retry_after=5, count=2)
    lookup = single(owner, CPF)

    run_tasks()
    clock.shift(5)
    run_tasks()

    failed = fresh(lookup)
    assert (failed.status, failed.reason, failed.attempts) == ("failed", "rate_limited", 2)
    clock.shift(3600)
    assert run_tasks() == 0
    assert emulator.calls(LOOKUP_CALLS) == 2


def test_refused_credentials_fail_at_once_without_retrying(owner, emulator: Emulator, clock):
    emulator.fault("/v2/cnh/lookup", status=401)
    lookup = single(owner, CPF)

    run_tasks()

    failed = fresh(lookup)
    assert failed.status == CnhLookupStatus.FAILED
    assert failed.reason == CnhReason.CREDENTIALS_REJECTED
    assert failed.attempts == 1
    clock.shift(3600)
    assert run_tasks() == 0


def test_a_cpf_without_a_licence_is_an_answer_not_a_failure(owner, emulator: Emulator, clock):
    lookup = single(owner, NO_LICENCE_CPF)

    run_tasks()

    done = fresh(lookup)
    assert done.status == CnhLookupStatus.DONE
    (row,) = cnh_lookup_rows(lookup=done)
    assert row.status == CnhItemStatus.ERROR
    assert row.error_code == "not-found"
    with translation.override("en"):
        assert row.problem == "No driver licence was found for this CPF."


# --- Charged lookups: what got no answer is never sent again by itself ----------------

# Sent, and no answer: the connection closed at once, or after half an answer.
NO_ANSWER_FAULTS = [
    pytest.param({"drop": True}, id="dropped"),
    pytest.param({"cut": True}, id="cut"),
]


@pytest.mark.parametrize("fault", NO_ANSWER_FAULTS)
def test_an_individual_lookup_that_got_no_answer_ends_with_an_unknown_outcome_unsent_again(
    owner, emulator: Emulator, clock, fault
):
    emulator.fault(LOOKUP, **fault, count=5)  # a second call, if any, would fail the same way
    lookup = single(owner, CPF)

    assert run_tasks() == 1

    unknown = fresh(lookup)
    assert unknown.status == CnhLookupStatus.UNKNOWN
    assert unknown.is_final
    assert (unknown.reason, unknown.attempts, unknown.next_attempt_at) == ("no_answer", 1, None)
    assert unknown.finished_at == START
    assert "The Fleet API is unavailable" in unknown.detail
    assert item_statuses(unknown) == [CnhItemStatus.UNKNOWN]
    assert tasks_waiting() == 0  # no retry is scheduled
    clock.shift(3600)
    assert run_tasks() == 0
    assert emulator.calls(LOOKUP_CALLS) == 1
    (row,) = cnh_lookup_rows(lookup=unknown)
    with translation.override("en"):
        assert "may have been looked up, and charged" in row.problem


def test_an_unknown_outcome_is_sent_again_only_when_a_second_charge_is_accepted(
    owner, emulator: Emulator, clock
):
    emulator.fault(LOOKUP, drop=True)
    lookup = single(owner, CPF)
    run_tasks()

    assert cnh_lookup_retry_failed(lookup=lookup) == 0
    assert fresh(lookup).status == CnhLookupStatus.UNKNOWN
    assert run_tasks() == 0
    assert emulator.calls(LOOKUP_CALLS) == 1

    assert cnh_lookup_retry_failed(lookup=lookup, include_unknown=True) == 1
    assert run_tasks() == 1

    done = fresh(lookup)
    assert (done.status, done.reason, done.attempts) == ("done", "", 1)
    assert item_statuses(done) == [CnhItemStatus.OK]
    assert emulator.calls(LOOKUP_CALLS) == 2  # exactly one more call


@pytest.mark.parametrize("fault", NO_ANSWER_FAULTS)
def test_a_batch_that_got_no_answer_leaves_all_its_cpfs_unknown_and_is_not_sent_again(
    owner, emulator: Emulator, clock, fault
):
    emulator.fault(BATCH, **fault, count=5)
    lookup = cnh_lookup_create(owner=owner, cpfs=[CPF, OTHER_CPF], batch=True, purpose="periodic")

    assert run_tasks() == 1

    unknown = fresh(lookup)
    assert (unknown.status, unknown.reason, unknown.attempts) == ("unknown", "no_answer", 1)
    assert item_statuses(unknown) == [CnhItemStatus.UNKNOWN] * 2
    assert tasks_waiting() == 0
    clock.shift(3600)
    assert run_tasks() == 0
    assert emulator.calls(BATCH_CALLS) == 1

    emulator.control("DELETE", "faults")
    assert cnh_lookup_retry_failed(lookup=lookup, include_unknown=True) == 2
    assert run_tasks() == 1
    assert fresh(lookup).status == CnhLookupStatus.DONE
    assert item_statuses(lookup) == [CnhItemStatus.OK] * 2
    assert json.loads(emulator.requests()[-1]["body"]) == {"cpfs": [CPF, OTHER_CPF]}
    assert emulator.calls(BATCH_CALLS) == 2


def test_a_batch_retry_without_accepting_a_second_charge_leaves_the_unknown_cpfs_alone(
    owner, emulator: Emulator, clock
):
    lookup = cnh_lookup_create(
        owner=owner, cpfs=[CPF, TIMEOUT_CPF, OTHER_CPF], batch=True, purpose="periodic"
    )
    run_tasks()  # the timeout CPF in error, the others found
    emulator.fault(BATCH, drop=True)
    cnh_lookup_retry_failed(lookup=lookup)
    run_tasks()  # the timeout CPF sent again, no answer
    assert fresh(lookup).status == CnhLookupStatus.UNKNOWN
    assert item_statuses(lookup) == ["ok", "unknown", "ok"]
    # One CPF in error beside it (as when a later batch answer left one out).
    lookup.items.filter(cpf=OTHER_CPF).update(status=CnhItemStatus.ERROR, result=None)

    assert cnh_lookup_retry_failed(lookup=lookup) == 1
    assert run_tasks() == 1

    after = fresh(lookup)
    assert json.loads(emulator.requests()[-1]["body"]) == {"cpfs": [OTHER_CPF]}
    assert item_statuses(after) == ["ok", "unknown", "ok"]
    assert (after.status, after.reason) == ("unknown", "no_answer")  # still to be decided
    assert emulator.calls(BATCH_CALLS) == 3


@pytest.mark.parametrize("status", [500, 502, 503])
def test_a_server_error_answer_fails_with_its_reason_and_is_not_sent_again(
    owner, emulator: Emulator, clock, status
):
    emulator.fault(LOOKUP, status=status, count=5)
    lookup = single(owner, CPF)

    assert run_tasks() == 1

    failed = fresh(lookup)
    assert (failed.status, failed.reason, failed.attempts) == ("failed", "server_error", 1)
    assert f"HTTP {status}" in failed.detail
    assert item_statuses(failed) == [CnhItemStatus.ERROR]
    assert tasks_waiting() == 0
    clock.shift(3600)
    assert run_tasks() == 0
    assert emulator.calls(LOOKUP_CALLS) == 1
    # The manager may try again deliberately: one more call.
    emulator.control("DELETE", "faults")
    assert cnh_lookup_retry_failed(lookup=lookup) == 1
    assert run_tasks() == 1
    assert fresh(lookup).status == CnhLookupStatus.DONE
    assert emulator.calls(LOOKUP_CALLS) == 2


def test_a_connect_error_sent_nothing_and_is_retried_after_a_backoff(
    owner, emulator: Emulator, clock, settings
):
    settings.FLEET_BASE_URL = closed_port_url()  # refused: the request never leaves
    lookup = single(owner, CPF)

    assert run_tasks() == 1

    waiting = fresh(lookup)
    assert (waiting.status, waiting.reason, waiting.attempts) == ("waiting_retry", "unavailable", 1)
    assert waiting.next_attempt_at == START + timedelta(seconds=30)
    assert "could not connect" in waiting.detail
    assert item_statuses(waiting) == [CnhItemStatus.PENDING]
    settings.FLEET_BASE_URL = emulator.url  # the API can be reached again
    clock.shift(30)
    assert run_tasks() == 1

    assert fresh(lookup).status == CnhLookupStatus.DONE
    assert emulator.calls(LOOKUP_CALLS) == 1


# A 200 whose body cannot be read: not JSON, or JSON that is not a lookup's answer.
UNREADABLE_FAULTS = [
    pytest.param({"malformed": True}, id="not-json"),
    pytest.param({"body": ["not", "an", "answer"]}, id="wrong-shape"),
]


@pytest.mark.parametrize("fault", UNREADABLE_FAULTS)
def test_an_unreadable_success_answer_ends_with_an_unknown_outcome_unsent_again(
    owner, emulator: Emulator, clock, fault
):
    emulator.fault(LOOKUP, **fault, count=5)
    lookup = single(owner, CPF)

    assert run_tasks() == 1

    unknown = fresh(lookup)
    assert (unknown.status, unknown.reason, unknown.attempts) == ("unknown", "invalid_response", 1)
    assert unknown.is_final
    assert unknown.finished_at == START
    assert "HTTP 200" in unknown.detail
    assert item_statuses(unknown) == [CnhItemStatus.UNKNOWN]
    assert unknown.items.get().error_code == UNREADABLE
    assert tasks_waiting() == 0
    clock.shift(3600)
    assert run_tasks() == 0
    assert emulator.calls(LOOKUP_CALLS) == 1
    (row,) = cnh_lookup_rows(lookup=unknown)
    with translation.override("en"):
        assert "its answer could not be read" in row.problem
        assert "probably looked up, and charged" in row.problem

    # Only the manager's deliberate retry sends it again.
    assert cnh_lookup_retry_failed(lookup=lookup) == 0
    emulator.control("DELETE", "faults")
    assert cnh_lookup_retry_failed(lookup=lookup, include_unknown=True) == 1
    assert run_tasks() == 1
    assert fresh(lookup).status == CnhLookupStatus.DONE
    assert emulator.calls(LOOKUP_CALLS) == 2


def test_an_unreadable_batch_answer_leaves_all_its_cpfs_unknown(owner, emulator: Emulator, clock):
    emulator.fault(BATCH, malformed=True, count=5)
    lookup = cnh_lookup_create(owner=owner, cpfs=[CPF, OTHER_CPF], batch=True, purpose="periodic")

    assert run_tasks() == 1

    unknown = fresh(lookup)
    assert (unknown.status, unknown.reason) == ("unknown", "invalid_response")
    assert item_statuses(unknown) == [CnhItemStatus.UNKNOWN] * 2
    assert set(unknown.items.values_list("error_code", flat=True)) == {UNREADABLE}
    clock.shift(3600)
    assert run_tasks() == 0
    assert emulator.calls(BATCH_CALLS) == 1


def test_a_lookup_with_cpfs_left_unreadable_keeps_that_reason_after_retrying_the_others(
    owner, emulator: Emulator, clock
):
    lookup = cnh_lookup_create(
        owner=owner, cpfs=[CPF, TIMEOUT_CPF, OTHER_CPF], batch=True, purpose="periodic"
    )
    run_tasks()  # the timeout CPF in error, the others found
    emulator.fault(BATCH, malformed=True)
    cnh_lookup_retry_failed(lookup=lookup)
    run_tasks()  # the timeout CPF sent again, answered unreadably
    assert item_statuses(lookup) == ["ok", "unknown", "ok"]
    lookup.items.filter(cpf=OTHER_CPF).update(status=CnhItemStatus.ERROR, result=None)

    assert cnh_lookup_retry_failed(lookup=lookup) == 1
    assert run_tasks() == 1

    after = fresh(lookup)
    assert item_statuses(after) == ["ok", "unknown", "ok"]
    assert (after.status, after.reason) == ("unknown", "invalid_response")


# --- A worker that died in the middle of a lookup --------------------------------------


def worker_dies_during_its_call(lookup: CnhLookup, emulator: Emulator) -> None:
    """What a worker killed mid-call leaves: the lookup claimed (running), its task
    taken, and its call at the API, which did the lookup (and charged it)."""
    claimed = _claim(lookup.pk)
    assert claimed is not None
    DBTaskResult.objects.all().delete()
    cpfs = list(claimed.items.filter(status=CnhItemStatus.PENDING).values_list("cpf", flat=True))
    route, body = (
        (LOOKUP, {"cpf": cpfs[0]}) if claimed.kind == "single" else (BATCH, {"cpfs": cpfs})
    )
    emulator.http.post(
        f"{emulator.url}{route}", json=body, headers=emulator._api_headers(), timeout=10
    )


def test_a_lookup_left_running_past_its_lease_ends_unknown_and_is_not_sent_again(
    owner, emulator: Emulator, clock
):
    lookup = single(owner, CPF)
    worker_dies_during_its_call(lookup, emulator)

    clock.shift(RUNNING_LEASE.total_seconds())
    assert cnh_lookup_recover(lookup=fresh(lookup)) is False  # a call may still be under way
    assert lookup.status == CnhLookupStatus.RUNNING
    clock.shift(1)
    assert cnh_lookup_recover(lookup=lookup) is True

    assert lookup.status == CnhLookupStatus.UNKNOWN  # the object given is up to date
    unknown = fresh(lookup)
    assert (unknown.status, unknown.reason, unknown.attempts) == ("unknown", "no_answer", 1)
    assert unknown.finished_at == START + RUNNING_LEASE + timedelta(seconds=1)
    assert "worker stopped" in unknown.detail
    assert item_statuses(unknown) == [CnhItemStatus.UNKNOWN]
    assert unknown.items.get().error_code == INTERRUPTED
    assert tasks_waiting() == 0  # not queued again
    assert cnh_lookup_recover(lookup=unknown) is False
    clock.shift(3600)
    assert run_tasks() == 0
    assert emulator.calls(LOOKUP_CALLS) == 1  # the dead worker's call only
    (row,) = cnh_lookup_rows(lookup=unknown)
    with translation.override("en"):
        assert "interrupted while it was being sent" in row.problem
        assert "may have been looked up, and charged" in row.problem

    # Only the manager's deliberate retry sends it again.
    assert cnh_lookup_retry_failed(lookup=lookup) == 0
    assert cnh_lookup_retry_failed(lookup=lookup, include_unknown=True) == 1
    assert run_tasks() == 1
    assert fresh(lookup).status == CnhLookupStatus.DONE
    assert item_statuses(lookup) == [CnhItemStatus.OK]
    assert emulator.calls(LOOKUP_CALLS) == 2


def test_a_batch_retry_left_running_marks_only_its_pending_cpfs_unknown(
    owner, emulator: Emulator, clock
):
    lookup = cnh_lookup_create(
        owner=owner, cpfs=[CPF, TIMEOUT_CPF, OTHER_CPF], batch=True, purpose="periodic"
    )
    run_tasks()  # the timeout CPF in error, the others found
    found = dict(lookup.items.filter(status="ok").values_list("cpf", "result"))
    assert cnh_lookup_retry_failed(lookup=lookup) == 1
    worker_dies_during_its_call(lookup, emulator)

    clock.shift(RUNNING_LEASE.total_seconds() + 1)
    assert cnh_lookup_recover(lookup=fresh(lookup)) is True

    unknown = fresh(lookup)
    assert (unknown.status, unknown.reason) == ("unknown", "no_answer")
    assert item_statuses(unknown) == ["ok", "unknown", "ok"]
    assert unknown.items.get(cpf=TIMEOUT_CPF).error_code == INTERRUPTED
    assert dict(unknown.items.filter(status="ok").values_list("cpf", "result")) == found
    clock.shift(3600)
    assert run_tasks() == 0
    assert emulator.calls(BATCH_CALLS) == 2  # the first call, and the dead worker's


def test_the_workers_sweep_ends_a_lookup_left_running_whose_page_nobody_opens(
    owner, emulator: Emulator, clock
):
    lookup = single(owner, CPF)
    claimed = _claim(lookup.pk)  # the worker took it, asked for the sweep, and died
    assert claimed is not None
    DBTaskResult.objects.filter(task_path="fleet.tasks.cnh_lookup_run").delete()

    clock.shift(RUNNING_LEASE.total_seconds() - 1)
    assert run_tasks() == 0  # the sweep waits for the end of the lease
    assert fresh(lookup).status == CnhLookupStatus.RUNNING
    clock.shift(2)
    assert run_tasks() == 1

    unknown = fresh(lookup)
    assert (unknown.status, unknown.reason) == ("unknown", "no_answer")
    assert sweeps_waiting() == 0  # nothing left running: no next sweep
    assert emulator.calls(LOOKUP_CALLS) == 0  # and not sent again


def test_the_sweep_leaves_a_lookup_under_way_and_comes_back_for_it(
    owner, emulator: Emulator, clock
):
    first, second = single(owner, CPF), single(owner, OTHER_CPF)
    assert _claim(first.pk) is not None
    clock.shift(60)
    assert _claim(second.pk) is not None  # a sweep is already waiting: no second one
    DBTaskResult.objects.filter(task_path="fleet.tasks.cnh_lookup_run").delete()
    assert sweeps_waiting() == 1

    clock.shift(RUNNING_LEASE.total_seconds() - 59)
    assert run_tasks() == 1  # ends the first; the second's lease runs a minute more
    assert [fresh(first).status, fresh(second).status] == ["unknown", "running"]
    clock.shift(60)
    assert run_tasks() == 1
    assert fresh(second).status == "unknown"


@pytest.mark.parametrize("cpf", [CPF, TIMEOUT_CPF])
def test_recovery_leaves_alone_a_lookup_that_is_not_running(owner, emulator: Emulator, clock, cpf):
    lookup = single(owner, cpf)  # queued; the timeout CPF then waits to retry
    if cpf == TIMEOUT_CPF:
        run_tasks()
    before = fresh(lookup).status
    clock.shift(3600)

    assert cnh_lookup_recover(lookup=lookup) is False
    assert fresh(lookup).status == before
    assert item_statuses(lookup) == [CnhItemStatus.PENDING]


def test_the_portals_client_waits_70_s_for_a_lookup_and_the_lease_outlasts_it(fleet_settings):
    assert CNH_READ_TIMEOUT == 70.0
    assert fleet_client().cnh_read_timeout == 70.0
    assert RUNNING_LEASE.total_seconds() > 70.0


# --- Batches: per-item errors, and retrying the failed items together ------------------


def test_a_batch_with_the_timeout_cpf_marks_that_item_error_and_the_others_found(
    owner, emulator: Emulator, clock
):
    lookup = cnh_lookup_create(
        owner=owner, cpfs=[CPF, TIMEOUT_CPF, OTHER_CPF], batch=True, purpose="periodic"
    )

    assert run_tasks() == 1

    done = fresh(lookup)
    assert done.status == CnhLookupStatus.DONE  # the call did not fail
    assert item_statuses(done) == ["ok", "error", "ok"]
    timed_out = done.items.get(cpf=TIMEOUT_CPF)
    assert timed_out.error_code == "gateway-timeout"
    assert emulator.calls(BATCH_CALLS) == 1
    clock.shift(3600)
    assert run_tasks() == 0  # batch items are retried by the user, not by themselves


def test_retrying_a_batch_sends_only_its_failed_cpfs_together(owner, emulator: Emulator, clock):
    lookup = cnh_lookup_create(
        owner=owner, cpfs=[CPF, TIMEOUT_CPF, NO_LICENCE_CPF, OTHER_CPF], batch=True, purpose="fine"
    )
    run_tasks()
    found_before = dict(lookup.items.filter(status="ok").values_list("cpf", "result"))
    emulator.control("POST", "cnh", recover_after=0)

    assert cnh_lookup_retry_failed(lookup=lookup) == 2
    assert fresh(lookup).status == CnhLookupStatus.QUEUED
    assert run_tasks() == 1

    done = fresh(lookup)
    assert done.status == CnhLookupStatus.DONE
    assert item_statuses(done) == ["ok", "ok", "error", "ok"]
    assert dict(done.items.filter(cpf__in=found_before).values_list("cpf", "result")) == (
        found_before
    )
    last = emulator.requests()[-1]
    assert json.loads(last["body"]) == {"cpfs": [TIMEOUT_CPF, NO_LICENCE_CPF]}
    assert emulator.calls(BATCH_CALLS) == 2


def test_a_lookup_still_running_cannot_be_retried(owner, emulator: Emulator, clock):
    lookup = single(owner, CPF)

    assert cnh_lookup_retry_failed(lookup=lookup) == 0
    run_tasks()
    assert cnh_lookup_retry_failed(lookup=lookup) == 0  # done, nothing failed


def test_a_failed_individual_lookup_can_be_tried_again(owner, emulator: Emulator, clock, settings):
    settings.FLEET_CNH_MAX_ATTEMPTS = 1
    lookup = single(owner, TIMEOUT_CPF)
    run_tasks()
    assert fresh(lookup).status == CnhLookupStatus.FAILED
    emulator.control("POST", "cnh", recover_after=0)

    assert cnh_lookup_retry_failed(lookup=lookup) == 1
    run_tasks()

    assert fresh(lookup).status == CnhLookupStatus.DONE
    assert lookup.attempts == 1
    assert item_statuses(lookup) == ["ok"]


# --- The queue -------------------------------------------------------------------------


def test_the_task_is_enqueued_when_the_transaction_commits_and_carries_no_cpf(owner, emulator):
    with transaction.atomic():
        lookup = single(owner, CPF)
        assert DBTaskResult.objects.count() == 0

    (task,) = DBTaskResult.objects.filter(task_path=LOOKUP_TASK)
    assert task.args_kwargs == {"args": [lookup.pk], "kwargs": {}}
    # The daily purge it starts carries nothing either.
    others = DBTaskResult.objects.exclude(task_path=LOOKUP_TASK)
    assert [task.args_kwargs for task in others] == [{"args": [], "kwargs": {}}]


def test_a_lookup_rolled_back_enqueues_nothing(owner, emulator):
    with transaction.atomic():
        single(owner, CPF)
        transaction.set_rollback(True)

    assert DBTaskResult.objects.count() == 0
    assert CnhLookup.objects.count() == 0


def test_a_task_for_a_lookup_that_is_not_due_does_nothing(owner, emulator: Emulator, clock):
    lookup = single(owner, TIMEOUT_CPF)
    run_tasks()

    assert cnh_lookup_process(lookup_id=lookup.pk) == "skipped"  # waiting until START + 30 s
    assert emulator.calls(LOOKUP_CALLS) == 1


@pytest.mark.parametrize(
    ("cpfs", "batch"),
    [
        (["52998224724"], False),
        ([CPF, OTHER_CPF], False),
        ([CPF, "529.982.247-25"], True),
        ([], True),
    ],
)
def test_invalid_cpfs_never_make_a_lookup(owner, emulator: Emulator, cpfs, batch):
    with pytest.raises(InvalidCpfs):
        cnh_lookup_create(owner=owner, cpfs=cpfs, batch=batch, purpose="periodic")

    assert CnhLookup.objects.count() == 0
    assert DBTaskResult.objects.count() == 0
    assert run_tasks() == 0
    assert emulator.requests() == []


def test_a_batch_larger_than_the_limit_is_refused(owner, settings):
    settings.FLEET_CNH_BATCH_LIMIT = 1

    with pytest.raises(InvalidCpfs):
        cnh_lookup_create(owner=owner, cpfs=[CPF, OTHER_CPF], batch=True, purpose="periodic")
