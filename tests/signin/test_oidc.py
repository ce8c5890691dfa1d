"""Signing in through the organisation's identity provider: a real OpenID provider on
loopback (tests/idp.py), the portal through Django's test client."""

from __future__ import annotations

import re
import time
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
import requests
import time_machine
from allauth.socialaccount.models import SocialAccount
from django.contrib.auth.models import User

from fleet.models import FleetAccount
from signin.models import SsoAttempt, SsoOutcome
from tests.conftest import (
    FLEET_EMAIL,
    FLEET_PASSWORD,
    SSO_PASSWORDS,
    oidc_app,
)
from tests.idp import SignInRefused, sign_in_at_provider, sign_out_at_provider

pytestmark = pytest.mark.django_db


def start(client, provider="acme", **data):
    """Press the provider's button on the login page: the portal sends the browser there."""
    answer = client.post(f"/accounts/oidc/{provider}/login/", data)
    assert answer.status_code == 302, answer.content[:500]
    return answer["Location"]


def sso(client, username, *, provider="acme", browser=None, **data):
    """Sign in at the provider as `username`; the portal's answer to the provider's callback."""
    callback = sign_in_at_provider(
        start(client, provider, **data), username, SSO_PASSWORDS[username], session=browser
    )
    return client.get(callback)


def user_of(client):
    user = client.get("/accounts/signed-out/").context["user"]
    return user if user.is_authenticated else None


def page_text(response):
    return re.sub(r"\s+", " ", response.content.decode())


def last_attempt():
    return SsoAttempt.objects.order_by("-pk").first()


def test_the_authorization_request_carries_pkce_a_nonce_and_a_state(
    client, oidc_settings, identity_provider
):
    authorization = urlsplit(start(client))
    query = {name: values[0] for name, values in parse_qs(authorization.query).items()}

    assert (
        f"{authorization.scheme}://{authorization.netloc}"
        == oidc_settings.SOCIALACCOUNT_PROVIDERS["openid_connect"]["APPS"][0]["settings"][
            "server_url"
        ]
    )
    assert query["response_type"] == "code"
    assert query["code_challenge_method"] == "S256"
    assert len(query["code_challenge"]) == 43
    assert len(query["nonce"]) >= 32
    assert len(query["state"]) >= 16
    # With the scope of the groups claim: this provider lists it in its discovery.
    assert set(query["scope"].split()) == {"openid", "profile", "email", "groups"}
    # A second sign-in gets its own.
    again = parse_qs(urlsplit(start(client)).query)
    assert again["nonce"][0] != query["nonce"]
    assert again["code_challenge"][0] != query["code_challenge"]


def test_a_manager_signs_in_and_gets_an_account_as_a_fleet_manager(client, oidc_settings):
    answer = sso(client, "manager", next="/vehicles/")

    assert answer.status_code == 302
    assert answer["Location"] == "/vehicles/"
    user = user_of(client)
    assert user.email == "manager@example.com"
    assert (user.first_name, user.last_name) == ("Marcos", "Gestor")
    assert not user.is_staff
    assert not user.is_superuser
    assert not user.has_usable_password()
    identity = SocialAccount.objects.get(user=user)
    assert (identity.provider, identity.uid) == ("acme", "sub-manager-0001")
    attempt = last_attempt()
    assert attempt.outcome == SsoOutcome.PROVISIONED
    assert (attempt.role, attempt.user, attempt.address) == ("manager", user, "127.0.0.1")
    assert client.get("/admin/").status_code == 302


def test_an_administrator_gets_the_admin(client, oidc_settings):
    assert sso(client, "admin").status_code == 302

    user = user_of(client)
    assert user.is_staff
    assert user.is_superuser
    assert client.get("/admin/").status_code == 200
    assert last_attempt().role == "administrator"


@pytest.mark.parametrize(
    ("username", "outcome", "explanation"),
    [
        ("unverified", SsoOutcome.UNVERIFIED_EMAIL, "não verificou o endereço de e-mail"),
        ("outsider", SsoOutcome.DOMAIN_NOT_ALLOWED, "não é de um dos domínios"),
    ],
)
def test_people_the_organisation_did_not_admit_get_an_explanation_and_no_session(
    client, oidc_settings, username, outcome, explanation
):
    answer = sso(client, username)

    assert answer.status_code == 403
    text = page_text(answer)
    assert "Sua organização não deu a você acesso ao Portal de Frota" in text
    assert explanation in text
    assert user_of(client) is None
    assert not User.objects.exists()
    assert not SocialAccount.objects.exists()
    attempt = last_attempt()
    assert (attempt.outcome, attempt.provider, attempt.user) == (outcome, "acme", None)
    assert attempt.subject == f"sub-{username}-0001"


