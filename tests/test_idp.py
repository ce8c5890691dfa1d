"""The identity provider of the tests (idp/server.mjs) through real HTTP, as a client sees it."""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
import requests
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

from tests.idp import (
    IdentityProvider,
    SignInRefused,
    identity_provider_or_skip,
    sign_in_at_provider,
    sign_out_at_provider,
)

RS_CLIENT = {
    "client_id": "portal-rs",
    "client_secret": "rs-client-secret",
    "redirect_uris": ["http://testserver/cb"],
    "post_logout_redirect_uris": ["http://testserver/signed-out/"],
    "id_token_signed_response_alg": "RS256",
}
ES_CLIENT = {
    "client_id": "portal-es",
    "client_secret": "es-client-secret",
    "redirect_uris": ["http://testserver/cb2"],
    "post_logout_redirect_uris": ["http://testserver/signed-out-2/"],
    "id_token_signed_response_alg": "ES256",
}
MANAGER = {
    "username": "manager",
    "password": "manager-sso-password",
    "sub": "0b7f4c1e-5d55-4c36-9d43-6f0f2f0e8a11",
    "email": "manager@example.com",
    "email_verified": True,
    "name": "Marcos Gestor",
    "given_name": "Marcos",
    "family_name": "Gestor",
    "groups": ["fleet-managers"],
}
ADMIN = {
    "username": "admin",
    "password": "admin-sso-password",
    "sub": "7c0d9a52-29b4-4f0e-8a35-2b8b3e9b6d02",
    "email": "admin@example.com",
    "email_verified": True,
    "name": "Ana Administradora",
    "given_name": "Ana",
    "family_name": "Administradora",
    "groups": ["fleet-managers", "fleet-admins"],
}
UNVERIFIED = {
    "username": "unverified",
    "password": "unverified-sso-password",
    "sub": "e4b1f7d8-0c5a-4d8e-b0a6-3f3e1c2d9b73",
    "email": "unverified@example.com",
    "email_verified": False,
    "groups": [],
}
CONFIG: dict[str, Any] = {"clients": [RS_CLIENT, ES_CLIENT], "users": [MANAGER, ADMIN, UNVERIFIED]}


@pytest.fixture(scope="module")
def idp_process() -> Iterator[IdentityProvider]:
    provider = identity_provider_or_skip(CONFIG)
    yield provider
    provider.close()


@pytest.fixture
def idp(idp_process: IdentityProvider) -> IdentityProvider:
    """The module's provider with its users as configured and no pending ID-token change."""
    idp_process.reset()
    return idp_process


@pytest.fixture
def browser() -> Iterator[requests.Session]:
    """One person's cookies at the provider."""
    with requests.Session() as session:
        yield session


# -- a relying party, by hand ------------------------------------------------------------------


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64url_decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@dataclass
class Request:
    """One authorization request and what the client keeps to finish it."""

    client: dict[str, Any]
    url: str
    state: str
    nonce: str
    verifier: str


def authorization_request(
    idp: IdentityProvider,
    client: dict[str, Any],
    *,
    scope: str = "openid profile email",
    pkce: bool = True,
) -> Request:
    state, nonce = secrets.token_urlsafe(16), secrets.token_urlsafe(16)
    verifier = secrets.token_urlsafe(48)  # 64 characters: PKCE wants 43 to 128
    params = {
        "response_type": "code",
        "client_id": client["client_id"],
        "redirect_uri": client["redirect_uris"][0],
        "scope": scope,
        "state": state,
        "nonce": nonce,
    }
    if pkce:
        challenge = b64url(hashlib.sha256(verifier.encode("ascii")).digest())
        params |= {"code_challenge": challenge, "code_challenge_method": "S256"}
    endpoint = idp.metadata()["authorization_endpoint"]
    return Request(client, f"{endpoint}?{urlencode(params)}", state, nonce, verifier)


def callback_params(request: Request, callback: str) -> dict[str, str]:
    """The callback's query, after checking it is the client's redirect URI."""
    parts = urlsplit(callback)
    assert f"{parts.scheme}://{parts.netloc}{parts.path}" == request.client["redirect_uris"][0]
    return {key: values[0] for key, values in parse_qs(parts.query).items()}


