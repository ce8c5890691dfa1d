"""The schema tells the truth: `/Schemas` and `/ResourceTypes` advertise what the portal
keeps and returns, no more. What RFC 7643 defines beyond it, as Entra and Okta send it,
is accepted and dropped; an attribute no schema defines is refused. Before, the whole of
RFC 7643's User and the enterprise extension were advertised, and most of it not kept."""

from __future__ import annotations

from typing import Any

import pytest

from tests.signin.conftest import PATCH_SCHEMA, USER_SCHEMA

pytestmark = pytest.mark.django_db

ENTERPRISE = "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User"


def attributes(schema: dict[str, Any]) -> dict[str, set[str]]:
    return {
        attribute["name"]: {sub["name"] for sub in attribute.get("subAttributes", [])}
        for attribute in schema["attributes"]
    }


def test_the_advertised_schemas_are_what_is_kept(acme):
    schemas = {schema["id"]: schema for schema in acme.get("Schemas").data["Resources"]}
    assert set(schemas) == {USER_SCHEMA, "urn:ietf:params:scim:schemas:core:2.0:Group"}
    assert attributes(schemas[USER_SCHEMA]) == {
        "userName": set(),
        "name": {"givenName", "familyName"},
        "active": set(),
        "emails": {"value", "type", "primary"},
        "groups": {"value", "$ref", "display", "type"},
    }
    types = {kind["id"]: kind for kind in acme.get("ResourceTypes").data["Resources"]}
    assert not types["User"].get("schemaExtensions")


def test_what_is_not_kept_is_accepted_and_dropped_and_the_unknown_refused(acme):
    created = acme.post(
        "Users",
        {
            "schemas": [USER_SCHEMA, ENTERPRISE],
            "userName": "ana@example.com",
            "displayName": "Ana",
            "title": "Gerente",
            "name": {"givenName": "Ana", "middleName": "Maria", "familyName": "Souza"},
            "emails": [{"value": "ana@example.com", "type": "work", "display": "Ana"}],
            ENTERPRISE: {"department": "Frota", "manager": {"value": "x"}},
        },
    )
    assert created.status_code == 201, created.data
    assert created.data["name"] == {"givenName": "Ana", "familyName": "Souza"}
    assert created.data["emails"] == [{"value": "ana@example.com", "type": "work"}]
    assert not {"displayName", "title", ENTERPRISE} & set(created.data)

    patched = acme.patch(
        f"Users/{created.data['id']}",
        {"op": "replace", "path": f"{ENTERPRISE}:department", "value": "Vendas"},
        {"op": "add", "path": "nickName", "value": "Aninha"},
    )
    assert patched.status_code == 200, patched.data

    unknown = acme.post("Users", {"schemas": [USER_SCHEMA], "userName": "bia", "shoeSize": 38})
    assert unknown.status_code == 400
    assert (
        acme.call(
            "PATCH",
            f"Users/{created.data['id']}",
            {
                "schemas": [PATCH_SCHEMA],
                "Operations": [{"op": "add", "path": "shoeSize", "value": 1}],
            },
        ).status_code
        == 400
    )
