"""SCIM Users: created, read, filtered, paged, deactivated and deleted by a provider over
/scim/v2/, through Django's test client."""

from __future__ import annotations

import pytest
from allauth.socialaccount.models import SocialAccount
from django.contrib.auth.models import User
from django.contrib.sessions.models import Session
from django.test import Client

from alerts.models import AlertPause, PauseReason
from signin.models import ScimCall, ScimUser
from tests.signin.conftest import ERROR_SCHEMA, USER_SCHEMA, pushed_email

pytestmark = pytest.mark.django_db


def test_it_creates_a_user_with_the_identity_they_sign_in_with(acme):
    created = acme.user_create(
        "ana@example.com",
        "00u-ana",
        name={"givenName": "Ana", "familyName": "Souza"},
        emails=[{"value": "ana@example.com", "primary": True}],
    )
    assert created.status_code == 201, created.data
    assert created.data["userName"] == "ana@example.com"
    assert created.data["active"] is True
    user = User.objects.get(username="ana@example.com")
    assert (user.first_name, user.last_name, pushed_email(user)) == (
        "Ana",
        "Souza",
        "ana@example.com",
    )
    assert SocialAccount.objects.get(user=user).uid == "00u-ana"
    assert SocialAccount.objects.get(user=user).provider == "acme"
    fetched = acme.get(f"Users/{created.data['id']}")
    assert fetched.status_code == 200
    assert fetched.data["externalId"] == "00u-ana"
    assert fetched["Content-Type"] == "application/scim+json"


def test_an_existing_identity_is_the_same_person_never_one_with_the_same_email(acme):
    signed_in = User.objects.create_user("ana", email="ana@example.com")
    SocialAccount.objects.create(user=signed_in, provider="acme", uid="00u-ana")
    lookalike = User.objects.create_user("ana2", email="bruno@example.com")

    assert acme.user_create("ana@example.com", "00u-ana").status_code == 201
    assert ScimUser.objects.get().user == signed_in
    bruno = acme.user_create(
        "bruno@example.com", "00u-bruno", emails=[{"value": "bruno@example.com"}]
    )
    assert bruno.status_code == 201
    assert ScimUser.objects.get(user_name="bruno@example.com").user != lookalike


def test_a_duplicate_user_name_is_refused_and_changes_nothing(acme):
    acme.user_create("ana@example.com", "00u-ana")
    again = acme.user_create("ANA@example.com", "00u-other")
    assert again.status_code == 409
    assert again.data["schemas"] == [ERROR_SCHEMA]
    assert again.data["scimType"] == "uniqueness"
    assert not SocialAccount.objects.filter(uid="00u-other").exists()
    assert User.objects.count() == 1


def test_it_filters_by_user_name_and_external_id(acme):
    acme.user_create("ana@example.com", "00u-ana")
    acme.user_create("bruno@example.com", "00u-bruno")
    by_name = acme.get("Users", filter='userName eq "Bruno@Example.com"')
    assert by_name.data["totalResults"] == 1
    assert by_name.data["Resources"][0]["externalId"] == "00u-bruno"
    by_external_id = acme.get("Users", filter='externalId eq "00u-ana"')
    assert [user["userName"] for user in by_external_id.data["Resources"]] == ["ana@example.com"]
    nobody = acme.get("Users", filter='userName eq "carla@example.com"')
    assert nobody.data["totalResults"] == 0
    started = acme.get("Users", filter='userName sw "ana"')
    assert [user["userName"] for user in started.data["Resources"]] == ["ana@example.com"]


def test_it_pages_by_index(acme):
    for number in range(5):
        acme.user_create(f"user{number}@example.com", f"00u-{number}")
    page = acme.get("Users", startIndex=2, count=2)
    assert page.data["totalResults"] == 5
    assert page.data["startIndex"] == 2
    assert page.data["itemsPerPage"] == 2
    names = [user["userName"] for user in page.data["Resources"]]
    assert names == ["user1@example.com", "user2@example.com"]


def test_a_malformed_filter_is_invalid_filter(acme):
    acme.user_create("ana@example.com", "00u-ana")
    answer = acme.get("Users", filter='userName eq "ana@example.com" and')
    assert answer.status_code == 400
    assert answer.data["schemas"] == [ERROR_SCHEMA]
    assert answer.data["scimType"] == "invalidFilter"


