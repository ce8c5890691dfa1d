from __future__ import annotations

import datetime

import pytest
from django.test import Client
from django.urls import reverse

from fleet.models import AccessKeyMint, FleetAccount, MintOutcome, MintPurpose

pytestmark = pytest.mark.django_db

CHANGELIST_URL = reverse("admin:fleet_accesskeymint_changelist")


@pytest.fixture
def admin(admin_client: Client) -> Client:
    """The superuser's browser, asking for English (the portal defaults to Portuguese)."""
    admin_client.defaults["HTTP_ACCEPT_LANGUAGE"] = "en"
    return admin_client


@pytest.fixture
def mints(admin_user, django_user_model) -> list[AccessKeyMint]:
    manager = django_user_model.objects.create_user("marcos", password="pw-123456")
    return [
        AccessKeyMint.objects.create(
            user=manager,
            fleet_email="manager@example.com",
            purpose=MintPurpose.EMBED,
            outcome=MintOutcome.MINTED,
            duration_ms=120,
        ),
        AccessKeyMint.objects.create(
            user=admin_user,
            fleet_email="driver@example.com",
            purpose=MintPurpose.ADMIN_TEST,
            outcome=MintOutcome.LOGIN_REJECTED,
            trace_id="trace-4f1e9a",
            detail="fbk_003: e-mail ou senha inválidos",
            duration_ms=85,
        ),
    ]


def listed(response) -> set[int]:
    return {mint.pk for mint in response.context["cl"].result_list}


def test_the_audit_trail_lists_mints(admin, mints):
    response = admin.get(CHANGELIST_URL)

    assert response.status_code == 200
    assert listed(response) == {mint.pk for mint in mints}
    assert "trace-4f1e9a" in response.text
    assert "driver@example.com" in response.text
    assert "fleet login rejected" in response.text


def test_the_audit_trail_is_filtered_by_outcome_and_purpose(admin, mints):
    minted, rejected = mints

    by_outcome = admin.get(CHANGELIST_URL, {"outcome__exact": "login_rejected"})
    by_purpose = admin.get(CHANGELIST_URL, {"purpose__exact": "embed"})

    assert listed(by_outcome) == {rejected.pk}
    assert listed(by_purpose) == {minted.pk}


@pytest.mark.parametrize(
    ("query", "expected"), [("trace-4f1e", 1), ("marcos", 0), ("manager@example", 0)]
)
def test_the_audit_trail_is_searched_by_user_email_and_trace_id(admin, mints, query, expected):
    response = admin.get(CHANGELIST_URL, {"q": query})

    assert listed(response) == {mints[expected].pk}


def test_the_audit_trail_is_browsed_by_date(admin, mints):
    old, recent = mints
    AccessKeyMint.objects.filter(pk=old.pk).update(
        created_at=datetime.datetime(2024, 3, 5, 12, tzinfo=datetime.UTC)
    )

    overview = admin.get(CHANGELIST_URL)
    year_2024 = admin.get(CHANGELIST_URL, {"created_at__year": "2024"})

    assert 'id="date-hierarchy-label"' in overview.text
    assert "?created_at__year=2024" in overview.text
    assert listed(year_2024) == {old.pk}
    assert recent.pk not in listed(year_2024)


def test_mints_cannot_be_added(admin):
    response = admin.get(reverse("admin:fleet_accesskeymint_add"))

    assert response.status_code == 403
    assert admin.post(reverse("admin:fleet_accesskeymint_add"), {}).status_code == 403
    assert not AccessKeyMint.objects.exists()


def test_mints_can_be_viewed_but_not_changed(admin, mints):
    url = reverse("admin:fleet_accesskeymint_change", args=[mints[1].pk])

    page = admin.get(url)
    response = admin.post(url, {"trace_id": "rewritten", "outcome": "minted"})

    assert page.status_code == 200
    assert "trace-4f1e9a" in page.text
    assert 'name="_save"' not in page.text
    assert response.status_code == 403
    mints[1].refresh_from_db()
    assert (mints[1].trace_id, mints[1].outcome) == ("trace-4f1e9a", "login_rejected")


def test_mints_cannot_be_deleted(admin, mints):
    changelist = admin.get(CHANGELIST_URL)
    delete_page = admin.get(reverse("admin:fleet_accesskeymint_delete", args=[mints[0].pk]))
    bulk_delete = admin.post(
        CHANGELIST_URL,
        {"action": "delete_selected", "_selected_action": [mints[0].pk], "post": "yes"},
    )

    assert 'value="delete_selected"' not in changelist.text
    assert delete_page.status_code == 403
    assert bulk_delete.status_code in (200, 302)
    assert AccessKeyMint.objects.count() == 2


def test_a_test_from_the_fleet_account_admin_shows_up_in_the_audit_trail(
    admin, admin_user, fleet_settings, emulator, django_user_model
):
    user = django_user_model.objects.create_user("marcos", password="pw-123456")
    account = FleetAccount(user=user, email="manager@example.com")
    account.set_password("demo-password")
    account.save()
    admin.post(
        reverse("admin:fleet_fleetaccount_changelist"),
        {"action": "check_fleet_login", "_selected_action": [account.pk]},
    )

    response = admin.get(CHANGELIST_URL, {"purpose__exact": "admin_test"})

    [mint] = response.context["cl"].result_list
    assert (mint.user, mint.fleet_email, mint.outcome) == (
        admin_user,
        "manager@example.com",
        "minted",
    )
    assert "administrator&#x27;s test" in response.text
    assert "demo-password" not in response.text
