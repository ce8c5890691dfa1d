"""The requests Microsoft Entra ID and Okta send to a SCIM service provider, replayed as
their public documentation shows them: each body is the documented text, with only the
ids the documentation made up replaced by the ones the portal gave. Each sequence ends
in the state the provider expects, in the answers it reads and in the portal."""

from __future__ import annotations

import json
from urllib.parse import quote

import pytest
from allauth.socialaccount.models import SocialAccount
from django.contrib.auth.models import User
from django.contrib.sessions.models import Session

from alerts.models import AlertPause, PauseReason
from fleet.models import DirectoryGroup, VehicleGroup
from signin.models import ScimGroup, ScimUser
from tests.signin.conftest import ERROR_SCHEMA, GROUP_SCHEMA, USER_SCHEMA, pushed_email
from tests.signin.test_scim_groups import sees
from tests.signin.test_scim_users import signed_in_session

pytestmark = [pytest.mark.django_db, pytest.mark.scoped]

LIST_SCHEMA = "urn:ietf:params:scim:api:messages:2.0:ListResponse"


def replay(scim, method, path, body=""):
    """`method` on /scim/v2/`path` (its query as documented, percent-encoded as on the
    wire) with `body`, the documented text, as the provider's client sends it."""
    response = scim.client.generic(
        method,
        "/scim/v2/" + quote(path, safe="/?=&%"),
        body,
        content_type="application/scim+json",
        headers={"Authorization": f"Bearer {scim.token}"},
    )
    assert response["Content-Type"] == "application/scim+json" or not response.content
    response.data = json.loads(response.content) if response.content else None
    return response


def assert_deactivated(user, session_key):
    """`user`, read afresh, is inactive, signed out and their alerts paused."""
    user.refresh_from_db()
    assert user.is_active is False
    assert not Session.objects.filter(session_key=session_key).exists()
    assert AlertPause.objects.current().get(user=user).reason == PauseReason.DEPROVISIONED


# -- Microsoft Entra ID ----------------------------------------------------------------
# https://learn.microsoft.com/en-us/entra/identity/app-provisioning/use-scim-to-provision-users-and-groups#scim-protocol-requests-and-responses
# ("User Operations" and "Group Operations": the request of each example as shown there.)

ENTRA_CREATE_USER = """{
    "schemas": [
        "urn:ietf:params:scim:schemas:core:2.0:User",
        "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User"],
    "externalId": "0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef",
    "userName": "Test_User_00aa00aa-bb11-cc22-dd33-44ee44ee44ee",
    "active": true,
    "emails": [{
        "primary": true,
        "type": "work",
        "value": "Test_User_11bb11bb-cc22-dd33-ee44-55ff55ff55ff@testuser.com"
    }],
    "meta": {
        "resourceType": "User"
    },
    "name": {
        "formatted": "givenName familyName",
        "familyName": "familyName",
        "givenName": "givenName"
    },
    "roles": []
}"""
ENTRA_GET_USER = "Users/5d48a0a8e9f04aa38008"
ENTRA_GET_USER_ABSENT = "Users/5171a35d82074e068ce2"
ENTRA_GET_USER_BY_QUERY = (
    'Users?filter=userName eq "Test_User_00aa00aa-bb11-cc22-dd33-44ee44ee44ee"'
)
ENTRA_GET_USER_BY_QUERY_ZERO = 'Users?filter=userName eq "non-existent user"'
ENTRA_UPDATE_USER_MULTI_VALUED = r"""{
    "schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
    "Operations": [
            {
            "op": "Replace",
            "path": "emails[type eq \"work\"].value",
            "value": "updatedEmail@microsoft.com"
            },
            {
            "op": "Replace",
            "path": "name.familyName",
            "value": "updatedFamilyName"
            }
    ]
}"""
ENTRA_UPDATE_USER_MULTI_VALUED_PATH = "Users/6764549bef60420686bc"
ENTRA_UPDATE_USER_SINGLE_VALUED = """{
    "schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
    "Operations": [{
        "op": "Replace",
        "path": "userName",
        "value": "5b50642d-79fc-4410-9e90-4c077cdd1a59@testuser.com"
    }]
}"""
ENTRA_DISABLE_USER = """{
    "Operations": [
        {
            "op": "Replace",
            "path": "active",
            "value": false
        }
    ],
    "schemas": [
        "urn:ietf:params:scim:api:messages:2.0:PatchOp"
    ]
}"""
ENTRA_USER_PATH = "Users/5171a35d82074e068ce2"  # Update [Single-valued], Disable, Delete
ENTRA_CREATE_GROUP = """{
    "schemas": ["urn:ietf:params:scim:schemas:core:2.0:Group", "http://schemas.microsoft.com/2006/11/ResourceManagement/ADSCIM/2.0/Group"],
    "externalId": "8aa1a0c0-c4c3-4bc0-b4a5-2ef676900159",
    "displayName": "displayName",
    "meta": {
        "resourceType": "Group"
    }
}"""
ENTRA_GET_GROUP = "Groups/40734ae655284ad3abcc?excludedAttributes=members"
ENTRA_GET_GROUP_BY_DISPLAY_NAME = (
    'Groups?excludedAttributes=members&filter=displayName eq "displayName"'
)
ENTRA_UPDATE_GROUP_NON_MEMBER = """{
    "schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
    "Operations": [{
        "op": "Replace",
        "path": "displayName",
        "value": "1879db59-3bdf-4490-ad68-ab880a269474updatedDisplayName"
    }]
}"""
ENTRA_UPDATE_GROUP_NON_MEMBER_PATH = "Groups/fa2ce26709934589afc5"
ENTRA_UPDATE_GROUP_ADD_MEMBERS = """{
    "schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
    "Operations": [{
        "op": "Add",
        "path": "members",
        "value": [{
            "$ref": null,
            "value": "f648f8d5ea4e4cd38e9c"
        }]
    }]
}"""
ENTRA_UPDATE_GROUP_REMOVE_MEMBERS = """{
    "schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
    "Operations": [{
        "op": "Remove",
        "path": "members",
        "value": [{
            "$ref": null,
            "value": "f648f8d5ea4e4cd38e9c"
        }]
    }]
}"""
ENTRA_UPDATE_GROUP_MEMBERS_PATH = "Groups/a99962b9f99d4c4fac67"
ENTRA_DELETE_GROUP = "Groups/cdb1ce18f65944079d37"
ENTRA_MEMBER_ID = "f648f8d5ea4e4cd38e9c"
ENTRA_EXTERNAL_ID = "0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef"  # Create User's


