"""What the sign-in tests share: for SCIM, two configured providers and their tokens, and a
client that speaks SCIM through Django's test client."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest
from allauth.socialaccount.models import SocialApp

from signin.scim.tokens import scim_token_mint
from tests.conftest import oidc_app

ISSUER = SimpleNamespace(issuer="https://login.example.com")
USER_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:User"
GROUP_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:Group"
PATCH_SCHEMA = "urn:ietf:params:scim:api:messages:2.0:PatchOp"
ERROR_SCHEMA = "urn:ietf:params:scim:api:messages:2.0:Error"


@pytest.fixture
def providers(settings: Any, db: Any) -> Any:
    """Acme from the environment (OIDC_PROVIDER_ID `acme`), Grupo from the admin."""
    settings.SOCIALACCOUNT_PROVIDERS = {
        "openid_connect": settings.SOCIALACCOUNT_PROVIDERS["openid_connect"]
        | {"APPS": [oidc_app(ISSUER)]}
    }
    SocialApp.objects.create(
        provider="openid_connect",
        provider_id="group",
        name="Grupo Holding",
        client_id="fleet-portal-group",
        secret="group-secret",
        settings={"server_url": "https://idp.grupo.example"},
    )
    return settings


class Scim:
    """A SCIM client of one provider, through Django's test client."""

    def __init__(self, client: Any, token: str | None) -> None:
        self.client = client
        self.token = token

    def call(self, method: str, path: str, body: Any = None, **query: Any) -> Any:
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        response = self.client.generic(
            method,
            f"/scim/v2/{path}" + (_query(query) if query else ""),
            json.dumps(body) if body is not None else "",
            content_type="application/scim+json",
            headers=headers,
        )
        response.data = json.loads(response.content) if response.content else None
        return response

    def get(self, path: str, **query: Any) -> Any:
        return self.call("GET", path, **query)

    def post(self, path: str, body: Any) -> Any:
        return self.call("POST", path, body)

    def patch(self, path: str, *operations: dict[str, Any]) -> Any:
        return self.call("PATCH", path, {"schemas": [PATCH_SCHEMA], "Operations": list(operations)})

    def delete(self, path: str) -> Any:
        return self.call("DELETE", path)

    def user_create(self, user_name: str, external_id: str | None = None, **more: Any) -> Any:
        body = {"schemas": [USER_SCHEMA], "userName": user_name, "active": True, **more}
        if external_id is not None:
            body["externalId"] = external_id
        return self.post("Users", body)

    def group_create(self, name: str, *member_ids: str, **more: Any) -> Any:
        body = {
            "schemas": [GROUP_SCHEMA],
            "displayName": name,
            "members": [{"value": member} for member in member_ids],
            **more,
        }
        return self.post("Groups", body)


def _query(query: dict[str, Any]) -> str:
    from urllib.parse import urlencode

    return "?" + urlencode(query)


@pytest.fixture
def acme(client: Any, providers: Any) -> Scim:
    return Scim(client, scim_token_mint(provider="acme", created_by="test"))


@pytest.fixture
def grupo(client: Any, providers: Any) -> Scim:
    return Scim(client, scim_token_mint(provider="group", created_by="test"))


def pushed_email(user: Any) -> str:
    """The e-mail `user`'s provider pushed over SCIM: pending until they sign in with it
    (the account's own e-mail, where alerts go, is the one a sign-in confirmed)."""
    from signin.models import ScimUser

    return ScimUser.objects.get(user=user, deleted_at__isnull=True).email
