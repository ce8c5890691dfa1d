"""Single sign-on: no client secret, code, token or password in a
log line, a page, an error message or the audit trail."""

from __future__ import annotations

import json
import logging
from urllib.parse import parse_qs, urlsplit

import pytest
import requests

from signin.models import SsoAttempt
from tests.conftest import CLIENT_SECRET, GROUP_CLIENT_SECRET, SSO_PASSWORDS
from tests.idp import sign_in_at_provider, sign_out_at_provider

pytestmark = pytest.mark.django_db


def everything_in(response) -> str:
    headers = "\n".join(f"{name}: {value}" for name, value in response.items())
    return f"{headers}\n{response.content.decode(errors='replace')}"


def test_secrets_of_a_sign_in_appear_nowhere(
    client, admin_client, admin_user, oidc_settings, identity_provider, group_provider, log_records
):
    # The local administrator is not the provider's (never linked by e-mail: test_linking.py).
    admin_user.email = "break-glass@example.com"
    admin_user.save()
    browser = requests.Session()
    pages = []
    secrets = {CLIENT_SECRET, GROUP_CLIENT_SECRET, *SSO_PASSWORDS.values()}

    def through_the_provider(username, provider="acme"):
        start = client.post(f"/accounts/oidc/{provider}/login/")
        pages.append(start)
        callback = sign_in_at_provider(
            start["Location"], username, SSO_PASSWORDS[username], session=browser
        )
        secrets.add(parse_qs(urlsplit(callback).query)["code"][0])
        answer = client.get(callback)
        pages.append(answer)
        return answer

    through_the_provider("admin")
    secrets.add(client.session["signin.id_token"])
    for path in ("/", "/admin/socialaccount/socialaccount/", "/admin/signin/ssoattempt/"):
        pages.append(client.get(path))
    logout = client.post("/accounts/logout/")
    # The one place the ID token goes: back to its provider, as the sign-out's hint.
    assert "id_token_hint=" in logout["Location"]
    sign_out_at_provider(logout["Location"], session=browser)
    through_the_provider("outsider")  # refused
    identity_provider.next_id_token(claims={"nonce": "not-this-one"})
    through_the_provider("manager")  # a bad answer
    identity_provider.stop()
    pages.append(client.post("/accounts/oidc/acme/login/"))  # the provider is down
    identity_provider.start()
    change_page = f"/admin/socialaccount/socialapp/{group_provider.pk}/change/"
    pages.append(admin_client.get(change_page))
    pages.append(admin_client.get("/admin/signin/ssoattempt/"))

    seen = "\n".join(everything_in(page) for page in pages)
    logged = "\n".join(log_records.lines)
    audit = "\n".join(f"{a.detail} {a.subject} {a.email}" for a in SsoAttempt.objects.all())
    assert SsoAttempt.objects.count() == 4  # signed in, refused, a bad answer, down
    for secret in secrets:
        assert secret not in seen
        assert secret not in logged
        assert secret not in audit


def test_the_development_servers_request_lines_lose_the_code(settings):
    handler = logging.getLogger("django.server").handlers[0]
    record = logging.LogRecord(
        "django.server",
        logging.INFO,
        __file__,
        1,
        '"%s" %s %s',
        ("GET /accounts/oidc/acme/login/callback/?code=Xy7-secret-code&state=abc HTTP/1.1", 302, 0),
        None,
    )

    assert handler.filter(record)
    line = handler.format(record)

    assert "Xy7-secret-code" not in line
    assert "code=[REDACTED]&state=abc" in line


def test_a_providers_client_secret_is_typed_in_the_admin_and_never_shown(
    admin_client, identity_provider, group_provider
):
    app = group_provider
    url = f"/admin/socialaccount/socialapp/{app.pk}/change/"
    form = {
        "provider": "openid_connect",
        "provider_id": "group",
        "name": "Grupo Holding S.A.",
        "client_id": "fleet-portal-group",
        "secret": "",
        "settings": json.dumps({"server_url": identity_provider.issuer}),
    }

    assert GROUP_CLIENT_SECRET not in admin_client.get(url).content.decode()
    assert admin_client.post(url, form).status_code == 302

    app.refresh_from_db()
    assert app.name == "Grupo Holding S.A."
    assert app.secret == GROUP_CLIENT_SECRET  # left empty: kept
    admin_client.post(url, form | {"secret": "a-new-secret-from-the-provider"})
    app.refresh_from_db()
    assert app.secret == "a-new-secret-from-the-provider"