def signed_in_session(user):
    """The key of a session `user` signed in with, in a browser of their own."""
    browser = Client()
    browser.force_login(user)
    return browser.session.session_key


def test_active_false_signs_them_out_and_pauses_their_alerts(acme):
    created = acme.user_create("ana@example.com", "00u-ana")
    user = User.objects.get()
    session_key = signed_in_session(user)

    answer = acme.patch(
        f"Users/{created.data['id']}", {"op": "replace", "path": "active", "value": False}
    )
    assert answer.status_code == 200
    assert answer.data["active"] is False
    user.refresh_from_db()
    assert user.is_active is False
    assert not Session.objects.filter(session_key=session_key).exists()
    assert AlertPause.objects.current().get(user=user).reason == PauseReason.DEPROVISIONED


def test_delete_deactivates_and_keeps_the_records(acme):
    created = acme.user_create("ana@example.com", "00u-ana")
    answer = acme.delete(f"Users/{created.data['id']}")
    assert answer.status_code == 204
    user = User.objects.get()
    assert user.is_active is False
    assert SocialAccount.objects.filter(user=user).exists()
    assert AlertPause.objects.current().filter(user=user).exists()
    assert acme.get(f"Users/{created.data['id']}").status_code == 404
    calls = list(ScimCall.objects.order_by("created_at").values_list("method", "status"))
    assert calls[-2:] == [("DELETE", 204), ("GET", 404)]


def test_a_provider_sees_and_changes_none_of_another_providers_users(acme, grupo):
    created = acme.user_create("ana@example.com", "00u-ana")
    assert grupo.get(f"Users/{created.data['id']}").status_code == 401
    assert grupo.get("Users").data["totalResults"] == 0
    refused = grupo.patch(
        f"Users/{created.data['id']}", {"op": "replace", "path": "active", "value": False}
    )
    assert refused.status_code == 401
    assert User.objects.get().is_active is True


def test_discovery_endpoints_answer(acme):
    config = acme.get("ServiceProviderConfig")
    assert config.status_code == 200
    assert config.data["patch"]["supported"] is True
    assert config.data["bulk"]["supported"] is False
    types = acme.get("ResourceTypes")
    assert {resource["name"] for resource in types.data["Resources"]} == {"User", "Group"}
    schemas = acme.get("Schemas")
    assert schemas.status_code == 200


@pytest.mark.parametrize(
    "operation",
    [
        {"op": "Replace", "path": "active", "value": "False"},
        {"op": "replace", "value": {"active": False}},
    ],
    ids=["entra-capitalised-string", "okta-value-object"],
)
def test_deactivation_in_the_shapes_entra_and_okta_send(acme, operation):
    created = acme.user_create("ana@example.com", "00u-ana")
    answer = acme.patch(f"Users/{created.data['id']}", operation)
    assert answer.status_code == 200, answer.data
    assert User.objects.get().is_active is False


def test_a_patch_path_that_does_not_exist_changes_nothing(acme):
    created = acme.user_create("ana@example.com", "00u-ana")
    answer = acme.patch(
        f"Users/{created.data['id']}",
        {"op": "replace", "path": "active", "value": False},
        {"op": "replace", "path": "nickNameOfNothing", "value": "x"},
    )
    assert answer.status_code == 400
    assert answer.data["scimType"] in ("invalidPath", "noTarget")
    assert User.objects.get().is_active is True


def test_an_unknown_attribute_is_refused_and_changes_nothing(acme):
    answer = acme.user_create("ana@example.com", "00u-ana", favouriteColour="red")
    assert answer.status_code == 400
    assert answer.data["scimType"] == "invalidSyntax"
    assert not User.objects.exists()


def test_put_replaces_the_user(acme):
    created = acme.user_create("ana@example.com", "00u-ana")
    replaced = acme.call(
        "PUT",
        f"Users/{created.data['id']}",
        {
            "schemas": [USER_SCHEMA],
            "userName": "ana.souza@example.com",
            "externalId": "00u-ana",
            "name": {"givenName": "Ana", "familyName": "Souza"},
            "active": True,
        },
    )
    assert replaced.status_code == 200
    assert replaced.data["userName"] == "ana.souza@example.com"
    assert User.objects.get().last_name == "Souza"
    assert ScimUser.objects.get().user_name == "ana.souza@example.com"
