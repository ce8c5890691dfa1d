"""A driver's licence beside the driver: the driver page shows the newest lookup of their
CPF (situation, category, expiry, points, when) and looks it up again against the
emulator; the CPF is masked, in full (and recorded) only for users allowed to see full
CPFs, and entered only by those allowed to; the fine page and the queue of fines to
indicate warn of a driver whose licence is not valid; a lookup's page labels every
member of the answer in both languages."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils.html import strip_tags

from fleet.models import CnhLookup, CpfDisclosure, Driver, Fine
from fleet.services.cnh import cnh_lookup_create
from fleet.services.driver_cpfs import driver_cpf, driver_cpf_set
from fleet.webhooks.processing import deliveries_process_received
from tests.conftest import Emulator, run_tasks
from tests.scopes import grant_whole_fleet
from tests.views.test_scope_walk import Side, sides

__all__ = ["sides"]  # the fixture

pytestmark = pytest.mark.django_db(transaction=True)

ENGLISH = {"Accept-Language": "en"}
PORTUGUESE = {"Accept-Language": "pt-BR"}
WEBHOOK = "/webhooks/fleet/dev-webhook-token/"
SUSPENDED_CPF, CPF = "42242242245", "52998224725"
DRIVER, OTHER_DRIVER = 4242, 4343


def permission(codename: str) -> Permission:
    return Permission.objects.get(content_type__app_label="fleet", codename=codename)


@pytest.fixture
def boss(client: Any, manager: Any) -> Any:
    """The fleet manager (the whole fleet), logged in."""
    grant_whole_fleet(manager)
    client.force_login(manager)
    return client


def suspended_driver(user: Any) -> Driver:
    """Driver 4242, "Felipe Rocha", with the emulator's suspended CPF, looked up."""
    driver = Driver.objects.create(driver_id=DRIVER, name="Felipe Rocha")
    driver_cpf_set(driver=driver, value=SUSPENDED_CPF)
    cnh_lookup_create(owner=user, cpfs=[SUSPENDED_CPF], batch=False, purpose="periodic")
    run_tasks()
    return driver


def fine_to_indicate(client: Any, number: int, driver_id: int) -> Fine:
    frame = {
        "id": number,
        "carPlate": "ABC1D23",
        "autoInfracao": f"E0{number}",
        "description": f"Infração {number}",
        "amount": "130.16",
        "treated": False,
        "indicationDeadline": "2030-12-20",
    }
    body = json.dumps({"frame": frame, "linkFrame": None, "link": None})
    assert client.post(WEBHOOK, data=body, content_type="application/json").status_code == 202
    deliveries_process_received()
    Fine.objects.filter(external_id=str(number)).update(driver_id=driver_id, driver_basis="history")
    return Fine.objects.get(external_id=str(number))


# --- The driver page -------------------------------------------------------------------


def test_the_driver_page_shows_the_suspended_licence_in_both_languages(
    boss: Any, manager: Any, emulator: Emulator
) -> None:
    suspended_driver(manager)
    licence = emulator.cnh_licence(SUSPENDED_CPF)

    english = boss.get(f"/drivers/{DRIVER}/", headers=ENGLISH).text
    portuguese = boss.get(f"/drivers/{DRIVER}/", headers=PORTUGUESE).text

    assert 'data-testid="driver-licence" data-valid="false"' in english
    assert '<span class="badge badge--warn">Suspended</span>' in english
    assert f'data-testid="driver-licence-category">{licence["category"]}</dd>' in english
    assert f'data-testid="driver-licence-points">{licence["points"]}</dd>' in english
    assert f'<time datetime="{licence["expiresAt"]}">' in english
    assert 'data-testid="driver-licence-date"><time datetime="' in english
    assert "Licence not valid: Suspended (looked up on" in english
    assert "Look up again" in english
    assert '<span class="badge badge--warn">Suspensa</span>' in portuguese
    assert "Habilitação inválida: Suspensa (consultada em" in portuguese
    assert "Consultar de novo" in portuguese