def entra_user(scim):
    """Entra's Create User, replayed: the id the portal gave."""
    created = replay(scim, "POST", "Users", ENTRA_CREATE_USER)
    assert created.status_code == 201, created.data
    return created.data["id"]


def test_entra_finds_no_user_then_creates_and_finds_them(acme):
    absent = replay(acme, "GET", ENTRA_GET_USER_BY_QUERY_ZERO)
    assert absent.status_code == 200
    assert absent.data["schemas"] == [LIST_SCHEMA]
    assert (absent.data["totalResults"], absent.data["Resources"]) == (0, [])
    assert replay(acme, "GET", ENTRA_GET_USER_BY_QUERY).data["totalResults"] == 0

    created = replay(acme, "POST", "Users", ENTRA_CREATE_USER)
    assert created.status_code == 201, created.data
    assert created.data["schemas"] == [USER_SCHEMA]
    assert created.data["id"]
    assert created.data["externalId"] == ENTRA_EXTERNAL_ID
    assert created.data["userName"] == "Test_User_00aa00aa-bb11-cc22-dd33-44ee44ee44ee"
    assert created.data["active"] is True
    assert created.data["name"] == {"familyName": "familyName", "givenName": "givenName"}
    email = "Test_User_11bb11bb-cc22-dd33-ee44-55ff55ff55ff@testuser.com"
    assert created.data["emails"] == [{"value": email, "type": "work", "primary": True}]
    user_id = created.data["id"]

    fetched = replay(acme, "GET", ENTRA_GET_USER.replace("5d48a0a8e9f04aa38008", user_id))
    assert fetched.status_code == 200
    assert fetched.data["id"] == user_id
    assert fetched.data["externalId"] == ENTRA_EXTERNAL_ID
    found = replay(acme, "GET", ENTRA_GET_USER_BY_QUERY)
    assert found.status_code == 200
    assert found.data["schemas"] == [LIST_SCHEMA]
    assert found.data["totalResults"] == 1
    assert [user["id"] for user in found.data["Resources"]] == [user_id]
    not_found = replay(acme, "GET", ENTRA_GET_USER_ABSENT)
    assert not_found.status_code == 404
    assert (not_found.data["schemas"], not_found.data["status"]) == ([ERROR_SCHEMA], "404")

    # testuser.com is no configured provider's domain: Acme may vouch for it.
    user = User.objects.get(username="Test_User_00aa00aa-bb11-cc22-dd33-44ee44ee44ee")
    assert (user.first_name, user.last_name, pushed_email(user)) == (
        "givenName",
        "familyName",
        email,
    )
    assert user.is_active is True
    identity = SocialAccount.objects.get(user=user)
    assert (identity.provider, identity.uid) == ("acme", ENTRA_EXTERNAL_ID)
    assert str(ScimUser.objects.get(user=user).id) == user_id


