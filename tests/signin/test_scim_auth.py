"""Who may call /scim/v2/: a live bearer token of a configured provider, over HTTPS outside
the emulator, within its rate. Anything else gets the SCIM error body, changes nothing,
and is audited; the token is in no log line and no audit row."""

from __future__ import annotations

import pytest
from allauth.socialaccount.models import SocialApp
from django.contrib.auth.models import User
from django.utils import timezone

from portal.lib.redaction import redact
from signin.models import ScimCall, ScimMinute, ScimToken, ScimUser
from signin.scim.tokens import scim_token_mint
from tests.signin.conftest import ERROR_SCHEMA, USER_SCHEMA, Scim

pytestmark = pytest.mark.django_db

WRONG = "scim_0123456789ab_" + "x" * 43


def refused_without_change(answer):
    assert answer.status_code == 401
    assert answer.data["schemas"] == [ERROR_SCHEMA]
    assert answer.data["status"] == "401"
    assert answer.data["detail"]
    assert answer["WWW-Authenticate"].startswith("Bearer")
    assert not User.objects.exists()
    assert not ScimUser.objects.exists()


@pytest.mark.parametrize(
    "authorization",
    [None, "Bearer", f"Bearer {WRONG}", "Bearer not-a-token", f"Basic {WRONG}"],
    ids=["missing", "empty", "wrong", "malformed", "basic"],
)
def test_a_missing_or_wrong_token_is_refused(client, providers, authorization, log_records):
    headers = {"Authorization": authorization} if authorization else {}
    answer = client.post(
        "/scim/v2/Users",
        '{"schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"], "userName": "ana"}',
        content_type="application/scim+json",
        headers=headers,
    )
    answer.data = answer.json()
    refused_without_change(answer)
    # Counted against the address's minute, not stored a row each (test_scim_floods).
    assert not ScimCall.objects.exists()
    minute = ScimMinute.objects.get()
    assert (minute.who, minute.count, minute.limited) == ("address:127.0.0.1", 1, False)
    assert not any(WRONG in line for line in log_records.lines)


def test_a_revoked_token_is_refused(client, providers, log_records):
    token = scim_token_mint(provider="acme", created_by="test")
    ScimToken.objects.update(revoked_at=timezone.now())
    refused_without_change(Scim(client, token).user_create("ana@example.com", "00u-ana"))
    assert not any(token in line for line in log_records.lines)


def test_a_token_of_a_provider_no_longer_configured_is_refused(client, providers):
    token = scim_token_mint(provider="group", created_by="test")
    SocialApp.objects.filter(provider_id="group").delete()
    refused_without_change(Scim(client, token).user_create("ana@example.com", "00u-ana"))


def test_the_token_is_in_no_log_line_and_no_audit_row(acme, log_records):
    acme.user_create("ana@example.com", "00u-ana")
    acme.get("Users", filter="userName eq")  # a refusal logs too
    acme.get("Nowhere")
    assert log_records.lines
    assert not any(acme.token in line for line in log_records.lines)
    secret = acme.token.split("_", 2)[2]
    for call in ScimCall.objects.values():
        assert not any(secret in str(value) for value in call.values())
    assert ScimCall.objects.filter(provider="acme").count() == 3


def test_redaction_scrubs_a_token_that_a_log_line_would_show(acme):
    assert acme.token not in redact(f"sent {acme.token} to the portal")
    assert acme.token.split("_", 2)[1] in redact(f"sent {acme.token} to the portal")


def test_plain_http_is_refused_outside_the_emulator(acme, settings):
    settings.FLEET_ENVIRONMENT = "production"
    answer = acme.user_create("ana@example.com", "00u-ana")
    assert answer.status_code == 403
    assert answer.data["schemas"] == [ERROR_SCHEMA]
    assert not ScimUser.objects.exists()
    secure = acme.client.get(
        "/scim/v2/Users", secure=True, headers={"Authorization": f"Bearer {acme.token}"}
    )
    assert secure.status_code == 200


def test_a_token_over_its_rate_waits(acme, settings, time_machine):
    time_machine.move_to("2026-11-26T08:00:05Z", tick=False)  # the calls in one minute
    settings.SCIM_REQUESTS_PER_MINUTE = 2
    assert acme.get("Users").status_code == 200
    assert acme.get("Users").status_code == 200
    answer = acme.get("Users")
    assert answer.status_code == 429
    assert answer["Retry-After"] == "60"
    assert answer.data["schemas"] == [ERROR_SCHEMA]
    time_machine.move_to("2026-11-26T08:01:05Z", tick=False)
    assert acme.get("Users").status_code == 200


def test_wrong_tokens_from_one_address_are_slowed_too(client, providers, settings, time_machine):
    time_machine.move_to("2026-11-26T08:00:05Z", tick=False)
    settings.SCIM_REQUESTS_PER_MINUTE = 2
    wrong = Scim(client, WRONG)
    assert [wrong.get("Users").status_code for _ in range(3)] == [401, 401, 429]


def test_another_providers_token_is_refused_on_its_users_and_groups(acme, grupo, log_records):
    ana = acme.user_create(
        "ana@example.com", "00u-ana", name={"givenName": "Ana", "familyName": "Souza"}
    ).data["id"]
    sp = acme.group_create("fleet-sp", ana).data["id"]
    own = grupo.group_create("grupo-sp").data["id"]
    user_body = {"schemas": [USER_SCHEMA], "userName": "ana@example.com", "active": False}
    attempts = [
        grupo.get(f"Users/{ana}"),
        grupo.call("PUT", f"Users/{ana}", user_body | {"name": {"givenName": "Eve"}}),
        grupo.patch(f"Users/{ana}", {"op": "replace", "value": {"active": False}}),
        grupo.delete(f"Users/{ana}"),
        grupo.get(f"Groups/{sp}"),
        grupo.patch(f"Groups/{sp}", {"op": "remove", "path": "members"}),
        grupo.patch(f"Groups/{sp}", {"op": "replace", "value": {"displayName": "taken"}}),
        grupo.delete(f"Groups/{sp}"),
        grupo.group_create("grupo-rio", ana),
        grupo.patch(f"Groups/{own}", {"op": "add", "path": "members", "value": [{"value": ana}]}),
    ]
    for answer in attempts:
        assert answer.status_code == 401, answer.data
        assert answer.data["schemas"] == [ERROR_SCHEMA]
        assert answer["WWW-Authenticate"].startswith("Bearer")
    # Nothing changed: Acme still sees Ana as it left her.
    seen = acme.get(f"Users/{ana}").data
    assert (seen["active"], seen["name"]["givenName"]) == (True, "Ana")
    assert [member["value"] for member in acme.get(f"Groups/{sp}").data["members"]] == [ana]
    assert acme.get(f"Groups/{sp}").data["displayName"] == "fleet-sp"
    assert User.objects.get().is_active
    assert not grupo.get(f"Groups/{own}").data.get("members")
    assert ScimCall.objects.filter(provider="group", status=401).count() == len(attempts)
    assert not any(grupo.token in line for line in log_records.lines)