def test_a_refused_person_may_sign_in_with_another_account(client, oidc_settings):
    browser = requests.Session()
    refused = sso(client, "outsider", browser=browser)
    another = re.search(r'<form method="post" action="([^"]+)">', refused.content.decode())

    # The provider asks again (prompt=login) and the other person gets in.
    answer = client.post(another.group(1), {"prompt": "login"})
    query = parse_qs(urlsplit(answer["Location"]).query)
    assert query["prompt"] == ["login"]
    callback = sign_in_at_provider(
        answer["Location"], "manager", SSO_PASSWORDS["manager"], session=browser
    )

    assert client.get(callback).status_code == 302
    assert user_of(client).email == "manager@example.com"


def test_with_managers_groups_the_group_decides_whatever_the_domain(
    client, oidc_settings, identity_provider
):
    app = oidc_app(identity_provider, manager_groups=["fleet-managers"])
    oidc_settings.SOCIALACCOUNT_PROVIDERS["openid_connect"]["APPS"] = [app]

    assert sso(client, "partner").status_code == 302  # partner.test, in the group
    assert user_of(client).email == "partner@partner.test"
    client.post("/accounts/logout/")

    identity_provider.update_user("manager", groups=[])  # example.com, out of the group
    refused = sso(client, "manager", browser=requests.Session())

    assert refused.status_code == 403
    assert "não está em um grupo que dá acesso" in page_text(refused)
    assert last_attempt().outcome == SsoOutcome.NO_ROLE


def test_removal_from_the_administrators_group_removes_the_admin_at_the_next_sign_in(
    client, oidc_settings, identity_provider
):
    browser = requests.Session()
    sso(client, "admin", browser=browser)
    assert client.get("/admin/").status_code == 200
    client.post("/accounts/logout/")

    identity_provider.update_user("admin", groups=["fleet-managers"])
    assert sso(client, "admin", browser=browser).status_code == 302

    user = user_of(client)
    assert not user.is_staff
    assert not user.is_superuser
    assert client.get("/admin/").status_code == 302
    assert client.get("/").status_code == 200  # still a fleet manager
    assert User.objects.count() == 1


def test_an_existing_user_is_matched_by_verified_email_once_then_by_subject(
    client, oidc_settings, identity_provider, manager
):
    manager.email = "Manager@Example.com"
    manager.save()

    assert sso(client, "manager").status_code == 302

    assert user_of(client) == manager
    assert last_attempt().outcome == SsoOutcome.LINKED
    # The fleet-app login stays linked: the embedded application opens as before.
    assert FleetAccount.objects.get(user=manager).email == FLEET_EMAIL
    assert "Vinculado a" in page_text(client.get("/app/account"))
    client.post("/accounts/logout/")

    # The e-mail changes at the provider: the subject still finds the same user.
    identity_provider.update_user("manager", email="marcos.gestor@example.com")
    assert sso(client, "manager", browser=requests.Session()).status_code == 302
    assert user_of(client) == manager
    assert last_attempt().outcome == SsoOutcome.SIGNED_IN
    manager.refresh_from_db()
    assert manager.email == "marcos.gestor@example.com"
    assert FleetAccount.objects.get(user=manager).password() == FLEET_PASSWORD


def test_an_email_already_linked_to_another_identity_is_not_matched_again(
    client, oidc_settings, identity_provider, manager
):
    manager.email = "manager@example.com"
    manager.save()
    sso(client, "manager")
    client.post("/accounts/logout/")

    # Someone else at the provider now shows the same address.
    identity_provider.update_user("partner", email="manager@example.com")
    refused = sso(client, "partner", browser=requests.Session())

    assert refused.status_code == 403
    assert last_attempt().outcome == SsoOutcome.CONFLICT
    assert user_of(client) is None
    assert SocialAccount.objects.filter(user=manager).count() == 1


def test_an_unverified_email_is_never_matched(client, oidc_settings, identity_provider, manager):
    manager.email = "manager@example.com"
    manager.save()
    identity_provider.update_user("partner", email="manager@example.com", email_verified=False)
    app = oidc_app(identity_provider, manager_groups=["fleet-managers"])
    oidc_settings.SOCIALACCOUNT_PROVIDERS["openid_connect"]["APPS"] = [app]

    assert sso(client, "partner").status_code == 302  # in the group: let in, as someone new

    newcomer = user_of(client)
    assert newcomer != manager
    assert newcomer.email == ""
    assert not SocialAccount.objects.filter(user=manager).exists()


