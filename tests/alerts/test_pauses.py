"""When access ends, alerts end: a person refused at sign-in by the real identity provider
(tests/idp.py), or one who stopped signing in, gets no e-mail (real SMTP server on
loopback) and no webhook POST (a receiver on loopback) until they sign in again or an
administrator restores them."""

from __future__ import annotations

from datetime import timedelta

import pytest
import requests
import time_machine
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from alerts.models import Alert, AlertChannel, AlertPause, AlertStatus, PauseNotice, PauseReason
from alerts.services.pauses import PAUSE_TASK, alerts_pause_inactive
from alerts.services.preferences import alert_preferences_save
from signin.models import ScimUser
from tests.alerts.conftest import PAGE, PORTAL, fine, post, subscribe
from tests.alerts.receiver import Receiver
from tests.conftest import oidc_app, run_tasks
from tests.mail import html_of, subject, text_of
from tests.scopes import grant_whole_fleet
from tests.signin.test_oidc import sso

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def by_groups(oidc_settings, identity_provider):
    """The provider admits fleet managers by their group."""
    app = oidc_app(identity_provider, manager_groups=["fleet-managers"])
    oidc_settings.SOCIALACCOUNT_PROVIDERS["openid_connect"]["APPS"] = [app]
    return identity_provider


def subscribed_manager(client, receiver: Receiver) -> User:
    """The provider's manager signed in, seeing the whole fleet, with immediate e-mails and
    the receiver subscribed."""
    assert sso(client, "manager").status_code == 302
    user = grant_whole_fleet(User.objects.get(email="manager@example.com"))
    alert_preferences_save(user=user, delivery="immediate")
    subscribe(client, receiver)
    client.post("/accounts/logout/")
    return user


def alerts_of(user: User, number: int) -> list[Alert]:
    return list(Alert.objects.filter(user=user, fine__external_id=str(number)))


def test_a_person_refused_at_sign_in_gets_no_alerts_until_they_sign_in_again(
    client, by_groups, smtp_server, receiver, admin_client
):
    user = subscribed_manager(client, receiver)
    elsewhere = Client()  # a session of theirs that a refusal does not end
    assert sso(elsewhere, "manager", browser=requests.Session()).status_code == 302
    post(client, fine(1))
    run_tasks()
    assert len(smtp_server.mailbox.wait_for(1)) == 1
    assert len(receiver.accepted()) == 1
    # One webhook waits for its retry when access ends.
    receiver.failures_to_answer = [503]
    post(client, fine(2))
    run_tasks()
    (waiting,) = [a for a in alerts_of(user, 2) if a.channel == AlertChannel.WEBHOOK]
    assert waiting.status == AlertStatus.PENDING

    by_groups.update_user("manager", groups=[])  # left the fleet managers' group
    assert sso(client, "manager", browser=requests.Session()).status_code == 403

    waiting.refresh_from_db()
    assert waiting.status == AlertStatus.CANCELLED
    assert waiting.last_error.startswith("alerts paused: ")
    post(client, fine(3))
    run_tasks()
    assert alerts_of(user, 3) == []
    assert len(smtp_server.mailbox.messages) == 2
    assert len(receiver.deliveries) == 2  # fine 1, and fine 2's refused first try
    assert 'data-testid="alerts-paused"' in elsewhere.get(PAGE).text
    pause = AlertPause.objects.get(user=user)
    assert (pause.reason, pause.paused) == (PauseReason.REFUSED, True)
    assert pause.detail  # the refusal's outcome, in words
    listing = admin_client.get("/admin/alerts/alertpause/?paused=yes")
    assert listing.status_code == 200
    assert user.username in listing.text
    assert pause.detail in listing.text

    # Back in the group: the next sign-in resumes the alerts, and the alerts page says so.
    by_groups.update_user("manager", groups=["fleet-managers"])
    assert sso(client, "manager", browser=requests.Session()).status_code == 302
    assert 'data-testid="alerts-resumed"' in client.get(PAGE).text
    post(client, fine(4))
    run_tasks()
    messages = smtp_server.mailbox.wait_for(3)
    assert "E04" in text_of(messages[2])  # fine 4's notice
    # Fine 2's webhook, cancelled by the pause, is not tried again.
    assert [d.payload["data"]["external_id"] for d in receiver.deliveries] == ["1", "2", "4"]
    pause.refresh_from_db()
    assert pause.resumed_at is not None


