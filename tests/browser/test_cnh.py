"""A CNH lookup moves to its result before the manager's eyes.

The lookups run as they do under `make run`: a real `manage.py db_worker`
process, started here against the test database (a file for SQLite, see
tests/settings.py; the test PostgreSQL database otherwise) and the test
emulator. A separate process rather than a thread: it shares no connection,
transaction or import state with the live server, exactly like production.
"""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import Permission
from playwright.sync_api import expect

from tests.browser.conftest import log_in
from tests.conftest import Emulator, start_db_worker, stop_db_worker

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CPF, OTHER_CPF, TIMEOUT_CPF = "529.982.247-25", "111.444.777-35", "504.504.504-06"


def test_a_manager_submits_a_lookup_and_sees_it_move_to_its_result_without_reloading(
    page, manager, emulator: Emulator
):
    licence = emulator.cnh_licence(CPF.replace(".", "").replace("-", ""))
    # Given the permission to see full CPFs (without it, the CPF is masked here too).
    manager.user_permissions.add(
        Permission.objects.get(content_type__app_label="fleet", codename="view_full_cpf")
    )
    log_in(page, "manager", "manager-demo-password")
    page.get_by_role("link", name="CNH dos condutores").click()

    page.get_by_label("CPF", exact=True).fill(CPF)
    single = page.get_by_test_id("cnh-single-form")
    single.get_by_label("Finalidade da consulta").select_option("periodic")
    page.get_by_role("button", name="Consultar", exact=True).click()

    lookup = page.get_by_test_id("cnh-lookup")
    # No worker runs yet: the lookup stays under way for as long as the test looks.
    expect(lookup).to_have_attribute("data-status", re.compile(r"^(queued|running)$"))
    page.evaluate("window.sameDocument = true")  # survives only if the page is never reloaded
    worker = start_db_worker(emulator)
    try:
        expect(lookup).to_have_attribute("data-status", "done", timeout=15_000)
    finally:
        stop_db_worker(worker)
    expect(page.get_by_test_id("cnh-status-label")).to_have_text("Concluída")
    expect(page.get_by_test_id("cnh-name")).to_have_text(licence["name"])
    expect(page.get_by_test_id("cnh-cpf")).to_have_text(CPF)
    assert page.evaluate("window.sameDocument") is True
    expect(page.get_by_test_id("cnh-refresh")).to_have_count(0)  # polling has stopped

    page.get_by_role("link", name="Todas as consultas").click()
    expect(page.get_by_test_id("cnh-history-row")).to_contain_text("***.982.247-**")
    expect(page.get_by_test_id("cnh-history")).not_to_contain_text(CPF)


def test_a_batch_shows_the_timed_out_driver_and_retries_it_in_one_click(
    page, manager, emulator: Emulator, db_worker
):
    log_in(page, "manager", "manager-demo-password")
    page.goto("/drivers/cnh/")

    page.get_by_label("CPFs, um por linha").fill(f"{CPF}\n{TIMEOUT_CPF}\n{OTHER_CPF}")
    batch = page.get_by_test_id("cnh-batch-form")
    batch.get_by_label("Finalidade da consulta").select_option("hiring")
    page.get_by_role("button", name="Consultar todos").click()

    lookup = page.get_by_test_id("cnh-lookup")
    expect(lookup).to_have_attribute("data-status", "done", timeout=15_000)
    items = page.get_by_test_id("cnh-item")
    expect(items).to_have_count(3)
    expect(items.nth(0)).to_have_attribute("data-status", "ok")
    expect(items.nth(1)).to_have_attribute("data-status", "error")
    expect(items.nth(1)).to_contain_text("não respondeu a tempo")
    expect(items.nth(2)).to_have_attribute("data-status", "ok")

    emulator.control("POST", "cnh", recover_after=0)  # the licensing service is back
    page.get_by_test_id("cnh-retry").click()

    expect(page.get_by_text("1 CPF está sendo consultado de novo.")).to_be_visible()
    expect(lookup).to_have_attribute("data-status", "done", timeout=15_000)
    expect(items.nth(1)).to_have_attribute("data-status", "ok")
    expect(page.get_by_test_id("cnh-retry")).to_have_count(0)


def test_a_lookup_that_got_no_answer_is_not_sent_again_until_the_manager_accepts_a_charge(
    page, manager, emulator: Emulator, db_worker
):
    # The fleet service takes the lookup and closes the connection without an answer.
    emulator.fault("/v2/cnh/lookup", drop=True)
    lookup = one_periodic_lookup_unknown(page)
    expect(page.get_by_test_id("cnh-unknown")).to_be_visible()
    expect(page.get_by_test_id("cnh-refresh")).to_have_count(0)  # final: no more polling
    assert emulator.calls("POST /v2/cnh/lookup") == 1

    # The button alone does not send it: the box that accepts a second charge is required.
    box = page.get_by_test_id("cnh-accept-charge")
    page.get_by_test_id("cnh-retry").click()
    assert box.evaluate("box => box.validity.valueMissing") is True
    expect(lookup).to_have_attribute("data-status", "unknown")

    box.check()
    page.get_by_test_id("cnh-retry").click()

    expect(lookup).to_have_attribute("data-status", "done", timeout=15_000)
    expect(page.get_by_test_id("cnh-unknown")).to_have_count(0)
    assert emulator.calls("POST /v2/cnh/lookup") == 2  # exactly one more call


def test_an_unreadable_answer_is_shown_as_an_unknown_outcome_and_not_sent_again(
    page, manager, emulator: Emulator, db_worker
):
    # The fleet service answers 200 with a body that is not JSON: done, probably charged.
    emulator.fault("/v2/cnh/lookup", malformed=True)
    one_periodic_lookup_unknown(page)
    expect(page.get_by_test_id("cnh-unknown")).to_have_attribute("data-reason", "invalid_response")
    expect(page.get_by_test_id("cnh-failure")).to_have_count(0)
    expect(page.get_by_test_id("cnh-accept-charge")).to_be_visible()
    assert emulator.calls("POST /v2/cnh/lookup") == 1


def one_periodic_lookup_unknown(page):
    """The manager signs in and asks for one periodic lookup of `CPF`, whose outcome the
    portal cannot know (the fault set before): its element, once it says so."""
    log_in(page, "manager", "manager-demo-password")
    page.goto("/drivers/cnh/")
    page.get_by_label("CPF", exact=True).fill(CPF)
    single = page.get_by_test_id("cnh-single-form")
    single.get_by_label("Finalidade da consulta").select_option("periodic")
    page.get_by_role("button", name="Consultar", exact=True).click()
    lookup = page.get_by_test_id("cnh-lookup")
    expect(lookup).to_have_attribute("data-status", "unknown", timeout=15_000)
    return lookup