def test_a_deactivated_user_is_refused_at_the_provider_door(client, oidc_settings):
    sso(client, "manager")
    user = user_of(client)
    client.post("/accounts/logout/")
    user.is_active = False
    user.save()

    refused = sso(client, "manager", browser=requests.Session())

    assert refused.status_code == 403
    assert "foi desativada" in page_text(refused)
    assert last_attempt().outcome == SsoOutcome.DEACTIVATED
    assert user_of(client) is None


def test_a_tampered_state_gets_a_clear_page_and_no_session(client, oidc_settings):
    callback = sign_in_at_provider(start(client), "manager", SSO_PASSWORDS["manager"])
    parts = urlsplit(callback)
    query = {name: values[0] for name, values in parse_qs(parts.query).items()}
    query["state"] = query["state"][::-1]

    answer = client.get(f"{parts.path}?{urlencode(query)}")

    assert answer.status_code == 400
    assert "não pôde ser verificada" in page_text(answer)
    assert user_of(client) is None
    assert last_attempt().outcome == SsoOutcome.BAD_ANSWER


def test_a_replayed_answer_gets_no_second_session(client, oidc_settings):
    callback = sign_in_at_provider(start(client), "manager", SSO_PASSWORDS["manager"])
    assert client.get(callback).status_code == 302
    client.post("/accounts/logout/")

    answer = client.get(callback)

    assert answer.status_code == 400
    assert user_of(client) is None
    assert last_attempt().outcome == SsoOutcome.BAD_ANSWER


@pytest.mark.parametrize(
    ("trick", "why"),
    [
        ({"claims": {"nonce": "a-nonce-from-another-sign-in"}}, "nonce"),
        ({"claims": {"aud": "another-client"}}, "InvalidAudienceError"),
        ({"claims": {"iss": "https://impostor.example"}}, "InvalidIssuerError"),
        ({"claims": {"exp": 1_000_000_000, "iat": 999_990_000}}, "ExpiredSignatureError"),
        ({"sign_with": "foreign"}, "InvalidSignatureError"),
    ],
    ids=["wrong-nonce", "another-client", "another-issuer", "expired", "unpublished-key"],
)
def test_an_id_token_that_does_not_check_out_gets_a_clear_page_and_no_session(
    client, oidc_settings, identity_provider, trick, why
):
    identity_provider.next_id_token(**trick)

    answer = sso(client, "admin")

    assert answer.status_code in {400, 403}
    assert "não" in page_text(answer)
    assert user_of(client) is None
    assert not User.objects.exists()
    attempt = last_attempt()
    assert attempt.outcome == SsoOutcome.BAD_ANSWER
    assert why in attempt.detail


@pytest.mark.parametrize(("behind", "signed_in"), [(30, True), (120, False)])
def test_the_providers_clock_may_run_a_little_ahead_of_the_portals(
    client, oidc_settings, behind, signed_in
):
    callback = sign_in_at_provider(start(client), "manager", SSO_PASSWORDS["manager"])

    # The ID token was issued "now" by the provider's clock; the portal's is behind.
    with time_machine.travel(time.time() - behind):
        answer = client.get(callback)

    assert (answer.status_code == 302) is signed_in
    if not signed_in:
        assert "ImmatureSignatureError" in last_attempt().detail


def test_a_key_rotated_at_the_provider_is_picked_up(client, oidc_settings, identity_provider):
    assert sso(client, "manager").status_code == 302
    client.post("/accounts/logout/")
    old_kids = {key["kid"] for key in identity_provider.jwks()["keys"]}

    new_kids = set(identity_provider.rotate_keys())

    assert not new_kids & old_kids
    assert sso(client, "manager", browser=requests.Session()).status_code == 302
    assert user_of(client).email == "manager@example.com"


def test_a_second_provider_from_the_admin_signs_es256_tokens(client, oidc_settings, group_provider):
    page = page_text(client.get("/accounts/login/"))
    assert "Entrar com Acme SSO" in page
    assert "Entrar com Grupo Holding" in page

    assert sso(client, "manager", provider="group").status_code == 302

    # That client's ID tokens are signed with ES256 (tests/test_idp.py), and checked here.
    assert SocialAccount.objects.get(user=user_of(client)).provider == "group"