def test_entra_updates_a_users_work_email_family_name_and_user_name(acme):
    user_id = entra_user(acme)

    multi = replay(
        acme,
        "PATCH",
        ENTRA_UPDATE_USER_MULTI_VALUED_PATH.replace("6764549bef60420686bc", user_id),
        ENTRA_UPDATE_USER_MULTI_VALUED,
    )
    assert multi.status_code in (200, 204), multi.data
    assert multi.data["emails"] == [
        {"value": "updatedEmail@microsoft.com", "type": "work", "primary": True}
    ]
    assert multi.data["name"] == {"familyName": "updatedFamilyName", "givenName": "givenName"}
    single = replay(
        acme,
        "PATCH",
        ENTRA_USER_PATH.replace("5171a35d82074e068ce2", user_id),
        ENTRA_UPDATE_USER_SINGLE_VALUED,
    )
    assert single.status_code in (200, 204), single.data
    assert single.data["userName"] == "5b50642d-79fc-4410-9e90-4c077cdd1a59@testuser.com"
    assert single.data["emails"][0]["value"] == "updatedEmail@microsoft.com"

    scim_user = ScimUser.objects.select_related("user").get()
    assert scim_user.user_name == "5b50642d-79fc-4410-9e90-4c077cdd1a59@testuser.com"
    user = scim_user.user
    assert (user.last_name, pushed_email(user)) == (
        "updatedFamilyName",
        "updatedEmail@microsoft.com",
    )
    assert SocialAccount.objects.get(user=user).uid == ENTRA_EXTERNAL_ID
    found = replay(
        acme, "GET", 'Users?filter=userName eq "5b50642d-79fc-4410-9e90-4c077cdd1a59@testuser.com"'
    )
    assert [found_user["id"] for found_user in found.data["Resources"]] == [user_id]


def test_entra_disables_then_deletes_a_user(acme):
    user_id = entra_user(acme)
    user = User.objects.get()
    session_key = signed_in_session(user)
    path = ENTRA_USER_PATH.replace("5171a35d82074e068ce2", user_id)

    disabled = replay(acme, "PATCH", path, ENTRA_DISABLE_USER)
    assert disabled.status_code in (200, 204), disabled.data
    assert disabled.data["active"] is False
    assert_deactivated(user, session_key)
    # Entra keeps reading a disabled user: only a deleted one is gone.
    assert replay(acme, "GET", path).data["active"] is False

    deleted = replay(acme, "DELETE", path)
    assert deleted.status_code == 204
    assert deleted.content == b""
    assert replay(acme, "GET", path).status_code == 404
    assert replay(acme, "GET", ENTRA_GET_USER_BY_QUERY).data["totalResults"] == 0
    user.refresh_from_db()
    assert user.is_active is False
    assert ScimUser.objects.get().deleted_at is not None
    assert SocialAccount.objects.get(user=user).uid == ENTRA_EXTERNAL_ID


@pytest.fixture
def sao_paulo(providers):
    """São Paulo's vehicles, given by Entra's group (its objectId, the group's externalId,
    at Acme) and by Okta's (its name, at Grupo)."""
    group = VehicleGroup.objects.create(name="São Paulo")
    DirectoryGroup.objects.create(
        provider="acme", value="8aa1a0c0-c4c3-4bc0-b4a5-2ef676900159", group=group
    )
    DirectoryGroup.objects.create(provider="group", value="Test SCIMv2", group=group)
    return group


