"""SCIM bearer tokens: made by `manage.py scim_token` or in the admin, shown once, kept as
a digest, revoked in the admin; each ends (365 days, or --days), two live at most per
provider (a rotation's overlap), its last use and address shown. Before, they never
expired and a provider could have any number."""

from __future__ import annotations

import hashlib
from io import StringIO

import pytest
from allauth.socialaccount.models import SocialApp
from django.core.management import CommandError, call_command
from django.urls import reverse

from signin.models import ScimToken
from signin.scim.tokens import scim_token_check

pytestmark = pytest.mark.django_db


def mint(provider: str, *options: str) -> str:
    out = StringIO()
    call_command("scim_token", provider, *options, stdout=out)
    return out.getvalue().strip()


def test_it_prints_a_token_once_and_keeps_its_digest(providers):
    token = mint("acme")
    stored = ScimToken.objects.get()
    assert stored.provider == "acme"
    assert token.startswith(f"scim_{stored.prefix}_")
    assert stored.digest == hashlib.sha256(token.encode()).hexdigest()
    assert token not in {value for value in vars(stored).values() if isinstance(value, str)}
    assert scim_token_check(token) == stored
    assert ScimToken.objects.get().last_used_at is not None


def test_it_mints_for_a_provider_of_the_admin(providers):
    assert scim_token_check(mint("group")).provider == "group"


def test_it_refuses_an_unknown_provider(providers):
    with pytest.raises(CommandError, match="acme, group"):
        mint("nobody")
    assert not ScimToken.objects.exists()


def test_a_wrong_or_revoked_token_is_refused(providers):
    token = mint("acme")
    assert scim_token_check(token[:-1] + ("A" if token[-1] != "A" else "B")) is None
    assert scim_token_check("not-a-token") is None
    ScimToken.objects.update(revoked_at="2026-01-01T00:00Z")
    assert scim_token_check(token) is None


def test_a_token_of_a_provider_no_longer_configured_is_refused(providers):
    token = mint("group")
    SocialApp.objects.filter(provider_id="group").delete()
    assert scim_token_check(token) is None


def test_the_admin_shows_a_new_token_once_and_revokes_it(providers, admin_client):
    page = admin_client.post(
        reverse("admin:signin_scimtoken_add"), {"provider": "group", "days": "30"}, follow=False
    )
    assert page.status_code == 200
    token = page.context["token"]
    assert token.startswith("scim_")
    assert token in page.content.decode()
    assert "no-store" in page["Cache-Control"]
    stored = ScimToken.objects.get()
    assert scim_token_check(token) == stored
    change = admin_client.get(reverse("admin:signin_scimtoken_change", args=[stored.pk]))
    assert token not in change.content.decode()
    assert stored.prefix in change.content.decode()
    admin_client.post(
        reverse("admin:signin_scimtoken_changelist"),
        {"action": "revoke", "_selected_action": [stored.pk]},
    )
    assert scim_token_check(token) is None


def test_the_admin_lists_calls_users_and_groups_without_the_token(acme, admin_client):
    created = acme.user_create("ana@example.com", "00u-ana")
    acme.group_create("fleet-sp", created.data["id"])
    for model in ("scimcall", "scimuser", "scimgroup", "scimtoken"):
        page = admin_client.get(reverse(f"admin:signin_{model}_changelist"))
        assert page.status_code == 200
        assert acme.token not in page.content.decode()
    calls = admin_client.get(reverse("admin:signin_scimcall_changelist")).content.decode()
    assert "/scim/v2/Users" in calls
    users = admin_client.get(reverse("admin:signin_scimuser_changelist")).content.decode()
    assert "00u-ana" in users


def test_a_token_ends_after_its_days(providers, time_machine):
    time_machine.move_to("2026-11-27T12:00:00Z", tick=False)
    yearly, monthly = mint("acme"), mint("group", "--days", "30")
    assert ScimToken.objects.get(provider="acme").expires_at.isoformat().startswith("2027-11-27")

    time_machine.move_to("2026-12-27T12:00:01Z", tick=False)
    assert scim_token_check(monthly) is None
    assert scim_token_check(yearly) is not None
    time_machine.move_to("2027-11-27T12:00:01Z", tick=False)
    assert scim_token_check(yearly) is None
    with pytest.raises(CommandError, match="one day at least"):
        mint("acme", "--days", "0")


def test_two_live_tokens_at_most_a_rotations_overlap(providers, admin_client):
    old = mint("acme")
    new = mint("acme")  # set in the provider while the old one still works
    assert scim_token_check(old) is not None
    assert scim_token_check(new) is not None
    with pytest.raises(CommandError, match="2 live SCIM tokens already"):
        mint("acme")
    page = admin_client.post(
        reverse("admin:signin_scimtoken_add"),
        {"provider": "acme", "days": "365"},
        headers={"Accept-Language": "en"},
    )
    assert "has 2 live tokens already" in page.content.decode()
    assert ScimToken.objects.filter(provider="acme").count() == 2

    ScimToken.objects.filter(prefix=old.split("_")[1]).update(revoked_at="2026-01-01T00:00Z")
    assert scim_token_check(mint("acme")) is not None


def test_the_last_use_and_its_address_are_shown(acme, admin_client):
    assert acme.get("Users").status_code == 200
    stored = ScimToken.objects.get()
    assert stored.last_used_at is not None
    assert stored.last_used_from == "127.0.0.1"
    page = admin_client.get(reverse("admin:signin_scimtoken_changelist"))
    assert "127.0.0.1" in page.content.decode()