def test_look_up_again_runs_a_lookup_whose_answer_becomes_the_licence(
    boss: Any, manager: Any, emulator: Emulator
) -> None:
    driver = Driver.objects.create(driver_id=DRIVER, name="Felipe Rocha")
    driver_cpf_set(driver=driver, value=SUSPENDED_CPF)
    before = boss.get(f"/drivers/{DRIVER}/", headers=ENGLISH).text
    assert 'data-testid="driver-licence-none"' in before

    response = boss.post(f"/drivers/{DRIVER}/licence", headers=ENGLISH)
    waiting = boss.get(f"/drivers/{DRIVER}/", headers=ENGLISH).text
    boss.post(f"/drivers/{DRIVER}/licence", headers=ENGLISH)  # a second click sends nothing
    run_tasks()

    assert response.status_code == 302
    lookup = CnhLookup.objects.get()
    assert (lookup.owner, lookup.kind, lookup.status) == (manager, "single", "done")
    assert list(lookup.items.values_list("cpf", flat=True)) == [SUSPENDED_CPF]
    assert emulator.calls("POST /v2/cnh/lookup") == 1
    assert "The licence is being looked up." in waiting
    assert 'data-testid="driver-licence-pending"' in waiting
    assert 'data-testid="driver-licence-refresh"' not in waiting
    assert f'href="/drivers/cnh/{lookup.public_id}/"' in waiting
    after = boss.get(f"/drivers/{DRIVER}/", headers=ENGLISH).text
    assert '<span class="badge badge--warn">Suspended</span>' in after
    assert 'data-testid="driver-licence-refresh"' in after


def test_a_driver_without_a_cpf_has_nothing_to_look_up(boss: Any) -> None:
    Driver.objects.create(driver_id=DRIVER, name="Felipe Rocha")

    page = boss.get(f"/drivers/{DRIVER}/", headers=ENGLISH).text
    response = boss.post(f"/drivers/{DRIVER}/licence", headers=ENGLISH, follow=True)

    assert 'data-testid="driver-licence-no-cpf"' in page
    assert 'data-testid="driver-licence-refresh"' not in page
    assert "This driver has no CPF" in response.text
    assert not CnhLookup.objects.exists()


def test_the_cpf_is_masked_and_its_display_not_recorded_without_the_permission(
    boss: Any, manager: Any
) -> None:
    suspended_driver(manager)

    page = boss.get(f"/drivers/{DRIVER}/", headers=ENGLISH).text

    assert 'data-testid="driver-cpf">***.422.422-**</dd>' in page
    assert "422.422.422-45" not in page
    assert SUSPENDED_CPF not in page
    assert not CpfDisclosure.objects.exists()


def test_the_full_cpf_is_shown_to_who_may_see_full_cpfs_and_recorded(
    boss: Any, manager: Any
) -> None:
    suspended_driver(manager)
    manager.user_permissions.add(permission("view_full_cpf"))

    page = boss.get(f"/drivers/{DRIVER}/", headers=ENGLISH).text

    assert 'data-testid="driver-cpf">422.422.422-45</dd>' in page
    record = CpfDisclosure.objects.get()
    assert (record.user, record.username, record.place) == (manager, "manager", "driver")
    assert (record.driver_number, record.cpf_count, record.lookup) == (DRIVER, 1, None)


def test_only_who_may_enter_a_drivers_cpf_gets_the_form_and_saves_it(
    boss: Any, manager: Any
) -> None:
    Driver.objects.create(driver_id=DRIVER, name="Felipe Rocha")

    without = boss.get(f"/drivers/{DRIVER}/", headers=ENGLISH).text
    refused = boss.post(f"/drivers/{DRIVER}/cpf", {"cpf": "422.422.422-45"}, headers=ENGLISH)
    assert 'data-testid="driver-cpf-form"' not in without
    assert refused.status_code == 403
    assert Driver.objects.get(driver_id=DRIVER).cpf_encrypted is None

    manager.user_permissions.add(permission("change_driver_cpf"))
    typo = boss.post(f"/drivers/{DRIVER}/cpf", {"cpf": "422.422.422-46"}, headers=ENGLISH)
    saved = boss.post(f"/drivers/{DRIVER}/cpf", {"cpf": "422.422.422-45"}, headers=ENGLISH)

    assert typo.status_code == 400
    assert "its check digits do not match" in typo.text
    assert saved.status_code == 302
    assert driver_cpf(Driver.objects.get(driver_id=DRIVER)) == SUSPENDED_CPF
    page = boss.get(f"/drivers/{DRIVER}/", headers=ENGLISH).text
    assert 'data-testid="driver-cpf-form"' in page
    assert 'data-testid="driver-cpf">***.422.422-**</dd>' in page


