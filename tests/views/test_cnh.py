"""The CNH pages through Django's test client: forms, history, progress, access, privacy."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest
import time_machine
from django.core.files.uploadedfile import SimpleUploadedFile
from django_tasks_db.models import DBTaskResult

from bench.servers import free_port
from fleet.models import CnhLookup, CnhLookupStatus, VehicleGroup, VehicleGroupMember
from fleet.services.cnh import cnh_lookup_create
from tests.conftest import Emulator, run_tasks

pytestmark = pytest.mark.django_db(transaction=True)

ENGLISH = {"Accept-Language": "en"}
HTMX = {"HX-Request": "true"}
TRIGGER = re.compile(r'hx-trigger="load delay:(\d+)ms"')
UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
POLL_URL = re.compile(rf'hx-get="/drivers/cnh/{UUID}/\?poll=(\d+)"')
TIMEOUT_CPF, NO_LICENCE_CPF = "50450450406", "00000040495"
CPF, OTHER_CPF = "52998224725", "11144477735"
CPF_SHOWN, CPF_MASKED = "529.982.247-25", "***.982.247-**"


@pytest.fixture
def other_manager(django_user_model):
    return django_user_model.objects.create_user(username="outra", password="x")


def get(client, path, **headers):
    return client.get(path, headers=ENGLISH | headers)


def post(client, path, data, **headers):
    if path in ("/drivers/cnh/lookup", "/drivers/cnh/batch"):
        data = {"purpose": "periodic", **data}  # every lookup states its purpose
    return client.post(path, data, headers=ENGLISH | headers)


def lookup_of(user, *cpfs, batch=False) -> CnhLookup:
    return cnh_lookup_create(owner=user, cpfs=list(cpfs), batch=batch, purpose="periodic")


# --- The form ------------------------------------------------------------------------


def test_the_page_offers_both_forms_and_is_in_the_navigation(manager_client):
    response = get(manager_client, "/drivers/cnh/")

    assert response.status_code == 200
    assert 'action="/drivers/cnh/lookup"' in response.text
    assert 'action="/drivers/cnh/batch"' in response.text
    assert 'enctype="multipart/form-data"' in response.text
    assert 'href="/drivers/cnh/" aria-current="page"' in response.text
    assert 'data-testid="cnh-history-empty"' in response.text


def test_anonymous_visitors_are_sent_to_log_in(client):
    response = client.get("/drivers/cnh/")

    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


@pytest.mark.parametrize("typed", [CPF_SHOWN, CPF, " 529 982 247 25 "])
def test_one_cpf_with_or_without_mask_makes_a_queued_lookup_and_opens_it(
    manager_client, manager, emulator: Emulator, typed
):
    response = post(manager_client, "/drivers/cnh/lookup", {"cpf": typed})

    lookup = CnhLookup.objects.get()
    assert response.status_code == 302
    assert response["Location"] == f"/drivers/cnh/{lookup.public_id}/"
    assert (lookup.owner, lookup.kind, lookup.status) == (manager, "single", "queued")
    assert list(lookup.items.values_list("cpf", flat=True)) == [CPF]
    assert DBTaskResult.objects.filter(task_path="fleet.tasks.cnh_lookup_run").count() == 1
    assert emulator.requests() == []  # the web request never calls the API itself


@pytest.mark.parametrize(
    ("typed", "message"),
    [
        ("529.982.247-24", "its check digits do not match"),
        ("5299822472", "A CPF has 11 digits"),
        ("111.111.111-11", "its check digits do not match"),
        ("", "This field is required."),
    ],
)
def test_an_invalid_cpf_is_explained_kept_and_never_sent(
    manager_client, emulator: Emulator, typed, message
):
    response = post(manager_client, "/drivers/cnh/lookup", {"cpf": typed})
    run_tasks()

    assert response.status_code == 400
    assert message in response.text
    assert f'value="{typed}"' in response.text or not typed
    assert CnhLookup.objects.count() == 0
    assert emulator.requests() == []


def test_a_pasted_list_makes_one_batch(manager_client, emulator: Emulator):
    text = f"{CPF_SHOWN}\n\n{OTHER_CPF}\r\n{TIMEOUT_CPF}\n"

    response = post(manager_client, "/drivers/cnh/batch", {"cpfs": text})

    lookup = CnhLookup.objects.get()
    assert response.status_code == 302
    assert lookup.kind == "batch"
    assert list(lookup.items.values_list("cpf", flat=True)) == [CPF, OTHER_CPF, TIMEOUT_CPF]


def test_invalid_lines_are_listed_the_text_kept_and_nothing_is_sent(
    manager_client, emulator: Emulator
):
    text = f"{CPF}\n123.456.789-00\n12345\n{OTHER_CPF}"

    response = post(manager_client, "/drivers/cnh/batch", {"cpfs": text})
    run_tasks()

    assert response.status_code == 400
    assert "2 lines are not valid CPFs" in response.text
    assert "Line 2: “123.456.789-00” has wrong check digits." in response.text
    assert "Line 3: “12345” is not 11 digits." in response.text
    assert f"{CPF}\n123.456.789-00\n12345\n{OTHER_CPF}</textarea>" in response.text
    assert 'name="skip_invalid"' in response.text
    assert CnhLookup.objects.count() == 0
    assert emulator.requests() == []


def test_leaving_out_the_invalid_lines_sends_only_the_valid_cpfs(
    manager_client, emulator: Emulator
):
    text = f"{CPF}\n123.456.789-00\n{OTHER_CPF}\n{CPF}"

    response = post(manager_client, "/drivers/cnh/batch", {"cpfs": text, "skip_invalid": "on"})
    run_tasks()

    lookup = CnhLookup.objects.get()
    assert response.status_code == 302
    (sent,) = emulator.requests()
    assert sent["body"] == f'{{"cpfs": ["{CPF}", "{OTHER_CPF}"]}}'
    page = get(manager_client, f"/drivers/cnh/{lookup.public_id}/")
    assert "1 invalid line was left out." in page.text
    assert "1 repeated CPF is looked up once." in page.text


def test_a_csv_file_is_read_from_its_cpf_column(manager_client):
    csv = f"nome;CPF;cidade\nAna;{CPF_SHOWN};Recife\nJoão;{OTHER_CPF};Natal\n".encode("cp1252")
    upload = SimpleUploadedFile("motoristas.csv", csv, content_type="text/csv")

    response = post(manager_client, "/drivers/cnh/batch", {"file": upload})

    assert response.status_code == 302
    lookup = CnhLookup.objects.get()
    assert list(lookup.items.values_list("cpf", flat=True)) == [CPF, OTHER_CPF]


def test_a_csv_with_invalid_rows_comes_back_in_the_text_area(manager_client, emulator):
    csv = f"{CPF},Ana\n99999999999,Bia\n".encode()
    upload = SimpleUploadedFile("lista.csv", csv, content_type="text/csv")

    response = post(manager_client, "/drivers/cnh/batch", {"file": upload})

    assert response.status_code == 400
    assert f"{CPF}\n99999999999</textarea>" in response.text
    assert "Line 2:" in response.text
    assert CnhLookup.objects.count() == 0


def test_an_empty_list_or_a_file_that_is_not_text_is_explained(manager_client):
    empty = post(manager_client, "/drivers/cnh/batch", {"cpfs": "\n  \n"})
    binary = post(
        manager_client,
        "/drivers/cnh/batch",
        {"file": SimpleUploadedFile("x.csv", b"\x00\x01PK", content_type="text/csv")},
    )

    assert empty.status_code == binary.status_code == 400
    assert "Paste one or more CPFs" in empty.text
    assert "could not be read as a CSV list" in binary.text


def test_a_list_longer_than_a_batch_is_refused_with_the_limit(manager_client, settings):
    settings.FLEET_CNH_BATCH_LIMIT = 2

    response = post(
        manager_client, "/drivers/cnh/batch", {"cpfs": f"{CPF}\n{OTHER_CPF}\n{TIMEOUT_CPF}"}
    )

    assert response.status_code == 400
    assert "at most 2 CPFs; this list has 3" in response.text


# --- A lookup's page --------------------------------------------------------------------


def test_a_queued_lookup_polls_from_1_s_and_offers_a_refresh_link(manager_client, manager):
    lookup = lookup_of(manager, CPF)

    response = get(manager_client, f"/drivers/cnh/{lookup.public_id}/")

    assert response.status_code == 200
    assert 'data-status="queued"' in response.text
    assert TRIGGER.findall(response.text) == ["1000"]
    assert POLL_URL.findall(response.text) == ["1500"]
    assert 'data-testid="cnh-refresh"' in response.text
    assert "no-store" in response["Cache-Control"]


def test_a_poll_gets_the_fragment_only_and_each_waits_longer_up_to_10_s(manager_client, manager):
    lookup = lookup_of(manager, CPF)
    waits, asked = [], 1000
    for _ in range(7):
        fragment = get(manager_client, f"/drivers/cnh/{lookup.public_id}/?poll={asked}", **HTMX)
        assert fragment.text.lstrip().startswith('<section id="cnh-lookup"')
        waits.append(int(TRIGGER.search(fragment.text).group(1)))
        asked = int(POLL_URL.search(fragment.text).group(1))

    assert waits == [1000, 1500, 2250, 3375, 5063, 7595, 10000]


def test_a_done_lookup_shows_the_licence_and_stops_polling(
    manager_client, manager, emulator: Emulator
):
    lookup = lookup_of(manager, CPF)
    run_tasks()

    page = get(manager_client, f"/drivers/cnh/{lookup.public_id}/")
    fragment = get(manager_client, f"/drivers/cnh/{lookup.public_id}/?poll=3000", **HTMX)

    for response in (page, fragment):
        assert 'data-status="done"' in response.text
        assert "hx-trigger" not in response.text
        assert "hx-get" not in response.text
    licence = emulator.cnh_licence(CPF)
    assert f'data-testid="cnh-name">{licence["name"]}</dd>' in page.text
    # Its owner without the permission to see full CPFs: masked (tests/views/test_cnh_lgpd.py).
    assert f'data-testid="cnh-cpf">{CPF_MASKED}</dd>' in page.text
    assert licence["cnhNumber"] in page.text
    # Every member is labelled, none shown by the vendor's name.
    assert f'data-testid="cnh-issuing-state">{licence["issuingState"]}</dd>' in page.text
    assert 'data-testid="cnh-remarks">' in page.text
    assert "issuingState" not in page.text
    assert "<code>" not in page.text


def test_dates_of_the_licence_are_written_as_a_brazilian_reads_them(manager_client, manager):
    lookup = lookup_of(manager, CPF)
    CnhLookup.objects.filter(pk=lookup.pk).update(status="done")
    lookup.items.update(status="ok", result={"name": "Ana", "expiresAt": "2031-03-07", "points": 4})

    response = manager_client.get(f"/drivers/cnh/{lookup.public_id}/")

    assert '<time datetime="2031-03-07">7 de março de 2031</time>' in response.text


def test_waiting_to_retry_shows_the_time_and_that_the_timeout_was_not_charged(
    manager_client, manager, emulator: Emulator
):
    with time_machine.travel(datetime(2026, 11, 23, 13, 0, tzinfo=UTC), tick=False):
        lookup = lookup_of(manager, TIMEOUT_CPF)
        run_tasks()
        response = manager_client.get(f"/drivers/cnh/{lookup.public_id}/")

    assert 'data-status="waiting_retry"' in response.text
    # 13:00:30 UTC is 10:00:30 in São Paulo.
    assert '<time data-testid="cnh-next-attempt">10:00:30</time>' in response.text
    assert "(tentativa 2 de 5)" in response.text
    assert "Essa tentativa não foi cobrada." in response.text
    assert TRIGGER.search(response.text)


def test_a_failed_lookup_says_why_that_timeouts_are_not_charged_and_offers_a_retry(
    manager_client, manager, emulator: Emulator, settings
):
    settings.FLEET_CNH_MAX_ATTEMPTS = 1
    lookup = lookup_of(manager, TIMEOUT_CPF)
    run_tasks()

    response = get(manager_client, f"/drivers/cnh/{lookup.public_id}/")

    assert 'data-status="failed"' in response.text
    assert (
        "The lookup failed after 1 attempt: the licensing service did not answer in time."
        in response.text
    )
    assert "Lookups that time out are not charged." in response.text
    assert f'action="/drivers/cnh/{lookup.public_id}/retry"' in response.text
    assert "hx-trigger" not in response.text


def test_a_batch_shows_each_item_with_its_own_status_and_retries_the_failed_together(
    manager_client, manager, emulator: Emulator
):
    lookup = lookup_of(manager, CPF, TIMEOUT_CPF, NO_LICENCE_CPF, batch=True)
    run_tasks()

    page = get(manager_client, f"/drivers/cnh/{lookup.public_id}/")
    assert page.text.count('data-testid="cnh-item" data-status="ok"') == 1
    assert page.text.count('data-testid="cnh-item" data-status="error"') == 2
    assert "The licensing service did not answer in time." in page.text
    assert "No driver licence was found for this CPF." in page.text
    assert "Look up the 2 CPFs without result again" in page.text

    emulator.control("POST", "cnh", recover_after=0)
    retried = post(manager_client, f"/drivers/cnh/{lookup.public_id}/retry", {})
    assert retried.status_code == 302
    assert CnhLookup.objects.get().status == CnhLookupStatus.QUEUED
    run_tasks()

    after = get(manager_client, f"/drivers/cnh/{lookup.public_id}/")
    assert "2 CPFs are being looked up again." in after.text
    assert after.text.count('data-testid="cnh-item" data-status="ok"') == 2
    assert "Look up the 1 CPF without result again" in after.text


# --- Lookups that may have been charged without a result (spec 4.5) ---------------------

ACCEPT_BOX = re.compile(r'<input type="checkbox" name="accept_charge"[^>]*>')


def test_a_lookup_that_got_no_answer_says_it_may_have_been_charged_and_asks_before_a_retry(
    manager_client, manager, emulator: Emulator
):
    emulator.fault("/v2/cnh/lookup", drop=True)
    lookup = lookup_of(manager, CPF)
    assert run_tasks() == 1

    page = get(manager_client, f"/drivers/cnh/{lookup.public_id}/")

    assert 'data-status="unknown"' in page.text
    assert 'data-testid="cnh-status-label">Outcome unknown</span>' in page.text
    assert "hx-trigger" not in page.text  # final: the page stops polling
    assert 'data-testid="cnh-unknown"' in page.text
    assert "The fleet service did not answer." in page.text
    assert "it may have been done, and charged" in page.text
    assert "it was not sent again by itself" in page.text
    assert f'action="/drivers/cnh/{lookup.public_id}/retry"' in page.text
    (box,) = ACCEPT_BOX.findall(page.text)
    assert "required" in box  # the only thing to retry: the box must be ticked
    assert "I accept that this lookup may be charged a second time." in page.text
    assert "Try again" in page.text
    assert emulator.calls("POST /v2/cnh/lookup") == 1

    # Without the box ticked (a browser would not even send it): nothing is sent.
    refused = post(manager_client, f"/drivers/cnh/{lookup.public_id}/retry", {})
    assert refused.status_code == 302
    assert run_tasks() == 0
    after_refusal = get(manager_client, f"/drivers/cnh/{lookup.public_id}/")
    assert "Nothing was sent." in after_refusal.text
    assert CnhLookup.objects.get().status == CnhLookupStatus.UNKNOWN
    assert emulator.calls("POST /v2/cnh/lookup") == 1

    accepted = post(
        manager_client, f"/drivers/cnh/{lookup.public_id}/retry", {"accept_charge": "on"}
    )
    assert accepted.status_code == 302
    assert run_tasks() == 1

    done = get(manager_client, f"/drivers/cnh/{lookup.public_id}/")
    assert "1 CPF is being looked up again." in done.text
    assert 'data-status="done"' in done.text
    assert 'data-testid="cnh-unknown"' not in done.text
    assert emulator.calls("POST /v2/cnh/lookup") == 2  # exactly one more call


def test_a_batch_that_got_no_answer_shows_each_cpf_unknown_and_asks_before_a_second_charge(
    manager_client, manager, emulator: Emulator
):
    emulator.fault("/v2/cnh/lookup/batch", drop=True)
    lookup = lookup_of(manager, CPF, OTHER_CPF, batch=True)
    assert run_tasks() == 1

    page = get(manager_client, f"/drivers/cnh/{lookup.public_id}/")

    assert page.text.count('data-testid="cnh-item" data-status="unknown"') == 2
    assert page.text.count('<span class="badge badge--unknown">Outcome unknown</span>') == 2
    assert "this CPF may have been looked up, and charged" in page.text
    assert "The lookup of 2 CPFs was sent, but no answer came back" in page.text
    assert "Look up the 2 CPFs without result again" in page.text
    (box,) = ACCEPT_BOX.findall(page.text)
    assert "required" in box
    assert emulator.calls("POST /v2/cnh/lookup/batch") == 1

    post(manager_client, f"/drivers/cnh/{lookup.public_id}/retry", {"accept_charge": "on"})
    assert run_tasks() == 1

    after = get(manager_client, f"/drivers/cnh/{lookup.public_id}/")
    assert after.text.count('data-testid="cnh-item" data-status="ok"') == 2
    assert emulator.calls("POST /v2/cnh/lookup/batch") == 2


def test_a_batch_with_cpfs_in_error_and_unknown_retries_the_unknown_only_if_ticked(
    manager_client, manager, emulator: Emulator
):
    lookup = lookup_of(manager, CPF, TIMEOUT_CPF, OTHER_CPF, batch=True)
    CnhLookup.objects.filter(pk=lookup.pk).update(status="unknown", reason="no_answer")
    lookup.items.filter(cpf=CPF).update(status="unknown", error_code="no_answer")
    lookup.items.filter(cpf=TIMEOUT_CPF).update(status="error", error_code="gateway-timeout")
    lookup.items.filter(cpf=OTHER_CPF).update(status="ok", result={"name": "Bia"})

    page = get(manager_client, f"/drivers/cnh/{lookup.public_id}/")
    (box,) = ACCEPT_BOX.findall(page.text)
    assert "required" not in box  # the CPF in error can be looked up again alone
    assert "Also look up again the 1 CPF whose outcome is unknown." in page.text
    assert "Look up the 1 CPF without result again" in page.text

    post(manager_client, f"/drivers/cnh/{lookup.public_id}/retry", {})
    run_tasks()

    (sent,) = emulator.requests()
    assert sent["body"] == f'{{"cpfs": ["{TIMEOUT_CPF}"]}}'
    lookup.refresh_from_db()
    assert lookup.status == CnhLookupStatus.UNKNOWN
    assert lookup.items.get(cpf=CPF).status == "unknown"


def test_a_server_error_says_so_and_offers_a_plain_retry(
    manager_client, manager, emulator: Emulator
):
    emulator.fault("/v2/cnh/lookup", status=503)
    lookup = lookup_of(manager, CPF)
    assert run_tasks() == 1

    page = get(manager_client, f"/drivers/cnh/{lookup.public_id}/")

    assert 'data-status="failed"' in page.text
    assert (
        "The lookup failed after 1 attempt: the fleet service had an internal error." in page.text
    )
    assert 'data-testid="cnh-unknown"' not in page.text
    assert not ACCEPT_BOX.search(page.text)
    assert f'action="/drivers/cnh/{lookup.public_id}/retry"' in page.text
    assert emulator.calls("POST /v2/cnh/lookup") == 1


def test_waiting_after_a_refused_connection_says_that_attempt_was_not_charged(
    manager_client, manager, emulator: Emulator, settings
):
    settings.FLEET_BASE_URL = f"http://127.0.0.1:{free_port()}"  # nobody listens there
    lookup = lookup_of(manager, CPF)
    run_tasks()

    page = get(manager_client, f"/drivers/cnh/{lookup.public_id}/")

    assert 'data-status="waiting_retry"' in page.text
    assert "The last attempt got no result: the fleet service could not be reached." in page.text
    assert "That attempt was not charged." in page.text


def test_the_history_and_the_admin_show_an_unknown_outcome(
    client, manager_client, manager, admin_user, emulator: Emulator
):
    emulator.fault("/v2/cnh/lookup/batch", drop=True)
    lookup = lookup_of(manager, CPF, OTHER_CPF, batch=True)
    run_tasks()

    history = get(manager_client, "/drivers/cnh/")
    client.force_login(admin_user)
    admin_list = get(client, "/admin/fleet/cnhlookup/")
    filtered = get(client, "/admin/fleet/cnhlookup/?status__exact=unknown")
    admin_page = get(client, f"/admin/fleet/cnhlookup/{lookup.pk}/change/")

    assert 'cnh-badge--unknown" data-testid="cnh-status-label">Outcome unknown' in history.text
    assert '<span data-testid="cnh-history-unknown">outcome unknown: 2</span>' in history.text
    assert "Outcome unknown" in admin_list.text
    assert "CPFs with an unknown outcome" in admin_list.text
    assert '<td class="field-unknown_items">2</td>' in admin_list.text
    assert f"/admin/fleet/cnhlookup/{lookup.pk}/change/" in filtered.text
    assert admin_page.status_code == 200
    assert "the fleet service did not answer" in admin_page.text
    assert "***.982.247-**" in admin_page.text  # masked: a superuser is not given full CPFs
    assert "529.982.247-25" not in admin_page.text
    assert "982.247" not in admin_list.text


# --- Who sees what (LGPD) ---------------------------------------------------------------


def main_of(response) -> str:
    return response.text.split("<main", 1)[1].split("</main>", 1)[0]


def test_a_manager_cannot_open_or_retry_another_managers_lookup(
    client, manager, other_manager, emulator: Emulator, settings
):
    settings.FLEET_CNH_MAX_ATTEMPTS = 1
    lookup = lookup_of(manager, TIMEOUT_CPF)
    run_tasks()
    client.force_login(other_manager)

    page = get(client, f"/drivers/cnh/{lookup.public_id}/")
    fragment = get(client, f"/drivers/cnh/{lookup.public_id}/?poll=1000", **HTMX)
    retry = post(client, f"/drivers/cnh/{lookup.public_id}/retry", {})
    history = get(client, "/drivers/cnh/")
    missing = get(client, "/drivers/cnh/00000000-0000-4000-8000-000000000000/")

    for response in (page, fragment, retry):
        assert response.status_code == 404
        assert main_of(response) == main_of(missing)  # nothing tells that it exists
        assert "504" not in response.text
    assert CnhLookup.objects.get().status == CnhLookupStatus.FAILED  # the retry did nothing
    assert 'data-testid="cnh-history-empty"' in history.text
    for response in (page, history):
        assert "982.247" not in response.text


@pytest.mark.scoped
def test_staff_limited_to_another_vehicle_group_neither_open_nor_retry_a_managers_lookup(
    client, manager, django_user_model, emulator: Emulator, settings
):
    settings.FLEET_CNH_MAX_ATTEMPTS = 1
    staff = {}
    for name in ("Norte", "Sul"):
        group = VehicleGroup.objects.create(name=name)
        staff[name] = django_user_model.objects.create_user(f"staff-{name}", is_staff=True)
        VehicleGroupMember.objects.create(group=group, user=staff[name])
    VehicleGroupMember.objects.create(group=VehicleGroup.objects.get(name="Norte"), user=manager)
    lookup = lookup_of(manager, TIMEOUT_CPF)
    run_tasks()
    runs = DBTaskResult.objects.filter(task_path="fleet.tasks.cnh_lookup_run")
    tasks = runs.count()

    client.force_login(staff["Sul"])
    page = get(client, f"/drivers/cnh/{lookup.public_id}/")
    retry = post(client, f"/drivers/cnh/{lookup.public_id}/retry", {})
    client.force_login(staff["Norte"])
    theirs = get(client, f"/drivers/cnh/{lookup.public_id}/")

    assert (page.status_code, retry.status_code) == (404, 404)
    assert CnhLookup.objects.get().status == CnhLookupStatus.FAILED  # the retry did nothing
    assert runs.count() == tasks  # and started no lookup
    assert theirs.status_code == 200
    assert CPF_MASKED.replace("982.247", "504.504") in theirs.text


def test_staff_can_open_any_lookup_with_the_cpf_masked(client, manager, admin_user):
    lookup = lookup_of(manager, CPF)
    client.force_login(admin_user)

    response = get(client, f"/drivers/cnh/{lookup.public_id}/")
    admin_list = get(client, "/admin/fleet/cnhlookup/")

    assert response.status_code == 200
    assert CPF_MASKED in response.text
    assert CPF_SHOWN not in response.text
    assert "by manager" in response.text
    assert admin_list.status_code == 200
    assert "982.247" not in admin_list.text


def test_the_history_is_the_users_own_newest_first_with_cpfs_masked(
    manager_client, manager, other_manager
):
    first = lookup_of(manager, CPF)
    lookup_of(other_manager, TIMEOUT_CPF)
    second = lookup_of(manager, CPF, OTHER_CPF, batch=True)

    response = get(manager_client, "/drivers/cnh/")

    rows = re.findall(rf'href="/drivers/cnh/({UUID})/"', response.text)
    assert rows == [str(second.public_id), str(first.public_id)]
    assert CPF_MASKED in response.text
    assert "Batch of 2 CPFs" in response.text
    for full in (CPF, CPF_SHOWN, OTHER_CPF, "111.444.777-35", TIMEOUT_CPF, "504.504.504-06"):
        assert full not in response.text


def test_the_history_comes_a_page_at_a_time(manager_client, manager):
    for _ in range(21):
        lookup_of(manager, CPF)

    first, second = (
        get(manager_client, "/drivers/cnh/"),
        get(manager_client, "/drivers/cnh/?page=2"),
    )

    assert first.text.count('data-testid="cnh-history-row"') == 20
    assert second.text.count('data-testid="cnh-history-row"') == 1
    assert "Page 1 of 2" in first.text


def test_item_and_lookup_reprs_never_hold_a_full_cpf(manager):
    lookup = lookup_of(manager, CPF)
    item = lookup.items.get()

    assert str(item) == repr(item).split()[2] == CPF_MASKED
    assert CPF not in repr(item)
    assert CPF not in str(lookup)


def test_a_lookup_its_worker_left_running_ends_unknown_from_its_page_and_is_not_sent_again(
    manager_client, manager, emulator: Emulator
):
    start = datetime(2026, 11, 23, 13, 0, tzinfo=UTC)
    with time_machine.travel(start, tick=False) as clock:
        lookup = lookup_of(manager, CPF)
        DBTaskResult.objects.all().delete()  # the worker took the task, then died mid-call
        CnhLookup.objects.filter(pk=lookup.pk).update(status=CnhLookupStatus.RUNNING, attempts=1)

        clock.shift(110)  # a call may still be under way: its 70 s timeout and more
        page = get(manager_client, f"/drivers/cnh/{lookup.public_id}/", **HTMX)
        lookup.refresh_from_db()
        assert (lookup.status, DBTaskResult.objects.count()) == (CnhLookupStatus.RUNNING, 0)
        assert TRIGGER.search(page.text)  # still polling

        clock.shift(20)
        page = get(manager_client, f"/drivers/cnh/{lookup.public_id}/", **HTMX)
        lookup.refresh_from_db()
        assert (lookup.status, lookup.reason) == (CnhLookupStatus.UNKNOWN, "no_answer")
        assert DBTaskResult.objects.count() == 0  # not queued again
        assert 'data-status="unknown"' in page.text
        assert not TRIGGER.search(page.text)  # final: the page stops polling
        assert 'data-testid="cnh-unknown" data-reason="no_answer"' in page.text
        assert "it may have been done, and charged" in page.text
        assert "it was not sent again by itself" in page.text
        (box,) = ACCEPT_BOX.findall(page.text)
        assert "required" in box
        assert run_tasks() == 0
        assert emulator.calls("POST /v2/cnh/lookup") == 0

        post(manager_client, f"/drivers/cnh/{lookup.public_id}/retry", {"accept_charge": "on"})
        assert run_tasks() == 1
        lookup.refresh_from_db()
        assert lookup.status == CnhLookupStatus.DONE
        assert emulator.calls("POST /v2/cnh/lookup") == 1


def test_a_batch_its_worker_left_running_shows_each_pending_cpf_interrupted(
    manager_client, manager, emulator: Emulator
):
    start = datetime(2026, 11, 23, 13, 0, tzinfo=UTC)
    with time_machine.travel(start, tick=False) as clock:
        lookup = lookup_of(manager, CPF, OTHER_CPF, batch=True)
        DBTaskResult.objects.all().delete()
        CnhLookup.objects.filter(pk=lookup.pk).update(status=CnhLookupStatus.RUNNING, attempts=1)
        clock.shift(130)

        page = get(manager_client, f"/drivers/cnh/{lookup.public_id}/")

    assert page.text.count('data-testid="cnh-item" data-status="unknown"') == 2
    assert page.text.count("The lookup was interrupted while it was being sent") == 2
    assert "The lookup of 2 CPFs was sent, but no answer came back" in page.text
    assert "Look up the 2 CPFs without result again" in page.text
    assert "required" in ACCEPT_BOX.findall(page.text)[0]
    assert run_tasks() == 0
    assert emulator.calls("POST /v2/cnh/lookup/batch") == 0


def test_an_unreadable_answer_says_so_and_asks_before_a_second_charge(
    manager_client, manager, emulator: Emulator
):
    emulator.fault("/v2/cnh/lookup", malformed=True)
    lookup = lookup_of(manager, CPF)
    assert run_tasks() == 1

    page = get(manager_client, f"/drivers/cnh/{lookup.public_id}/")

    assert 'data-status="unknown"' in page.text
    assert "hx-trigger" not in page.text
    assert 'data-testid="cnh-failure"' not in page.text
    assert 'data-testid="cnh-unknown" data-reason="invalid_response"' in page.text
    assert "The fleet service's answer could not be read." in page.text
    assert "it was probably done, and charged" in page.text
    assert "The fleet service did not answer." not in page.text
    (box,) = ACCEPT_BOX.findall(page.text)
    assert "required" in box
    assert emulator.calls("POST /v2/cnh/lookup") == 1

    post(manager_client, f"/drivers/cnh/{lookup.public_id}/retry", {})
    assert run_tasks() == 0  # not without accepting a second charge
    post(manager_client, f"/drivers/cnh/{lookup.public_id}/retry", {"accept_charge": "on"})
    assert run_tasks() == 1
    assert 'data-status="done"' in get(manager_client, f"/drivers/cnh/{lookup.public_id}/").text
    assert emulator.calls("POST /v2/cnh/lookup") == 2


def test_an_unreadable_batch_answer_shows_each_cpf_unknown(
    manager_client, manager, emulator: Emulator
):
    emulator.fault("/v2/cnh/lookup/batch", body={"unexpected": "shape"})
    lookup = lookup_of(manager, CPF, OTHER_CPF, batch=True)
    assert run_tasks() == 1

    page = get(manager_client, f"/drivers/cnh/{lookup.public_id}/")

    assert page.text.count('data-testid="cnh-item" data-status="unknown"') == 2
    assert page.text.count("but its answer could not be read") == 2
    assert "The lookup of 2 CPFs was answered, but the answer could not be read" in page.text
    assert "Look up the 2 CPFs without result again" in page.text
    assert emulator.calls("POST /v2/cnh/lookup/batch") == 1