def test_entra_creates_a_group_adds_and_removes_a_member_and_deletes_it(acme, sao_paulo):
    user_id = entra_user(acme)
    user_name = "Test_User_00aa00aa-bb11-cc22-dd33-44ee44ee44ee"

    created = replay(acme, "POST", "Groups", ENTRA_CREATE_GROUP)
    assert created.status_code == 201, created.data
    assert created.data["schemas"] == [GROUP_SCHEMA]
    assert created.data["externalId"] == "8aa1a0c0-c4c3-4bc0-b4a5-2ef676900159"
    assert created.data["displayName"] == "displayName"
    assert not created.data.get("members")
    group_id = created.data["id"]

    fetched = replay(acme, "GET", ENTRA_GET_GROUP.replace("40734ae655284ad3abcc", group_id))
    assert fetched.status_code == 200
    assert fetched.data["id"] == group_id
    assert "members" not in fetched.data
    found = replay(acme, "GET", ENTRA_GET_GROUP_BY_DISPLAY_NAME)
    assert found.data["schemas"] == [LIST_SCHEMA]
    assert found.data["totalResults"] == 1
    assert [group["id"] for group in found.data["Resources"]] == [group_id]

    renamed = replay(
        acme,
        "PATCH",
        ENTRA_UPDATE_GROUP_NON_MEMBER_PATH.replace("fa2ce26709934589afc5", group_id),
        ENTRA_UPDATE_GROUP_NON_MEMBER,
    )
    assert renamed.status_code in (200, 204), renamed.data
    group = ScimGroup.objects.get()
    assert group.display_name == "1879db59-3bdf-4490-ad68-ab880a269474updatedDisplayName"

    members_path = ENTRA_UPDATE_GROUP_MEMBERS_PATH.replace("a99962b9f99d4c4fac67", group_id)
    added = replay(
        acme,
        "PATCH",
        members_path,
        ENTRA_UPDATE_GROUP_ADD_MEMBERS.replace(ENTRA_MEMBER_ID, user_id),
    )
    assert added.status_code in (200, 204), added.data
    assert [str(member.id) for member in group.members.all()] == [user_id]
    assert sees(user_name) == ("São Paulo",)
    removed = replay(
        acme,
        "PATCH",
        members_path,
        ENTRA_UPDATE_GROUP_REMOVE_MEMBERS.replace(ENTRA_MEMBER_ID, user_id),
    )
    assert removed.status_code in (200, 204), removed.data
    assert not group.members.exists()
    assert sees(user_name) == ()

    deleted = replay(acme, "DELETE", ENTRA_DELETE_GROUP.replace("cdb1ce18f65944079d37", group_id))
    assert deleted.status_code == 204
    assert not ScimGroup.objects.exists()
    assert replay(acme, "GET", f"Groups/{group_id}").status_code == 404
    assert User.objects.get().is_active is True


def test_a_schema_the_portal_does_not_know_is_still_refused_when_it_carries_attributes(acme):
    """Entra's own group schema is left out because it comes with nothing."""
    group = json.loads(ENTRA_CREATE_GROUP)
    group["http://schemas.microsoft.com/2006/11/ResourceManagement/ADSCIM/2.0/Group"] = {
        "mailNickname": "fleet"
    }
    refused = replay(acme, "POST", "Groups", json.dumps(group))
    assert refused.status_code == 400
    assert refused.data["scimType"] == "invalidSyntax"
    assert "ADSCIM" in refused.data["detail"]
    assert not ScimGroup.objects.exists()


def test_entra_gives_a_work_email_to_a_user_who_has_none(acme, grupo):
    """Grupo (as Entra) pushes Acme's domain, which it may not vouch for: no e-mail is
    kept, so the work e-mail Entra then replaces is made (not `noTarget`)."""
    created = grupo.user_create(
        "ana@example.com", "00u-ana", emails=[{"value": "ana@example.com", "type": "work"}]
    )
    assert "emails" not in created.data
    updated = replay(
        grupo,
        "PATCH",
        ENTRA_UPDATE_USER_MULTI_VALUED_PATH.replace("6764549bef60420686bc", created.data["id"]),
        ENTRA_UPDATE_USER_MULTI_VALUED,
    )
    assert updated.status_code in (200, 204), updated.data
    # As Entra made it: its path's type, no primary.
    assert updated.data["emails"] == [{"value": "updatedEmail@microsoft.com", "type": "work"}]
    user = User.objects.get()
    assert (user.last_name, pushed_email(user)) == (
        "updatedFamilyName",
        "updatedEmail@microsoft.com",
    )


def test_entra_cannot_give_an_address_another_provider_admits(acme, grupo):
    """Acme admits example.com: an address there, from Entra's replace at Grupo, is not
    kept and the one the user had stays."""
    created = grupo.user_create(
        "zed", "00u-zed", emails=[{"value": "zed@grupo.example", "type": "work"}]
    )
    taken = ENTRA_UPDATE_USER_MULTI_VALUED.replace(
        "updatedEmail@microsoft.com", "updatedEmail@example.com"
    )
    updated = replay(grupo, "PATCH", f"Users/{created.data['id']}", taken)
    assert updated.status_code in (200, 204), updated.data
    assert updated.data["emails"][0]["value"] == "zed@grupo.example"
    user = User.objects.get()
    assert (user.last_name, pushed_email(user)) == ("updatedFamilyName", "zed@grupo.example")


# https://learn.microsoft.com/en-us/entra/identity/app-provisioning/application-provisioning-config-problem-scim-compatibility#flags-to-alter-the-scim-behavior
# The PATCH requests Entra sends without the SCIM-compliance flag (its default) and with it
# (`aadOptscim062020` in the tenant URL).

