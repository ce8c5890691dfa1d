"""The personal-data rules for CNH lookups (LGPD), through Django's test client.

Who sees a full CPF (an explicit permission; each display recorded), the
purpose every lookup states, the daily limit and when it renews, ids in URLs
that tell nothing, and the retention purge the worker runs at night.
"""

from __future__ import annotations

import logging
import re

import pytest
import time_machine
from django.contrib.auth.models import Group, Permission
from django_tasks_db.models import DBTaskResult

from fleet.models import CnhLookup, CnhLookupItem, CpfDisclosure
from fleet.services.cnh import cnh_lookup_create
from tests.conftest import Emulator, Recorder, run_tasks

pytestmark = pytest.mark.django_db(transaction=True)

ENGLISH = {"Accept-Language": "en"}
HTMX = {"HX-Request": "true"}
CPF, OTHER_CPF, THIRD_CPF = "52998224725", "11144477735", "12345678909"
CPF_SHOWN, CPF_MASKED = "529.982.247-25", "***.982.247-**"
# 10:00 in São Paulo (UTC-3), a Wednesday.
MORNING = "2026-11-25 13:00Z"


def full_cpf_permission() -> Permission:
    return Permission.objects.get(content_type__app_label="fleet", codename="view_full_cpf")


def lookup_of(user, *cpfs, batch=False, purpose="periodic", detail="") -> CnhLookup:
    return cnh_lookup_create(
        owner=user, cpfs=list(cpfs), batch=batch, purpose=purpose, purpose_detail=detail
    )


# --- Full CPFs: an explicit permission, and a record of each display ------------------------


def test_full_cpfs_are_shown_only_to_users_given_the_permission_and_each_display_is_recorded(
    client, manager, django_user_model
):
    lookup = lookup_of(manager, CPF, OTHER_CPF, batch=True)
    client.force_login(manager)

    before = client.get(lookup.get_absolute_url(), headers=ENGLISH)
    manager.user_permissions.add(full_cpf_permission())
    page = client.get(lookup.get_absolute_url(), headers=ENGLISH)
    fragment = client.get(f"{lookup.get_absolute_url()}?poll=1000", headers=ENGLISH | HTMX)

    assert CPF_MASKED in before.text
    assert CPF_SHOWN not in before.text
    for response in (page, fragment):
        assert CPF_SHOWN in response.text
        assert "111.444.777-35" in response.text
    records = list(CpfDisclosure.objects.order_by("pk"))
    assert [(r.username, r.lookup_id, r.place, r.cpf_count) for r in records] == [
        ("manager", lookup.pk, "page", 2),
        ("manager", lookup.pk, "page", 2),
    ]


def test_a_group_can_carry_the_permission(client, manager):
    readers = Group.objects.create(name="CPF readers")
    readers.permissions.add(full_cpf_permission())
    manager.groups.add(readers)
    lookup = lookup_of(manager, CPF)
    client.force_login(manager)

    response = client.get(lookup.get_absolute_url(), headers=ENGLISH)

    assert f'data-testid="cnh-cpf">{CPF_SHOWN}</dd>' in response.text
    assert CpfDisclosure.objects.get().place == "page"


def test_staff_and_superusers_without_the_permission_see_cpfs_masked_in_pages_and_admin(
    client, manager, admin_user, django_user_model
):
    staff = django_user_model.objects.create_user(username="suporte", is_staff=True)
    staff.user_permissions.add(
        Permission.objects.get(content_type__app_label="fleet", codename="view_cnhlookup")
    )
    lookup = lookup_of(manager, CPF)

    for user in (staff, admin_user):
        client.force_login(user)
        page = client.get(lookup.get_absolute_url(), headers=ENGLISH)
        change = client.get(f"/admin/fleet/cnhlookup/{lookup.pk}/change/", headers=ENGLISH)
        assert page.status_code == change.status_code == 200
        for response in (page, change):
            assert CPF_MASKED in response.text
            assert CPF_SHOWN not in response.text
            assert CPF not in response.text
    assert "Can see full CPFs" in change.text  # says what it would take
    assert CpfDisclosure.objects.count() == 0