def token_request(
    idp: IdentityProvider,
    request: Request,
    code: str,
    *,
    verifier: str | None = None,
    auth: str = "basic",
) -> requests.Response:
    client = request.client
    data = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": client["redirect_uris"][0],
        "code_verifier": request.verifier if verifier is None else verifier,
    }
    credentials: tuple[str, str] | None = (client["client_id"], client["client_secret"])
    if auth == "post":
        data |= {"client_id": client["client_id"], "client_secret": client["client_secret"]}
        credentials = None
    return requests.post(idp.metadata()["token_endpoint"], data=data, auth=credentials, timeout=10)


def sign_in_and_get_tokens(
    idp: IdentityProvider,
    client: dict[str, Any],
    *,
    user: dict[str, Any] = MANAGER,
    session: requests.Session | None = None,
    scope: str = "openid profile email",
    auth: str = "basic",
) -> tuple[Request, dict[str, Any]]:
    request = authorization_request(idp, client, scope=scope)
    callback = sign_in_at_provider(request.url, user["username"], user["password"], session=session)
    params = callback_params(request, callback)
    assert params["state"] == request.state
    assert params["iss"] == idp.issuer
    response = token_request(idp, request, params["code"], auth=auth)
    assert response.status_code == 200, response.text
    return request, response.json()


def decode_jwt(token: str) -> tuple[dict[str, Any], dict[str, Any]]:
    header, payload, _ = token.split(".")
    return json.loads(b64url_decode(header)), json.loads(b64url_decode(payload))


def verifies_with(token: str, jwks: dict[str, Any]) -> bool:
    """Whether the token's signature verifies with the published key its header names."""
    header_part, payload_part, signature_part = token.split(".")
    header = json.loads(b64url_decode(header_part))
    signing_input = f"{header_part}.{payload_part}".encode("ascii")
    signature = b64url_decode(signature_part)
    keys = [key for key in jwks["keys"] if key["kid"] == header["kid"]]
    if not keys:
        return False
    (key,) = keys

    def number(name: str) -> int:
        return int.from_bytes(b64url_decode(key[name]), "big")

    try:
        if header["alg"] == "RS256":
            assert key["kty"] == "RSA"
            rsa_key = rsa.RSAPublicNumbers(number("e"), number("n")).public_key()
            rsa_key.verify(signature, signing_input, padding.PKCS1v15(), hashes.SHA256())
        elif header["alg"] == "ES256":
            assert key["kty"] == "EC"
            assert key["crv"] == "P-256"
            ec_key = ec.EllipticCurvePublicNumbers(
                number("x"), number("y"), ec.SECP256R1()
            ).public_key()
            r, s = (int.from_bytes(half, "big") for half in (signature[:32], signature[32:]))
            ec_key.verify(encode_dss_signature(r, s), signing_input, ec.ECDSA(hashes.SHA256()))
        else:
            raise AssertionError(f"unexpected alg {header['alg']}")
    except InvalidSignature:
        return False
    return True


def userinfo(idp: IdentityProvider, access_token: str) -> dict[str, Any]:
    response = requests.get(
        idp.metadata()["userinfo_endpoint"],
        headers={"Authorization": f"Bearer {access_token}"},
        timeout=10,
    )
    assert response.status_code == 200, response.text
    return response.json()


def profile_claims(user: dict[str, Any]) -> dict[str, Any]:
    """The claims a user's ID token and userinfo carry for `openid profile email`."""
    claims = {key: value for key, value in user.items() if key not in {"username", "password"}}
    return {**claims, "preferred_username": user["username"]}


# -- discovery ---------------------------------------------------------------------------------