ENTRA_DISABLE_WITHOUT_FLAG = """{
  "schemas": [
      "urn:ietf:params:scim:api:messages:2.0:PatchOp"
  ],
  "Operations": [
      {
          "op": "Replace",
          "path": "active",
          "value": "False"
      }
  ]
}"""
ENTRA_DISABLE_WITH_FLAG = """{
  "schemas": [
      "urn:ietf:params:scim:api:messages:2.0:PatchOp"
  ],
  "Operations": [
      {
          "op": "replace",
          "path": "active",
          "value": false
      }
  ]
}"""
ENTRA_ADD_ATTRIBUTE_WITHOUT_FLAG = """{
  "schemas": [
      "urn:ietf:params:scim:api:messages:2.0:PatchOp"
  ],
  "Operations": [
    {
      "op": "Add",
      "path": "nickName",
      "value": "Babs"
    }
  ]
}"""
ENTRA_ADD_ATTRIBUTE_WITH_FLAG = """{
  "schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
  "Operations": [
    {
      "op": "add",
      "path": "nickName",
      "value": "Babs"
    }
  ]
}"""
ENTRA_REPLACE_ATTRIBUTES_WITHOUT_FLAG = r"""{
  "schemas": [
      "urn:ietf:params:scim:api:messages:2.0:PatchOp"
  ],
  "Operations": [
      {
          "op": "Replace",
          "path": "displayName",
          "value": "Pvlo"
      },
      {
          "op": "Replace",
          "path": "emails[type eq \"work\"].value",
          "value": "TestBcwqnm@test.microsoft.com"
      },
      {
          "op": "Replace",
          "path": "name.givenName",
          "value": "Gtfd"
      },
      {
          "op": "Replace",
          "path": "name.familyName",
          "value": "Pkqf"
      },
      {
          "op": "Replace",
          "path": "externalId",
          "value": "Eqpj"
      },
      {
          "op": "Replace",
          "path": "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:employeeNumber",
          "value": "Eqpj"
      }
  ]
}"""
ENTRA_REPLACE_ATTRIBUTES_WITH_FLAG = r"""{
  "schemas": [
      "urn:ietf:params:scim:api:messages:2.0:PatchOp"
  ],
  "Operations": [
      {
          "op": "replace",
          "path": "emails[type eq \"work\"].value",
          "value": "TestMhvaes@test.microsoft.com"
      },
      {
          "op": "replace",
          "value": {
              "displayName": "Bjfe",
              "name.givenName": "Kkom",
              "name.familyName": "Unua",
              "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:employeeNumber": "Aklq"
          }
      }
  ]
}"""
ENTRA_REMOVE_MEMBER_WITHOUT_FLAG = """{
  "schemas": [
      "urn:ietf:params:scim:api:messages:2.0:PatchOp"
  ],
  "Operations": [
      {
          "op": "Remove",
          "path": "members",
          "value": [
              {
                  "value": "u1091"
              }
          ]
      }
  ]
}"""
ENTRA_REMOVE_MEMBER_WITH_FLAG = r"""{
  "schemas": [
      "urn:ietf:params:scim:api:messages:2.0:PatchOp"
  ],
  "Operations": [
      {
          "op": "remove",
          "path": "members[value eq \"7f4bc1a3-285e-48ae-8202-5accb43efb0e\"]"
      }
  ]
}"""


@pytest.mark.parametrize(
    ("replace_attributes", "add_attribute", "remove_member", "member_id", "disable", "expected"),
    [
        (
            ENTRA_REPLACE_ATTRIBUTES_WITHOUT_FLAG,
            ENTRA_ADD_ATTRIBUTE_WITHOUT_FLAG,
            ENTRA_REMOVE_MEMBER_WITHOUT_FLAG,
            "u1091",
            ENTRA_DISABLE_WITHOUT_FLAG,
            ("Gtfd", "Pkqf", "TestBcwqnm@test.microsoft.com", "Eqpj"),
        ),
        (
            ENTRA_REPLACE_ATTRIBUTES_WITH_FLAG,
            ENTRA_ADD_ATTRIBUTE_WITH_FLAG,
            ENTRA_REMOVE_MEMBER_WITH_FLAG,
            "7f4bc1a3-285e-48ae-8202-5accb43efb0e",
            ENTRA_DISABLE_WITH_FLAG,
            ("Kkom", "Unua", "TestMhvaes@test.microsoft.com", ENTRA_EXTERNAL_ID),
        ),
    ],
    ids=["without-flag", "with-flag"],
)
def test_entra_patches_with_and_without_the_scim_compliance_flag(
    acme, sao_paulo, replace_attributes, add_attribute, remove_member, member_id, disable, expected
):
    user_id = entra_user(acme)
    user = User.objects.get()
    session_key = signed_in_session(user)
    group_id = replay(acme, "POST", "Groups", ENTRA_CREATE_GROUP).data["id"]
    added = ENTRA_UPDATE_GROUP_ADD_MEMBERS.replace(ENTRA_MEMBER_ID, user_id)
    assert replay(acme, "PATCH", f"Groups/{group_id}", added).status_code in (200, 204)
    assert sees(user.username) == ("São Paulo",)

    replaced = replay(acme, "PATCH", f"Users/{user_id}", replace_attributes)
    assert replaced.status_code in (200, 204), replaced.data
    given_name, family_name, email, external_id = expected
    assert replaced.data["name"] == {"familyName": family_name, "givenName": given_name}
    assert replaced.data["emails"] == [{"value": email, "type": "work", "primary": True}]
    assert replaced.data["externalId"] == external_id
    nicknamed = replay(acme, "PATCH", f"Users/{user_id}", add_attribute)
    assert nicknamed.status_code in (200, 204), nicknamed.data
    user.refresh_from_db()
    assert (user.first_name, user.last_name, pushed_email(user)) == (given_name, family_name, email)
    # A new externalId is the subject the person now signs in with.
    assert SocialAccount.objects.get(user=user).uid == external_id

    removed = replay(acme, "PATCH", f"Groups/{group_id}", remove_member.replace(member_id, user_id))
    assert removed.status_code in (200, 204), removed.data
    assert not ScimGroup.objects.get().members.exists()
    assert sees(user.username) == ()

    disabled = replay(acme, "PATCH", f"Users/{user_id}", disable)
    assert disabled.status_code in (200, 204), disabled.data
    assert disabled.data["active"] is False
    assert_deactivated(user, session_key)