def test_the_admin_shows_full_cpfs_to_a_permitted_user_records_it_and_keeps_the_record(
    client, manager, admin_user
):
    admin_user.user_permissions.add(full_cpf_permission())
    lookup = lookup_of(manager, CPF, OTHER_CPF, batch=True)
    client.force_login(admin_user)

    change = client.get(f"/admin/fleet/cnhlookup/{lookup.pk}/change/", headers=ENGLISH)
    lookup.delete()  # purged: the record of who saw its CPFs stays
    records = client.get("/admin/fleet/cpfdisclosure/", headers=ENGLISH)

    assert CPF_SHOWN in change.text
    record = CpfDisclosure.objects.get()
    assert (record.username, record.place, record.cpf_count, record.lookup_id) == (
        "admin",
        "admin",
        2,
        None,
    )
    assert record.lookup_public_id == lookup.public_id
    assert records.status_code == 200
    assert str(lookup.public_id) in records.text
    assert "the administration" in records.text
    # Nobody rewrites or deletes the record from the admin.
    page = client.get(f"/admin/fleet/cpfdisclosure/{record.pk}/change/", headers=ENGLISH)
    assert page.status_code == 200
    assert 'name="_save"' not in page.text
    deleted = client.post(f"/admin/fleet/cpfdisclosure/{record.pk}/delete/", {"post": "yes"})
    assert deleted.status_code == 403
    assert CpfDisclosure.objects.count() == 1


# --- The purpose of a lookup ------------------------------------------------------------


def test_a_lookup_without_a_purpose_is_refused_and_another_purpose_needs_words(
    client, manager, emulator: Emulator
):
    client.force_login(manager)

    missing = client.post("/drivers/cnh/lookup", {"cpf": CPF}, headers=ENGLISH)
    unexplained = client.post(
        "/drivers/cnh/batch", {"cpfs": CPF, "purpose": "other"}, headers=ENGLISH
    )
    stated = client.post(
        "/drivers/cnh/lookup",
        {"cpf": CPF, "purpose": "fine", "purpose_detail": "Auto 1234 de 20/11"},
        headers=ENGLISH,
    )

    assert missing.status_code == unexplained.status_code == 400
    assert "This field is required." in missing.text
    assert "Say in a few words what this lookup is for." in unexplained.text
    lookup = CnhLookup.objects.get()
    assert (lookup.purpose, lookup.purpose_detail) == ("fine", "Auto 1234 de 20/11")
    page = client.get(stated["Location"], headers=ENGLISH)
    assert "Purpose: Naming the driver of a traffic fine — Auto 1234 de 20/11" in page.text


def test_the_form_offers_the_purposes_in_portuguese(client, manager):
    client.force_login(manager)

    response = client.get("/drivers/cnh/", headers={"Accept-Language": "pt-BR"})

    assert "Finalidade da consulta" in response.text
    assert response.text.count('name="purpose"') == 2  # each form has its own
    assert 'id="id_purpose"' in response.text
    assert 'id="id_batch_purpose"' in response.text


# --- The daily limit --------------------------------------------------------------------


def test_the_daily_limit_refuses_what_would_pass_it_and_says_when_it_renews(
    client, manager, emulator: Emulator, settings
):
    settings.FLEET_CNH_DAILY_LIMIT = 2
    with time_machine.travel(MORNING, tick=False) as clock:
        client.force_login(manager)
        first = client.post(
            "/drivers/cnh/lookup", {"cpf": CPF, "purpose": "hiring"}, headers=ENGLISH
        )
        too_many = client.post(
            "/drivers/cnh/batch",
            {"cpfs": f"{OTHER_CPF}\n{THIRD_CPF}", "purpose": "hiring"},
            headers=ENGLISH,
        )
        second = client.post(
            "/drivers/cnh/lookup", {"cpf": OTHER_CPF, "purpose": "hiring"}, headers=ENGLISH
        )
        spent = client.post(
            "/drivers/cnh/lookup",
            {"cpf": THIRD_CPF, "purpose": "hiring"},
            headers={"Accept-Language": "pt-BR"},
        )
        page = client.get("/drivers/cnh/", headers=ENGLISH)
        clock.move_to("2026-11-26 03:00Z")  # midnight in São Paulo: a new day
        client.force_login(manager)  # a new session: the first one was idle too long
        next_day = client.post(
            "/drivers/cnh/lookup", {"cpf": THIRD_CPF, "purpose": "hiring"}, headers=ENGLISH
        )

    assert first.status_code == second.status_code == next_day.status_code == 302
    assert too_many.status_code == spent.status_code == 429
    assert (
        "This lookup has 2 CPFs, but you can look up only 1 more CPF today "
        "(the daily limit is 2). Nothing was sent."
    ) in too_many.text
    assert "The limit renews at 26 Nov 2026, 00:00." in too_many.text
    assert "26 de novembro de 2026 às 00:00" in spent.text
    assert "You can look up 0 more CPFs today (daily limit: 2)." in page.text
    assert CnhLookupItem.objects.count() == 3
    assert f"{OTHER_CPF}\n{THIRD_CPF}</textarea>" in too_many.text  # nothing typed is lost