def test_it_advertises_pkce_s256_logout_and_both_signing_algorithms(idp: IdentityProvider) -> None:
    metadata = idp.metadata()

    assert metadata["issuer"] == idp.issuer
    assert not idp.issuer.endswith("/")
    assert metadata["code_challenge_methods_supported"] == ["S256"]
    assert metadata["end_session_endpoint"] == f"{idp.issuer}/session/end"
    assert metadata["response_types_supported"] == ["code"]
    assert {"client_secret_basic", "client_secret_post"} <= set(
        metadata["token_endpoint_auth_methods_supported"]
    )
    assert {"RS256", "ES256"} <= set(metadata["id_token_signing_alg_values_supported"])
    assert {"openid", "profile", "email", "groups"} <= set(metadata["scopes_supported"])
    assert "groups" in metadata["claims_supported"]


def test_it_publishes_one_rsa_and_one_ec_signing_key(idp: IdentityProvider) -> None:
    keys = idp.jwks()["keys"]

    assert sorted((key["kty"], key["alg"], key["use"]) for key in keys) == [
        ("EC", "ES256", "sig"),
        ("RSA", "RS256", "sig"),
    ]
    assert len({key["kid"] for key in keys}) == 2
    assert all("d" not in key for key in keys), "a private part is published"


# -- the code flow -----------------------------------------------------------------------------


def test_it_signs_a_person_in_with_pkce_and_a_nonce(idp: IdentityProvider) -> None:
    request, tokens = sign_in_and_get_tokens(idp, RS_CLIENT)

    header, claims = decode_jwt(tokens["id_token"])
    assert header["alg"] == "RS256"
    assert verifies_with(tokens["id_token"], idp.jwks())
    assert claims["iss"] == idp.issuer
    assert claims["aud"] == "portal-rs"
    assert claims["nonce"] == request.nonce
    assert claims["exp"] - claims["iat"] == 3600
    assert {key: claims[key] for key in profile_claims(MANAGER)} == profile_claims(MANAGER)
    assert tokens["token_type"] == "Bearer"
    assert "refresh_token" not in tokens


def test_it_answers_the_same_claims_at_userinfo(idp: IdentityProvider) -> None:
    _, tokens = sign_in_and_get_tokens(idp, RS_CLIENT, user=ADMIN)

    assert userinfo(idp, tokens["access_token"]) == profile_claims(ADMIN)


def test_it_signs_with_es256_for_the_client_that_asks_and_takes_a_posted_secret(
    idp: IdentityProvider,
) -> None:
    request, tokens = sign_in_and_get_tokens(idp, ES_CLIENT, auth="post")

    header, claims = decode_jwt(tokens["id_token"])
    assert header["alg"] == "ES256"
    assert verifies_with(tokens["id_token"], idp.jwks())
    assert claims["aud"] == "portal-es"
    assert claims["nonce"] == request.nonce
    assert claims["groups"] == ["fleet-managers"]


def test_it_gives_an_empty_groups_list_and_unverified_email_as_they_are(
    idp: IdentityProvider,
) -> None:
    _, tokens = sign_in_and_get_tokens(idp, RS_CLIENT, user=UNVERIFIED)

    _, claims = decode_jwt(tokens["id_token"])
    assert claims["groups"] == []
    assert claims["email_verified"] is False
    assert "name" not in claims


def test_it_accepts_a_groups_scope(idp: IdentityProvider) -> None:
    _, tokens = sign_in_and_get_tokens(idp, RS_CLIENT, scope="openid profile email groups")

    assert decode_jwt(tokens["id_token"])[1]["groups"] == ["fleet-managers"]
    assert set(tokens["scope"].split()) == {"openid", "profile", "email", "groups"}


def test_configured_so_it_releases_groups_only_for_the_groups_scope() -> None:
    provider = identity_provider_or_skip(CONFIG | {"groups_scope_only": True})
    try:
        assert "groups" in provider.metadata()["scopes_supported"]
        for scope, groups in [
            ("openid profile email", None),
            ("openid groups", ["fleet-managers"]),
        ]:
            _, tokens = sign_in_and_get_tokens(provider, RS_CLIENT, scope=scope)
            assert decode_jwt(tokens["id_token"])[1].get("groups") == groups, scope
            assert userinfo(provider, tokens["access_token"]).get("groups") == groups, scope
    finally:
        provider.close()