# Entra's default attribute mapping gives the enterprise extension's manager from the
# directory's manager: sent as the manager's bare id (not `{"value": ...}`), with
# capitalised ops, then removed with no value. Not kept by the portal; never refused.
ENTRA_MANAGER = "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:manager"


@pytest.mark.parametrize(
    "operation",
    [
        {"op": "Add", "path": ENTRA_MANAGER, "value": "{boss}"},
        {"op": "Replace", "path": ENTRA_MANAGER, "value": "{boss}"},
        {"op": "replace", "path": ENTRA_MANAGER, "value": {"value": "{boss}"}},
        {"op": "Replace", "value": {ENTRA_MANAGER: "{boss}"}},
        {"op": "Remove", "path": ENTRA_MANAGER},
    ],
    ids=["add-bare-id", "replace-bare-id", "replace-complex", "pathless-bare-id", "remove"],
)
def test_entra_sets_and_removes_a_manager_as_its_default_mapping_sends_it(acme, operation):
    user_id = entra_user(acme)
    boss = acme.user_create("boss@example.com", "00u-boss").data["id"]
    body = json.dumps(
        {"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"], "Operations": [operation]}
    ).replace("{boss}", boss)
    patched = replay(acme, "PATCH", f"Users/{user_id}", body)
    assert patched.status_code == 200, patched.data
    assert patched.data["userName"] == "Test_User_00aa00aa-bb11-cc22-dd33-44ee44ee44ee"
    assert patched.data["active"] is True


# -- Okta --------------------------------------------------------------------------------
# https://developer.okta.com/docs/api/openapi/okta-scim/guides/scim-20/
# ("SCIM User operations" and "SCIM Group operations": each request as shown there.)
# Okta never deletes a user ("Okta doesn't perform DELETE operations on User objects"): it
# deactivates them.

OKTA_USER_EXISTS = (
    "Users?filter=userName%20eq%20%22test.user%40okta.local%22&startIndex=1&count=100"
)
OKTA_CREATE_USER = """{
    "schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"],
    "userName": "test.user@okta.local",
    "name": {
        "givenName": "Test",
        "familyName": "User"
    },
    "emails": [{
        "primary": true,
        "value": "test.user@okta.local",
        "type": "work"
    }],
    "displayName": "Test User",
    "locale": "en-US",
    "externalId": "00ujl29u0le5T6Aj10h7",
    "groups": [],
    "password": "1mz050nq",
    "active": true
}"""
OKTA_RETRIEVE_USERS = "Users?startIndex=1&count=100"
OKTA_USER_PATH = "Users/23a35c27-23d3-4c03-b4c5-6443c09e7173"
OKTA_USER_ID = "23a35c27-23d3-4c03-b4c5-6443c09e7173"
OKTA_UPDATE_USER_PUT = """{
    "schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"],
    "id": "23a35c27-23d3-4c03-b4c5-6443c09e7173",
    "userName": "test.user@okta.local",
    "name": {
        "givenName": "Another",
        "middleName": "Excited",
        "familyName": "User"
    },
    "emails": [{
        "primary": true,
        "value": "test.user@okta.local",
        "type": "work",
        "display": "test.user@okta.local"
    }],
    "active": true,
    "groups": [],
    "meta": {
        "resourceType": "User"
    }
}"""
OKTA_DEACTIVATE_USER = """{
    "schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
    "Operations": [{
        "op": "replace",
        "value": {
            "active": false
        }
    }]
}"""
OKTA_CREATE_GROUP = """{
    "schemas": ["urn:ietf:params:scim:schemas:core:2.0:Group"],
    "displayName": "Test SCIMv2",
    "members": []
}"""
OKTA_RETRIEVE_GROUPS = "Groups?startIndex=1&count=100"
OKTA_GROUP_BY_NAME = "Groups?filter=displayName%20eq%20%22Test%20SCIMv2%22&startIndex=1&count=100"
OKTA_GROUP_PATH = "Groups/abf4dd94-a4c0-4f67-89c9-76b03340cb9b"
OKTA_GROUP_ID = "abf4dd94-a4c0-4f67-89c9-76b03340cb9b"
OKTA_UPDATE_GROUP_NAME = """{
    "schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
    "Operations": [{
        "op": "replace",
        "value": {
            "id": "abf4dd94-a4c0-4f67-89c9-76b03340cb9b",
            "displayName": "Test SCIMv2"
        }
    }]
}"""
OKTA_OTHER_MEMBER_ID = "89bb1940-b905-4575-9e7f-6f887cfb368e"
OKTA_UPDATE_GROUP_MEMBERSHIP = r"""{
        "schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
        "Operations": [{
            "op": "remove",
            "path": "members[value eq \"89bb1940-b905-4575-9e7f-6f887cfb368e\"]"
            },
            {
            "op": "add",
            "path": "members",
            "value": [{
                "value": "23a35c27-23d3-4c03-b4c5-6443c09e7173",
                "display": "test.user@okta.local"
            }]
        }]
    }"""