def test_the_limit_is_each_users_own(client, manager, django_user_model, settings):
    settings.FLEET_CNH_DAILY_LIMIT = 1
    other = django_user_model.objects.create_user(username="outra")
    lookup_of(other, CPF)
    client.force_login(manager)

    response = client.post(
        "/drivers/cnh/lookup", {"cpf": CPF, "purpose": "periodic"}, headers=ENGLISH
    )

    assert response.status_code == 302


# --- Ids in URLs --------------------------------------------------------------------------


def test_a_lookups_url_says_nothing_about_how_many_lookups_exist(client, manager):
    lookups = [lookup_of(manager, CPF) for _ in range(3)]
    client.force_login(manager)

    history = client.get("/drivers/cnh/", headers=ENGLISH)
    by_number = client.get(f"/drivers/cnh/{lookups[0].pk}/", headers=ENGLISH)

    links = re.findall(r'href="(/drivers/cnh/[^"]+/)"', history.text)
    assert links == [lookup.get_absolute_url() for lookup in reversed(lookups)]
    for lookup in lookups:
        assert re.fullmatch(r"/drivers/cnh/[0-9a-f-]{36}/", lookup.get_absolute_url())
        assert f"/drivers/cnh/{lookup.pk}/" not in history.text
    assert by_number.status_code == 404


# --- Retention ------------------------------------------------------------------------------


def test_the_worker_purges_lookups_past_their_retention_at_night_and_logs_how_many(
    manager, emulator: Emulator, settings, log_records: Recorder
):
    settings.FLEET_CNH_RETENTION_DAYS = 30
    with time_machine.travel(MORNING, tick=False) as clock:
        old = [lookup_of(manager, CPF), lookup_of(manager, OTHER_CPF, THIRD_CPF, batch=True)]
        kept = lookup_of(manager, THIRD_CPF)
        CnhLookup.objects.filter(pk__in=[lookup.pk for lookup in old]).update(
            created_at="2026-10-20T12:00:00Z"
        )
        CnhLookup.objects.filter(pk=kept.pk).update(created_at="2026-10-30T12:00:00Z")
        CpfDisclosure.objects.create(
            username="manager",
            lookup=old[0],
            lookup_public_id=old[0].public_id,
            place="page",
            cpf_count=1,
        )
        run_tasks()  # the lookups; the purge waits for the night
        assert CnhLookup.objects.count() == 3
        purge = DBTaskResult.objects.get(task_path="fleet.tasks.cnh_lookups_purge")
        assert purge.run_after.isoformat() == "2026-11-26T06:00:00+00:00"  # 3:00 in São Paulo

        clock.move_to("2026-11-26 06:00:30Z")
        run_tasks()

    assert list(CnhLookup.objects.all()) == [kept]
    assert CnhLookupItem.objects.filter(lookup__in=old).count() == 0
    assert CpfDisclosure.objects.get().lookup_id is None  # the record outlives the lookup
    messages = [r.getMessage() for r in log_records.records if r.name == "fleet.cnh"]
    assert "purged 2 CNH lookup(s) older than 30 days (FLEET_CNH_RETENTION_DAYS)" in messages
    # The next night's run waits; only one.
    waiting = DBTaskResult.objects.filter(task_path="fleet.tasks.cnh_lookups_purge", status="READY")
    assert [task.run_after.isoformat() for task in waiting] == ["2026-11-27T06:00:00+00:00"]


def test_the_purge_is_logged_even_when_there_is_nothing_to_purge(settings, caplog):
    from fleet.services.cnh_privacy import cnh_lookups_purge

    with caplog.at_level(logging.INFO, logger="fleet"):
        assert cnh_lookups_purge() == 0

    assert "purged 0 CNH lookup(s) older than 180 days" in caplog.text
