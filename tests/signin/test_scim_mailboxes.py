"""A mailbox is the person's, not the directory's: an e-mail pushed over SCIM waits
(shown pending in the admin) until the person signs in with it; until then alerts go to
the address their last sign-in confirmed. Before, a token alone pointed any manager's
fine alerts (plates, amounts) at any mailbox."""

from __future__ import annotations

import pytest
from allauth.socialaccount.models import SocialAccount
from django.test import Client
from django.urls import reverse

from signin.models import ScimUser
from signin.scim.tokens import scim_token_mint
from tests.signin.conftest import PATCH_SCHEMA, Scim, pushed_email
from tests.signin.test_directory_groups import signs_in

pytestmark = pytest.mark.django_db


def test_a_pushed_email_waits_for_a_sign_in_with_it(
    client, oidc_settings, identity_provider, admin_client
):
    user = signs_in(client, "manager")
    assert user.email == "manager@example.com"
    subject = SocialAccount.objects.get(user=user, provider="acme").uid
    scim = Scim(Client(), scim_token_mint(provider="acme", created_by="test"))
    created = scim.user_create("manager@example.com", subject).data["id"]

    moved = scim.call(
        "PATCH",
        f"Users/{created}",
        {
            "schemas": [PATCH_SCHEMA],
            "Operations": [
                {
                    "op": "replace",
                    "path": "emails",
                    "value": [{"value": "drop@example.com", "primary": True}],
                }
            ],
        },
    )

    assert moved.status_code == 200, moved.data
    assert moved.data["emails"][0]["value"] == "drop@example.com"  # as the provider said
    user.refresh_from_db()
    assert user.email == "manager@example.com"  # where alerts go
    assert pushed_email(user) == "drop@example.com"
    listed = admin_client.get(
        reverse("admin:signin_scimuser_changelist"), headers={"Accept-Language": "en"}
    )
    assert (
        "manager@example.com (pending until a sign-in with the pushed one)"
        in listed.content.decode()
    )

    # The person signs in, their provider now saying the new address: it is theirs.
    identity_provider.update_user("manager", email="drop@example.com")
    assert signs_in(client, "manager") == user
    user.refresh_from_db()
    assert user.email == "drop@example.com"
    assert ScimUser.objects.get(user=user).email == user.email