OKTA_UPDATE_GROUP_MEMBERSHIP_PUT = """{
        "schemas": ["urn:ietf:params:scim:schemas:core:2.0:Group"],
        "displayName": "Test SCIMv2",
        "members": [
                {
                "value": "23a35c27-23d3-4c03-b4c5-6443c09e7173",
                "display": "test.user@okta.local"
                }
        ]
    }"""
OKTA_REPLACE_GROUP_MEMBERS = """{
  "schemas": [
    "urn:ietf:params:scim:api:messages:2.0:PatchOp"
  ],
  "Operations": [
    {
      "op": "replace",
      "path": "members",
      "value": [
        {
          "value": "23a35c27-23d3-4c03-b4c5-6443c09e7173",
          "display": "test.user@okta.local"
        },
        {
          "value": "89bb1940-b905-4575-9e7f-6f887cfb368e",
          "display": "test.user@okta.local"
        }
      ]
    }
  ]
}"""


def okta_user(scim):
    """Okta's Create User, replayed: the id the portal gave."""
    created = replay(scim, "POST", "Users", OKTA_CREATE_USER)
    assert created.status_code == 201, created.data
    return created.data["id"]


def test_okta_checks_creates_reads_replaces_and_deactivates_a_user(grupo):
    absent = replay(grupo, "GET", OKTA_USER_EXISTS)
    assert absent.status_code == 200
    assert absent.data == {
        "schemas": [LIST_SCHEMA],
        "totalResults": 0,
        "startIndex": 1,
        "itemsPerPage": 0,
        "Resources": [],
    }

    created = replay(grupo, "POST", "Users", OKTA_CREATE_USER)
    assert created.status_code == 201, created.data
    user_id = created.data["id"]
    assert created.data["userName"] == "test.user@okta.local"
    assert created.data["externalId"] == "00ujl29u0le5T6Aj10h7"
    assert created.data["active"] is True
    assert created.data["name"] == {"familyName": "User", "givenName": "Test"}
    assert created.data["emails"] == [
        {"value": "test.user@okta.local", "type": "work", "primary": True}
    ]
    again = replay(grupo, "POST", "Users", OKTA_CREATE_USER)
    assert again.status_code == 409
    assert again.data["schemas"] == [ERROR_SCHEMA]

    user = User.objects.get()
    # okta.local is no configured provider's domain: Grupo may vouch for it.
    assert (user.first_name, user.last_name, pushed_email(user)) == (
        "Test",
        "User",
        "test.user@okta.local",
    )
    assert SocialAccount.objects.get(user=user, provider="group").uid == "00ujl29u0le5T6Aj10h7"
    # Okta's placeholder password is not one: the person signs in through Okta only.
    assert not user.has_usable_password()

    found = replay(grupo, "GET", OKTA_USER_EXISTS)
    assert (found.data["totalResults"], found.data["Resources"][0]["id"]) == (1, user_id)
    listed = replay(grupo, "GET", OKTA_RETRIEVE_USERS)
    assert (listed.data["totalResults"], listed.data["startIndex"]) == (1, 1)
    assert [listed_user["id"] for listed_user in listed.data["Resources"]] == [user_id]
    path = OKTA_USER_PATH.replace(OKTA_USER_ID, user_id)
    fetched = replay(grupo, "GET", path)
    assert (fetched.status_code, fetched.data["id"]) == (200, user_id)

    replaced = replay(grupo, "PUT", path, OKTA_UPDATE_USER_PUT.replace(OKTA_USER_ID, user_id))
    assert replaced.status_code == 200, replaced.data
    assert replaced.data["id"] == user_id
    assert replaced.data["userName"] == "test.user@okta.local"
    assert replaced.data["active"] is True
    # The portal keeps given and family names (no middle name).
    assert replaced.data["name"] == {"familyName": "User", "givenName": "Another"}
    user.refresh_from_db()
    assert (user.first_name, user.is_active) == ("Another", True)
    # Okta's PUT leaves out externalId: the identity the person signs in with stays.
    assert SocialAccount.objects.get(user=user, provider="group").uid == "00ujl29u0le5T6Aj10h7"

    session_key = signed_in_session(user)
    deactivated_answer = replay(grupo, "PATCH", path, OKTA_DEACTIVATE_USER)
    assert deactivated_answer.status_code == 200, deactivated_answer.data
    assert deactivated_answer.data["id"] == user_id
    assert deactivated_answer.data["userName"] == "test.user@okta.local"
    assert deactivated_answer.data["active"] is False
    assert_deactivated(user, session_key)
    assert replay(grupo, "GET", path).data["active"] is False


