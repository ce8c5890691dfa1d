"""SCIM lists as queries: each filter RFC 7644 defines on an attribute the portal keeps
selects what it says, and a page costs the same few queries however many users the
provider has and whatever the filter (before: a filter other than `eq` built every user
of the provider, with a query each)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.signin.conftest import USER_SCHEMA

pytestmark = pytest.mark.django_db


def names(answer) -> list[str]:
    assert answer.status_code == 200, answer.data
    return sorted(resource["userName"] for resource in answer.data.get("Resources", []))


@pytest.fixture
def people(acme):
    ana = acme.user_create("ana@a.example", "00u-ana", name={"givenName": "Ana"}).data["id"]
    bia = acme.user_create("Bia@a.example", "00u-bia", active=False).data["id"]
    acme.user_create("caio@b.example")  # no externalId
    # Nothing said of `active`: active.
    acme.post("Users", {"schemas": [USER_SCHEMA], "userName": "dani@c.example"})
    acme.group_create("fleet-sp", ana, bia)
    return {"ana": ana, "bia": bia}


@pytest.mark.parametrize(
    ("query", "found"),
    [
        ('userName eq "BIA@A.EXAMPLE"', ["Bia@a.example"]),  # not case-exact
        ('userName sw "a"', ["ana@a.example"]),
        ('userName ew "a.example"', ["Bia@a.example", "ana@a.example"]),
        ('userName co "@b."', ["caio@b.example"]),
        ('userName co "@c."', ["dani@c.example"]),
        ("externalId pr", ["Bia@a.example", "ana@a.example"]),
        ('externalId eq "00U-ANA"', []),  # case-exact
        ("active eq false", ["Bia@a.example"]),
        ("active eq true", ["ana@a.example", "caio@b.example", "dani@c.example"]),
        ("active pr", ["Bia@a.example", "ana@a.example", "caio@b.example"]),
        (
            'not (active eq false) and userName ne "caio@b.example"',
            ["ana@a.example", "dani@c.example"],
        ),
        ('name.givenName eq "Ana" or externalId eq "00u-bia"', ["Bia@a.example", "ana@a.example"]),
        ('groups.display eq "FLEET-SP"', ["Bia@a.example", "ana@a.example"]),
        ('id eq "not-an-id"', []),
        (
            'meta.created gt "2000-01-01T00:00:00Z"',
            ["Bia@a.example", "ana@a.example", "caio@b.example", "dani@c.example"],
        ),
        ('urn:ietf:params:scim:schemas:core:2.0:User:userName sw "c"', ["caio@b.example"]),
    ],
)
def test_each_filter_selects_what_it_says(acme, people, query, found):
    assert names(acme.get("Users", filter=query)) == found


def test_a_value_path_of_the_emails_and_of_the_members(acme, people):
    acme.call(
        "PATCH",
        f"Users/{people['ana']}",
        {
            "schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
            "Operations": [
                {
                    "op": "replace",
                    "path": "emails",
                    "value": [{"value": "ana@a.example", "type": "work", "primary": True}],
                }
            ],
        },
    )
    found = acme.get("Users", filter='emails[type eq "work" and value co "ana@"]')
    assert names(found) == ["ana@a.example"]
    assert names(acme.get("Users", filter='emails[type eq "home"]')) == []
    groups = acme.get("Groups", filter=f'members[value eq "{people["bia"]}"]')
    assert [group["displayName"] for group in groups.data["Resources"]] == ["fleet-sp"]


@pytest.mark.parametrize(
    "query",
    [
        'nickName eq "ana"',
        "title pr",
        'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:department eq "x"',
        "active gt true",
    ],
)
def test_a_filter_on_what_the_portal_does_not_keep_is_an_invalid_filter(acme, people, query):
    answer = acme.get("Users", filter=query)
    assert answer.status_code == 400
    assert answer.data["scimType"] == "invalidFilter"


def queries_of(acme, path: str, **query) -> int:
    with CaptureQueriesContext(connection) as captured:
        assert acme.get(path, **query).status_code == 200
    return len(captured.captured_queries)


@pytest.mark.parametrize(
    ("path", "query"),
    [
        ("Users", {"filter": 'userName sw "user"', "count": 1}),
        ("Users", {"filter": 'userName co "@" or active eq false', "count": 50}),
        ("Users", {}),
        ("Groups", {"filter": 'displayName sw "group"', "count": 50}),
    ],
)
def test_a_page_costs_the_same_queries_whatever_the_provider_holds(acme, path, query, time_machine):
    # One minute throughout: the first request of a minute makes its rate row (`ScimMinute`).
    time_machine.move_to("2026-11-27T12:00:05Z", tick=False)

    def grow(number: int) -> None:
        ids = [
            acme.user_create(f"user{number}-{n}@a.example", f"00u-{number}-{n}").data["id"]
            for n in range(number)
        ]
        for n in range(4):
            acme.group_create(f"group-{number}-{n}", *ids)

    grow(4)
    few = queries_of(acme, path, **query)
    grow(40)
    many = queries_of(acme, path, **query)

    assert many == few, (few, many)
