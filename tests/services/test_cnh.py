"""CNH lookups in the background: the real worker loop, the emulator over HTTP, time-machine.

Each test runs django-tasks-db's worker in this process (`run_tasks`) so that
time-machine drives the clock it schedules retries by; the emulator's timeout
CPF answers 504 with `Retry-After: 30` after 0.2 s.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.db import transaction
from django.utils import translation
from django_tasks_db.models import DBTaskResult

from fleet.models import CnhItemStatus, CnhLookup, CnhLookupStatus, CnhReason
from fleet.services.cnh import (
    InvalidCpfs,
    cnh_lookup_create,
    cnh_lookup_process,
    cnh_lookup_retry_failed,
    cnh_lookup_rows,
)
from tests.conftest import Emulator, run_tasks

pytestmark = pytest.mark.django_db(transaction=True)

START = datetime(2026, 11, 23, 13, 0, tzinfo=UTC)
TIMEOUT_CPF, NO_LICENCE_CPF = "50450450406", "00000040495"
CPF, OTHER_CPF = "52998224725", "11144477735"
LOOKUP_CALLS, BATCH_CALLS = "POST /v2/cnh/lookup", "POST /v2/cnh/lookup/batch"


@pytest.fixture
def owner(django_user_model, fleet_settings):
    return django_user_model.objects.create_user(username="marcos", password="x")


@pytest.fixture
def clock():
    with time_machine.travel(START, tick=False) as traveller:
        yield traveller


def single(owner, cpf: str) -> CnhLookup:
    return cnh_lookup_create(owner=owner, cpfs=[cpf], batch=False)


def fresh(lookup: CnhLookup) -> CnhLookup:
    lookup.refresh_from_db()
    return lookup


def item_statuses(lookup: CnhLookup) -> list[str]:
    return list(lookup.items.order_by("position").values_list("status", flat=True))


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
    emulator.fault("/v2/cnh/lookup", status=504, count=1)
    emulator.fault("/v2/cnh/lookup", status=503, count=1)
    lookup = single(owner, CPF)

    run_tasks()
    assert fresh(lookup).next_attempt_at == START + timedelta(seconds=30)
    assert lookup.reason == CnhReason.UPSTREAM_TIMEOUT
    clock.shift(30)
    run_tasks()
    assert fresh(lookup).next_attempt_at == START + timedelta(seconds=30 + 60)
    assert lookup.reason == CnhReason.UNAVAILABLE
    clock.shift(60)
    run_tasks()

    assert fresh(lookup).status == CnhLookupStatus.DONE
    assert emulator.calls(LOOKUP_CALLS) == 3


def test_a_rate_limit_is_waited_out_for_its_retry_after(owner, emulator: Emulator, clock):
    emulator.fault("/v2/cnh/lookup", status=429, retry_after=7)
    lookup = single(owner, CPF)

    run_tasks()
    assert fresh(lookup).status == CnhLookupStatus.WAITING_RETRY
    assert lookup.reason == CnhReason.RATE_LIMITED
    assert lookup.next_attempt_at == START + timedelta(seconds=7)
    clock.shift(7)
    run_tasks()

    assert fresh(lookup).status == CnhLookupStatus.DONE


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


# --- Batches: per-item errors, and retrying the failed items together ------------------


def test_a_batch_with_the_timeout_cpf_marks_that_item_error_and_the_others_found(
    owner, emulator: Emulator, clock
):
    lookup = cnh_lookup_create(owner=owner, cpfs=[CPF, TIMEOUT_CPF, OTHER_CPF], batch=True)

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
        owner=owner, cpfs=[CPF, TIMEOUT_CPF, NO_LICENCE_CPF, OTHER_CPF], batch=True
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

    (task,) = DBTaskResult.objects.all()
    assert task.task_path == "fleet.tasks.cnh_lookup_run"
    assert task.args_kwargs == {"args": [lookup.pk], "kwargs": {}}


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
        cnh_lookup_create(owner=owner, cpfs=cpfs, batch=batch)

    assert CnhLookup.objects.count() == 0
    assert DBTaskResult.objects.count() == 0
    assert run_tasks() == 0
    assert emulator.requests() == []


def test_a_batch_larger_than_the_limit_is_refused(owner, settings):
    settings.FLEET_CNH_BATCH_LIMIT = 1

    with pytest.raises(InvalidCpfs):
        cnh_lookup_create(owner=owner, cpfs=[CPF, OTHER_CPF], batch=True)