def test_a_deactivated_person_stays_paused_until_an_administrator_restores_them(
    client, by_groups, smtp_server, receiver, admin_client
):
    user = subscribed_manager(client, receiver)
    user.is_active = False
    user.save()
    assert sso(client, "manager", browser=requests.Session()).status_code == 403
    user.is_active = True  # reactivated: the pause stays until it is lifted
    user.save()
    post(client, fine(1))
    run_tasks()
    assert alerts_of(user, 1) == []

    pause = AlertPause.objects.get(user=user)
    answer = admin_client.post(
        "/admin/alerts/alertpause/",
        {"action": "restore", "_selected_action": [pause.pk]},
        follow=True,
    )
    assert answer.status_code == 200
    pause.refresh_from_db()
    assert pause.resumed_at is not None
    assert "admin" in pause.resumed_by
    post(client, fine(2))
    run_tasks()
    assert len(smtp_server.mailbox.wait_for(1)) == 1
    assert len(receiver.accepted()) == 1


def test_a_local_sign_in_resumes_the_alerts_too(
    client, by_groups, smtp_server, receiver, settings, django_user_model
):
    settings.LOCAL_LOGIN = "on"
    user = django_user_model.objects.create_user(
        username="marcos", password="marcos-local-password", email="manager@example.com"
    )
    assert subscribed_manager(client, receiver) == user  # linked by its verified e-mail
    by_groups.update_user("manager", groups=[])
    assert sso(client, "manager", browser=requests.Session()).status_code == 403
    assert AlertPause.objects.get(user=user).paused

    login = client.post(
        "/accounts/login/", {"username": "marcos", "password": "marcos-local-password"}
    )
    assert login.status_code == 302
    assert not AlertPause.objects.get(user=user).paused
    post(client, fine(1))
    run_tasks()
    assert len(smtp_server.mailbox.wait_for(1)) == 1
    assert len(receiver.accepted()) == 1


def test_a_person_of_the_provider_who_stops_signing_in_gets_one_last_email_then_none(
    client, oidc_settings, smtp_server, person, settings
):
    settings.ALERTS_INACTIVE_DAYS = 30
    assert sso(client, "manager").status_code == 302
    client.post("/accounts/logout/")
    manager = User.objects.get(email="manager@example.com")
    alert_preferences_save(user=manager, delivery="immediate", language="en")
    local = person("ivo")  # a local account: no provider can end its access
    User.objects.filter(pk=local.pk).update(last_login=timezone.now() - timedelta(days=400))
    # The sign-in asked for the daily run.
    assert DBTaskResult.objects.filter(task_path=PAUSE_TASK, status="READY").count() == 1

    with time_machine.travel(timezone.now() + timedelta(days=29), tick=False) as clock:
        run_tasks()
        assert smtp_server.mailbox.messages == []

        clock.shift(timedelta(days=2))
        run_tasks()
        (last,) = smtp_server.mailbox.wait_for(1)
        assert last["To"] == "manager@example.com"
        assert subject(last) == "Fleet Portal: your alerts have stopped"
        assert last["Content-Language"] == "en"
        for part in (text_of(last), html_of(last)):
            assert "You have not signed in to the Fleet Portal for 30 days" in part
            assert "sign in to the portal" in part
            assert f"{PORTAL}/account/alerts/" in part

        post(client, fine(1))
        run_tasks()
        assert [m["To"] for m in smtp_server.mailbox.wait_for(2)] == [
            "manager@example.com",
            "ivo@example.com",
        ]
        # The next days' run, and a second worker's at once: no second last e-mail.
        clock.shift(timedelta(days=2))
        run_tasks()
        alerts_pause_inactive()

    assert len(smtp_server.mailbox.messages) == 2
    ran = DBTaskResult.objects.filter(task_path=PAUSE_TASK, status="SUCCESSFUL")
    assert ran.count() == 3
    pause = AlertPause.objects.get()
    assert (pause.user, pause.reason, pause.notice) == (
        manager,
        PauseReason.INACTIVE,
        PauseNotice.SENT,
    )
    assert not AlertPause.objects.filter(user=local).exists()


def test_a_person_a_provider_provisions_is_paused_for_inactivity_too(settings):
    """Provisioned over SCIM without an externalId, a person has no linked identity until
    they sign in: still the provider's, not a local account, and paused like its others
    (the digests went on to someone who had never signed in)."""
    settings.ALERTS_INACTIVE_DAYS = 30
    long_ago = timezone.now() - timedelta(days=400)
    pushed = User.objects.create_user("rui", "rui@example.com", date_joined=long_ago)
    ScimUser.objects.create(provider="acme", user=pushed, user_name="rui@example.com")
    local = User.objects.create_user("ivo", "ivo@example.com", date_joined=long_ago)

    alerts_pause_inactive()

    pause = AlertPause.objects.get()
    assert (pause.user, pause.reason) == (pushed, PauseReason.INACTIVE)
    assert not AlertPause.objects.filter(user=local).exists()