@pytest.mark.scoped
def test_a_driver_outside_the_users_groups_is_not_found_nor_looked_up(
    sides: list[Side],
) -> None:
    a, b = sides
    driver, _made = Driver.objects.get_or_create(driver_id=b.driver, defaults={"name": "Beta"})
    driver_cpf_set(driver=driver, value=SUSPENDED_CPF)

    assert a.client.get(f"/drivers/{b.driver}/").status_code == 404
    assert a.client.post(f"/drivers/{b.driver}/licence").status_code == 404
    assert a.client.post(f"/drivers/{b.driver}/cpf", {"cpf": ""}).status_code == 404
    assert not CnhLookup.objects.exists()
    assert b.client.get(f"/drivers/{b.driver}/").status_code == 200


# --- The fine page and the queue -------------------------------------------------------


def test_the_fine_page_warns_of_its_drivers_suspended_licence(
    boss: Any, manager: Any, client: Any
) -> None:
    suspended_driver(manager)
    fine = fine_to_indicate(client, 1, DRIVER)
    Driver.objects.create(driver_id=OTHER_DRIVER, name="Ana Souza")
    other = fine_to_indicate(client, 2, OTHER_DRIVER)

    english = boss.get(f"/fines/{fine.pk}/", headers=ENGLISH).text
    portuguese = boss.get(f"/fines/{fine.pk}/", headers=PORTUGUESE).text
    unwarned = boss.get(f"/fines/{other.pk}/", headers=ENGLISH).text

    assert 'data-testid="licence-warning" data-situation="SUSPENSA"' in english
    assert "Licence not valid: Suspended (looked up on" in english
    assert "Habilitação inválida: Suspensa (consultada em" in portuguese
    assert 'data-testid="licence-warning"' not in unwarned


def test_the_queue_warns_of_the_suspended_licence_with_one_query_for_the_drivers(
    boss: Any, manager: Any, client: Any
) -> None:
    suspended_driver(manager)
    Driver.objects.create(driver_id=OTHER_DRIVER, name="Ana Souza")
    fine_to_indicate(client, 1, DRIVER)
    fine_to_indicate(client, 2, OTHER_DRIVER)

    with CaptureQueriesContext(connection) as two:
        english = boss.get("/fines/indications/", headers=ENGLISH).text
    portuguese = boss.get("/fines/indications/", headers=PORTUGUESE).text

    assert english.count('data-testid="licence-warning"') == 1
    assert "Licence not valid: Suspended (looked up on" in english
    assert "Habilitação inválida: Suspensa (consultada em" in portuguese
    for number in (3, 4, 5):
        fine_to_indicate(client, number, DRIVER if number % 2 else OTHER_DRIVER)
    with CaptureQueriesContext(connection) as five:
        more = boss.get("/fines/indications/", headers=ENGLISH).text
    assert more.count('data-testid="licence-warning"') == 3
    assert len(five) == len(two)


def test_a_queue_row_kept_before_the_lookup_warns_after_it(
    boss: Any, manager: Any, client: Any
) -> None:
    driver = Driver.objects.create(driver_id=DRIVER, name="Felipe Rocha")
    driver_cpf_set(driver=driver, value=SUSPENDED_CPF)
    fine_to_indicate(client, 1, DRIVER)
    assert 'data-testid="licence-warning"' not in boss.get("/fines/indications/").text

    cnh_lookup_create(owner=manager, cpfs=[SUSPENDED_CPF], batch=False, purpose="periodic")
    run_tasks()

    assert 'data-testid="licence-warning"' in boss.get("/fines/indications/").text


# --- A lookup's page: every member labelled --------------------------------------------


def test_a_lookups_page_labels_every_member_in_both_languages(manager_client, manager) -> None:
    lookup = cnh_lookup_create(owner=manager, cpfs=[CPF], batch=False, purpose="periodic")
    CnhLookup.objects.filter(pk=lookup.pk).update(status="done")
    lookup.items.update(
        status="ok",
        result={
            "name": "Ana Souza",
            "category": "AB",
            "situation": "REGULAR",
            "issuingState": "PE",
            "remarks": ["EAR"],
        },
    )

    english = manager_client.get(f"/drivers/cnh/{lookup.public_id}/", headers=ENGLISH).text
    portuguese = manager_client.get(f"/drivers/cnh/{lookup.public_id}/", headers=PORTUGUESE).text

    for page in (english, portuguese):
        shown = strip_tags(page)
        assert "issuingState" not in shown
        assert "remarks" not in shown
        assert not re.search(r"\bEAR\b", shown)
        assert 'data-testid="cnh-issuing-state">PE</dd>' in page
    assert "<dt>Issued in the state of</dt>" in english
    assert "Exerce atividade remunerada: the licence allows paid driving" in english
    assert "<dt>UF de emissão</dt>" in portuguese
    assert "Exerce atividade remunerada: a habilitação permite dirigir" in portuguese