def test_the_provider_down_gets_a_clear_page_and_local_login_for_staff(
    client, oidc_settings, identity_provider
):
    identity_provider.stop()

    answer = client.post("/accounts/oidc/acme/login/")

    assert answer.status_code == 503
    text = page_text(answer)
    assert "Acme SSO não está respondendo" in text
    assert "Administradores: com usuário e senha" in text
    assert 'name="password"' in text
    assert last_attempt().outcome == SsoOutcome.UNAVAILABLE


def test_the_provider_going_down_mid_sign_in_gets_a_clear_page(
    client, oidc_settings, identity_provider
):
    callback = sign_in_at_provider(start(client), "manager", SSO_PASSWORDS["manager"])
    identity_provider.stop()

    answer = client.get(callback)

    assert answer.status_code == 503
    assert "não está respondendo" in page_text(answer)
    assert user_of(client) is None


def test_cancelling_at_the_provider_says_so(client, oidc_settings):
    state = parse_qs(urlsplit(start(client)).query)["state"][0]

    answer = client.get(
        "/accounts/oidc/acme/login/callback/",
        {"error": "access_denied", "state": state},
    )

    assert answer.status_code == 200
    assert "foi cancelado" in page_text(answer)
    assert last_attempt().outcome == SsoOutcome.CANCELLED


def test_with_one_provider_and_local_login_off_the_login_page_goes_straight_to_it(
    client, oidc_settings, identity_provider
):
    oidc_settings.LOCAL_LOGIN = "off"

    answer = client.get("/accounts/login/?next=/fines/")

    assert answer.status_code == 302
    assert answer["Location"].startswith(f"{identity_provider.issuer}/")
    callback = sign_in_at_provider(answer["Location"], "manager", SSO_PASSWORDS["manager"])
    assert client.get(callback)["Location"] == "/fines/"


def test_the_login_page_shows_each_provider_and_the_local_form_to_staff_only(client, oidc_settings):
    text = page_text(client.get("/accounts/login/"))

    assert "Entrar com Acme SSO" in text
    assert "Administradores: com usuário e senha" in text


def test_sign_out_ends_the_session_here_and_at_the_provider(client, oidc_settings):
    browser = requests.Session()
    sso(client, "manager", browser=browser)

    answer = client.post("/accounts/logout/")

    assert user_of(client) is None
    assert answer.status_code == 302
    end_session = urlsplit(answer["Location"])
    query = parse_qs(end_session.query)
    assert query["post_logout_redirect_uri"] == ["http://testserver/accounts/signed-out/"]
    assert query["client_id"] == ["fleet-portal"]
    assert query["id_token_hint"][0].count(".") == 2
    back = sign_out_at_provider(answer["Location"], session=browser)
    assert back == "http://testserver/accounts/signed-out/"
    assert "Você saiu" in page_text(client.get(back))
    # The provider asks for the password again: this one is wrong, and it says so.
    with pytest.raises(SignInRefused):
        sign_in_at_provider(start(client), "manager", "not-the-password", session=browser)


def test_a_local_user_signs_out_without_a_trip_to_a_provider(client, oidc_settings, admin_user):
    client.post("/accounts/login/", {"username": "admin", "password": "password"})

    answer = client.post("/accounts/logout/")

    assert answer["Location"] == "/accounts/signed-out/"


def test_an_idle_session_from_the_provider_ends_too(client, oidc_settings):
    sso(client, "manager")
    assert client.get("/").status_code == 200

    with time_machine.travel(time.time() + 31 * 60, tick=False):
        answer = client.get("/")

    assert answer.status_code == 302
    assert answer["Location"].startswith("/accounts/login/")
    assert user_of(client) is None


def test_forms_may_lead_to_the_provider_where_they_must(
    client, oidc_settings, identity_provider, admin_user
):
    def form_action(response):
        policy = response["Content-Security-Policy"]
        return re.search(r"form-action ([^;]*)", policy).group(1).split()

    # Every page's deep-link form posts to /app/open, which redirects into the fleet app.
    fleet_app = oidc_settings.FLEET_LOGIN_ORIGIN
    # The login page's buttons post here and are sent on to the provider.
    assert identity_provider.issuer in form_action(client.get("/accounts/login/"))
    sso(client, "manager")
    # Signed in through it: every page's sign-out form ends there.
    assert form_action(client.get("/fines/")) == ["'self'", fleet_app, identity_provider.issuer]
    client.post("/accounts/logout/")
    oidc_settings.LOCAL_LOGIN = "on"
    client.post("/accounts/login/", {"username": "admin", "password": "password"})
    # A local session's pages lead nowhere else.
    page = client.get("/fines/")
    assert page.status_code == 200
    assert form_action(page) == ["'self'", fleet_app]