def test_it_refuses_a_configuration_whose_groups_switch_is_not_a_boolean() -> None:
    with pytest.raises(RuntimeError, match='"groups_scope_only" must be true or false'):
        identity_provider_or_skip(CONFIG | {"groups_scope_only": "yes"})


def test_it_refuses_a_code_without_its_verifier(idp: IdentityProvider) -> None:
    request = authorization_request(idp, RS_CLIENT)
    params = callback_params(
        request, sign_in_at_provider(request.url, "manager", "manager-sso-password")
    )

    response = token_request(idp, request, params["code"], verifier=secrets.token_urlsafe(48))

    assert response.status_code == 400
    assert response.json()["error"] == "invalid_grant"


def test_it_refuses_an_authorization_request_without_pkce(idp: IdentityProvider) -> None:
    request = authorization_request(idp, RS_CLIENT, pkce=False)

    params = callback_params(
        request, sign_in_at_provider(request.url, "manager", "manager-sso-password")
    )

    assert params["error"] == "invalid_request"
    assert "PKCE" in params["error_description"]
    assert "code" not in params


def test_it_refuses_a_code_for_another_client(idp: IdentityProvider) -> None:
    request = authorization_request(idp, RS_CLIENT)
    params = callback_params(
        request, sign_in_at_provider(request.url, "manager", "manager-sso-password")
    )
    stolen = Request(ES_CLIENT, request.url, request.state, request.nonce, request.verifier)

    response = token_request(idp, stolen, params["code"])

    assert response.status_code == 400
    assert response.json()["error"] == "invalid_grant"


# -- the provider's pages ----------------------------------------------------------------------


def test_it_shows_its_own_sign_in_page(idp: IdentityProvider, browser: requests.Session) -> None:
    response = browser.get(authorization_request(idp, RS_CLIENT).url, timeout=10)

    assert response.status_code == 200
    assert response.url.startswith(f"{idp.issuer}/interaction/")
    html = response.text
    assert "<title>Demo identity provider</title>" in html
    assert "<h1>Sign in</h1>" in html
    assert '<label for="username">Username</label>' in html
    assert '<label for="password">Password</label>' in html
    assert 'id="username" name="username"' in html
    assert 'id="password" name="password" type="password"' in html
    assert '<button type="submit">Sign in</button>' in html


def test_it_refuses_a_wrong_password(idp: IdentityProvider) -> None:
    request = authorization_request(idp, RS_CLIENT)

    with pytest.raises(SignInRefused) as refused:
        sign_in_at_provider(request.url, "manager", "admin-sso-password")

    assert "Wrong username or password." in refused.value.page_text


def test_it_refuses_an_unknown_username(idp: IdentityProvider) -> None:
    request = authorization_request(idp, RS_CLIENT)

    with pytest.raises(SignInRefused):
        sign_in_at_provider(request.url, "nobody", "manager-sso-password")


def test_it_escapes_what_it_writes_back_into_the_page(
    idp: IdentityProvider, browser: requests.Session
) -> None:
    page = browser.get(authorization_request(idp, RS_CLIENT).url, timeout=10)
    uid = urlsplit(page.url).path.rsplit("/", 1)[-1]

    response = browser.post(
        f"{idp.issuer}/interaction/{uid}/login",
        data={"username": '"><script>alert(1)</script>', "password": "x"},
        timeout=10,
    )

    assert response.status_code == 200
    assert '<p class="error" role="alert">Wrong username or password.</p>' in response.text
    assert "<script>alert(1)" not in response.text
    assert 'value="&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;"' in response.text


def test_it_signs_in_again_without_the_password_in_the_same_browser(
    idp: IdentityProvider, browser: requests.Session
) -> None:
    sign_in_and_get_tokens(idp, RS_CLIENT, session=browser)

    # A wrong password would be refused if the form were shown: it is not.
    request = authorization_request(idp, RS_CLIENT)
    params = callback_params(
        request, sign_in_at_provider(request.url, "manager", "wrong", session=browser)
    )
    assert params["state"] == request.state
    response = token_request(idp, request, params["code"])
    assert decode_jwt(response.json()["id_token"])[1]["sub"] == MANAGER["sub"]