def test_okta_pushes_a_group_its_name_and_members_then_deletes_it(grupo, sao_paulo):
    user_id = okta_user(grupo)
    # A second person for Okta to take out of the group (made here, not a documented call).
    other_id = grupo.user_create("another.user@okta.local", "00u-another").data["id"]

    created = replay(grupo, "POST", "Groups", OKTA_CREATE_GROUP)
    assert created.status_code == 201, created.data
    assert created.data["schemas"] == [GROUP_SCHEMA]
    assert created.data["displayName"] == "Test SCIMv2"
    assert not created.data.get("members")
    group_id = created.data["id"]
    listed = replay(grupo, "GET", OKTA_RETRIEVE_GROUPS)
    assert [group["id"] for group in listed.data["Resources"]] == [group_id]
    found = replay(grupo, "GET", OKTA_GROUP_BY_NAME)
    assert (found.data["totalResults"], found.data["Resources"][0]["id"]) == (1, group_id)
    path = OKTA_GROUP_PATH.replace(OKTA_GROUP_ID, group_id)
    assert replay(grupo, "GET", path).data["displayName"] == "Test SCIMv2"

    renamed = replay(grupo, "PATCH", path, OKTA_UPDATE_GROUP_NAME.replace(OKTA_GROUP_ID, group_id))
    assert renamed.status_code == 200, renamed.data
    assert (renamed.data["id"], renamed.data["displayName"]) == (group_id, "Test SCIMv2")

    def members():
        return {str(member.id) for member in ScimGroup.objects.get().members.all()}

    ids = {OKTA_USER_ID: user_id, OKTA_OTHER_MEMBER_ID: other_id}

    def with_ids(body):
        for documented, ours in ids.items():
            body = body.replace(documented, ours)
        return body

    # Okta's membership PATCH takes the other person out: they are in first.
    grupo.patch(
        f"Groups/{group_id}", {"op": "add", "path": "members", "value": [{"value": other_id}]}
    )
    assert members() == {other_id}
    assert sees("another.user@okta.local") == ("São Paulo",)
    changed = replay(grupo, "PATCH", path, with_ids(OKTA_UPDATE_GROUP_MEMBERSHIP))
    assert changed.status_code == 200, changed.data
    assert {member["value"] for member in changed.data["members"]} == {user_id}
    assert members() == {user_id}
    assert sees("test.user@okta.local") == ("São Paulo",)
    assert sees("another.user@okta.local") == ()

    pushed = replay(grupo, "PATCH", path, with_ids(OKTA_REPLACE_GROUP_MEMBERS))
    assert pushed.status_code == 200, pushed.data
    assert members() == {user_id, other_id}
    put = replay(grupo, "PUT", path, with_ids(OKTA_UPDATE_GROUP_MEMBERSHIP_PUT))
    assert put.status_code == 200, put.data
    assert put.data["displayName"] == "Test SCIMv2"
    assert [member["value"] for member in put.data["members"]] == [user_id]
    assert members() == {user_id}
    assert sees("another.user@okta.local") == ()

    deleted = replay(grupo, "DELETE", path)
    assert deleted.status_code == 204
    assert deleted.content == b""
    assert not ScimGroup.objects.exists()
    assert sees("test.user@okta.local") == ()
    assert replay(grupo, "GET", path).status_code == 404
