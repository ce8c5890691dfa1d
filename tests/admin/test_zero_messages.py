"""An admin action that changed nothing says so in words ("No user unblocked"), not
"0 users unblocked" (Portuguese's plural rule would make it "0 usuário desbloqueado")."""

from __future__ import annotations

import pytest
from django.contrib.messages import get_messages
from django.urls import reverse

pytestmark = pytest.mark.django_db

USERS = reverse("admin:auth_user_changelist")


def said(response) -> list[str]:
    return [str(message) for message in get_messages(response.wsgi_request)]


@pytest.mark.parametrize(
    ("action", "english", "portuguese"),
    [
        ("block", "No user blocked", "Nenhum usuário bloqueado"),
        ("unblock", "No user unblocked", "Nenhum usuário desbloqueado"),
        ("unlock_local_login", "No locked attempt record to clear.", "Nenhum registro"),
    ],
)
def test_a_users_action_that_changed_nothing_says_none(
    admin_client, admin_user, action, english, portuguese
):
    # Only oneself, never blocked and never locked out: nothing for any action to change.
    for language, expected in (("en", english), ("pt-BR", portuguese)):
        response = admin_client.post(
            USERS,
            {"action": action, "_selected_action": [admin_user.pk]},
            headers={"Accept-Language": language},
        )
        latest = said(response)[-1]  # the messages not shown yet, this action's last
        assert latest.startswith(expected), latest