def test_it_asks_another_browser_for_the_password(
    idp: IdentityProvider, browser: requests.Session
) -> None:
    sign_in_and_get_tokens(idp, RS_CLIENT, session=browser)

    with pytest.raises(SignInRefused):
        sign_in_at_provider(authorization_request(idp, RS_CLIENT).url, "manager", "wrong")


def test_it_switches_accounts_when_asked_for_a_new_sign_in(
    idp: IdentityProvider, browser: requests.Session
) -> None:
    sign_in_and_get_tokens(idp, RS_CLIENT, session=browser)

    # prompt=login ("sign in with another account"): the password again, another person.
    request = authorization_request(idp, RS_CLIENT)
    url = f"{request.url}&prompt=login"
    callback = sign_in_at_provider(url, "admin", "admin-sso-password", session=browser)

    params = callback_params(request, callback)
    response = token_request(idp, request, params["code"])
    assert decode_jwt(response.json()["id_token"])[1]["sub"] == ADMIN["sub"]


# -- RP-initiated logout -----------------------------------------------------------------------


def test_it_ends_its_session_on_rp_initiated_logout_without_a_click(
    idp: IdentityProvider, browser: requests.Session
) -> None:
    _, tokens = sign_in_and_get_tokens(idp, RS_CLIENT, session=browser)
    state = secrets.token_urlsafe(8)
    end_session = idp.metadata()["end_session_endpoint"]
    query = urlencode(
        {
            "id_token_hint": tokens["id_token"],
            "post_logout_redirect_uri": "http://testserver/signed-out/",
            "state": state,
        }
    )
    page = browser.get(f"{end_session}?{query}", timeout=10)
    assert "data-auto-submit" in page.text
    assert '<input type="hidden" name="logout" value="yes"/>' in page.text

    landed = sign_out_at_provider(f"{end_session}?{query}", session=browser)

    assert landed == f"http://testserver/signed-out/?state={state}"
    with pytest.raises(SignInRefused):
        sign_in_at_provider(
            authorization_request(idp, RS_CLIENT).url, "manager", "wrong", session=browser
        )


def test_it_refuses_an_unregistered_post_logout_redirect_uri(
    idp: IdentityProvider, browser: requests.Session
) -> None:
    _, tokens = sign_in_and_get_tokens(idp, RS_CLIENT, session=browser)
    query = urlencode(
        {"id_token_hint": tokens["id_token"], "post_logout_redirect_uri": "http://evil.example/"}
    )

    response = browser.get(f"{idp.metadata()['end_session_endpoint']}?{query}", timeout=10)

    assert response.status_code == 400
    assert "post_logout_redirect_uri not registered" in response.text
    # Still signed in: single sign-on goes on.
    request = authorization_request(idp, RS_CLIENT)
    assert "code" in callback_params(
        request, sign_in_at_provider(request.url, "manager", "wrong", session=browser)
    )


def test_it_asks_before_signing_out_without_an_id_token_hint(
    idp: IdentityProvider, browser: requests.Session
) -> None:
    sign_in_and_get_tokens(idp, RS_CLIENT, session=browser)

    page = browser.get(idp.metadata()["end_session_endpoint"], timeout=10)

    assert page.status_code == 200
    assert "data-auto-submit" not in page.text
    assert '<button type="submit">Sign out</button>' in page.text
    assert sign_out_at_provider(page.url, session=browser).endswith("/session/end/success")
    assert "You are signed out" in browser.get(f"{idp.issuer}/session/end/success", timeout=10).text


# -- test controls -----------------------------------------------------------------------------


def test_it_publishes_and_signs_with_new_keys_after_rotation(idp: IdentityProvider) -> None:
    before = {key["kid"] for key in idp.jwks()["keys"]}

    kids = idp.rotate_keys()

    after = {key["kid"] for key in idp.jwks()["keys"]}
    assert after == set(kids)
    assert len(after) == 2
    assert not after & before
    for client in (RS_CLIENT, ES_CLIENT):
        _, tokens = sign_in_and_get_tokens(idp, client)
        assert decode_jwt(tokens["id_token"])[0]["kid"] in after
        assert verifies_with(tokens["id_token"], idp.jwks())


def test_it_keeps_the_browser_session_across_a_key_rotation(
    idp: IdentityProvider, browser: requests.Session
) -> None:
    sign_in_and_get_tokens(idp, RS_CLIENT, session=browser)

    idp.rotate_keys()

    sign_in_and_get_tokens(idp, RS_CLIENT, session=browser, user={**MANAGER, "password": "wrong"})


def test_it_changes_the_next_id_token_only(idp: IdentityProvider) -> None:
    idp.next_id_token({"nonce": "someone-else", "aud": "another-client"})

    request, tokens = sign_in_and_get_tokens(idp, RS_CLIENT)
    header, claims = decode_jwt(tokens["id_token"])
    assert claims["nonce"] == "someone-else"
    assert claims["aud"] == "another-client"
    assert claims["email"] == MANAGER["email"]
    assert verifies_with(tokens["id_token"], idp.jwks())
    assert header["alg"] == "RS256"
    assert "access_token" in tokens

    request, tokens = sign_in_and_get_tokens(idp, RS_CLIENT)
    claims = decode_jwt(tokens["id_token"])[1]
    assert claims["nonce"] == request.nonce
    assert claims["aud"] == "portal-rs"


@pytest.mark.parametrize("client", [RS_CLIENT, ES_CLIENT], ids=["RS256", "ES256"])
def test_it_signs_the_next_id_token_with_a_key_it_never_published(
    idp: IdentityProvider, client: dict[str, Any]
) -> None:
    idp.next_id_token({"exp": 1_000_000_000}, sign_with="foreign")

    _, tokens = sign_in_and_get_tokens(idp, client)

    header, claims = decode_jwt(tokens["id_token"])
    jwks = idp.jwks()
    assert header["kid"] in {key["kid"] for key in jwks["keys"]}
    assert header["alg"] == client["id_token_signed_response_alg"]
    assert claims["exp"] == 1_000_000_000
    assert not verifies_with(tokens["id_token"], jwks)


def test_it_puts_a_users_changed_claims_in_later_tokens_until_reset(
    idp: IdentityProvider,
) -> None:
    shown = idp.update_user("manager", groups=[], email_verified=False)
    assert "password" not in shown

    _, tokens = sign_in_and_get_tokens(idp, RS_CLIENT)
    claims = decode_jwt(tokens["id_token"])[1]
    assert claims["groups"] == []
    assert claims["email_verified"] is False
    assert userinfo(idp, tokens["access_token"])["groups"] == []

    idp.reset()

    _, tokens = sign_in_and_get_tokens(idp, RS_CLIENT)
    claims = decode_jwt(tokens["id_token"])[1]
    assert claims["groups"] == ["fleet-managers"]
    assert claims["email_verified"] is True


def test_it_answers_404_for_an_unknown_user(idp: IdentityProvider) -> None:
    with pytest.raises(requests.HTTPError) as error:
        idp.update_user("nobody", groups=[])

    assert error.value.response.status_code == 404


def test_it_forgets_a_pending_id_token_change_on_reset(idp: IdentityProvider) -> None:
    idp.next_id_token({"nonce": "x"})

    idp.reset()

    request, tokens = sign_in_and_get_tokens(idp, RS_CLIENT)
    assert decode_jwt(tokens["id_token"])[1]["nonce"] == request.nonce


def test_it_refuses_test_controls_without_the_flag_and_restarts_on_its_port() -> None:
    provider = identity_provider_or_skip(CONFIG, test_controls=False)
    try:
        assert provider.is_up()
        response = requests.get(provider.url("/_test/health"), timeout=10)
        assert response.status_code == 404
        assert requests.post(provider.url("/_test/rotate-keys"), timeout=10).status_code == 404
        issuer = provider.issuer

        provider.stop()
        assert not provider.is_up()
        provider.start()

        assert provider.issuer == issuer
        assert provider.is_up()
        assert provider.metadata()["issuer"] == issuer
    finally:
        provider.close()
