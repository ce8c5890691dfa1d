"""Alerts reach only the people whose vehicles they are about (fleet.services.scopes): a
manager hears of their vehicle groups' records, under either plate, and a whole-fleet user
of every record, those without a plate too. E-mails through a real SMTP server on loopback
(tests/mail.py), webhooks to receivers on loopback (tests/alerts/receiver.py), sent by the
real worker; an alert that waited while its user left the group is cancelled, not sent."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import ThreadingHTTPServer
from typing import Any

import pytest
import time_machine
from django.conf import settings as django_settings
from django.contrib.auth.models import User

from alerts.models import Alert, AlertChannel, AlertStatus
from alerts.services.sending import OUT_OF_SCOPE
from alerts.services.subscriptions import webhook_subscription_create
from fleet import plates
from fleet.models import VehicleGroup, VehicleGroupMember, VehicleGroupPlate
from tests.alerts.conftest import fine, post
from tests.alerts.receiver import Receiver, serve
from tests.conftest import run_tasks, start_db_worker, stop_db_worker, wait_until
from tests.mail import subject

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.scoped]

X = "ABC1D23"  # a vehicle of group A
Y = "XYZ9K88"  # a vehicle of group B


def vehicle_group(name: str, *given: str, members: tuple[User, ...] = ()) -> VehicleGroup:
    """A group of these plates (as an administrator gives them, either format) and members."""
    group = VehicleGroup.objects.create(name=name)
    VehicleGroupPlate.objects.bulk_create(
        VehicleGroupPlate(group=group, registration=plates.registration(plate)) for plate in given
    )
    for user in members:
        VehicleGroupMember.objects.create(group=group, user=user)
    return group


@pytest.fixture
def receivers(settings: Any) -> Iterator[dict[str, Receiver]]:
    """`receivers["ana"]`: a company system on loopback of its own for each subscriber."""
    settings.ALERTS_WEBHOOK_ALLOW_PRIVATE = True
    servers: list[ThreadingHTTPServer] = []

    class Receivers(dict[str, Receiver]):
        def __missing__(self, name: str) -> Receiver:
            receiver = self[name] = Receiver()
            servers.append(serve(receiver))
            return receiver

    yield Receivers()
    for server in servers:
        server.shutdown()
        server.server_close()


def subscribed(user: User, receiver: Receiver) -> User:
    _, receiver.secret = webhook_subscription_create(user=user, url=receiver.url)
    return user


def posted(receiver: Receiver) -> list[str]:
    """The fines (their platform ids) the receiver accepted, in order."""
    return [delivery.payload["data"]["external_id"] for delivery in receiver.accepted()]


def emailed(smtp_server: Any) -> dict[str, list[str]]:
    """The plates of the fines each person was e-mailed about, by username, sorted."""
    found: dict[str, list[str]] = {}
    for message in smtp_server.mailbox.messages:
        name = str(message["To"]).partition("@")[0]
        plate = subject(message).partition(": ")[2].partition(" · ")[0]
        found.setdefault(name, []).append(plate)
    return {name: sorted(found[name]) for name in sorted(found)}


def test_a_fine_reaches_its_vehicles_group_and_the_whole_fleet_by_email_and_webhook(
    person, receivers, smtp_server, emulator, live_server
):
    m_a = subscribed(person("ma", whole_fleet=False), receivers["ma"])
    m_b = subscribed(person("mb", whole_fleet=False), receivers["mb"])
    w = subscribed(person("w"), receivers["w"])  # the permission, not a superuser
    assert not w.is_superuser
    vehicle_group("Region A", X, members=(m_a,))
    vehicle_group("Region B", Y, members=(m_b,))
    worker = start_db_worker(
        emulator,
        worker_id="scoped",
        EMAIL_URL=smtp_server.url,
        FLEET_FIELD_KEYS=",".join(django_settings.FLEET_FIELD_KEYS),  # the secrets' key here
        PORTAL_BASE_URL=live_server.url,
        FLEET_WEBHOOK_BATCH_SECONDS="0",
        ALERTS_WEBHOOK_ALLOW_PRIVATE="true",  # the receivers are on loopback
    )
    try:
        # The platform posts them to the portal's webhook receiver, over HTTP.
        emulator.control(
            "POST",
            "webhooks",
            url=f"{live_server.url}/webhooks/fleet/dev-webhook-token/",
            events=[fine(1, plate=Y), fine(2, plate=X)],
        )
        smtp_server.mailbox.wait_for(4, timeout=30)
        wait_until(
            lambda: sum(len(r.accepted()) for r in receivers.values()) >= 4,
            timeout=30,
            what="the webhooks were not all posted",
        )
        wait_until(
            lambda: not Alert.objects.exclude(status=AlertStatus.SENT).exists(),
            timeout=10,
            what="alerts left unsent",
        )
    finally:
        stop_db_worker(worker)

    # Fine 1 (group B's vehicle): mB and W, never mA; fine 2 (group A's): mA and W.
    assert emailed(smtp_server) == {"ma": [X], "mb": [Y], "w": sorted([X, Y])}
    assert posted(receivers["ma"]) == ["2"]
    assert posted(receivers["mb"]) == ["1"]
    assert sorted(posted(receivers["w"])) == ["1", "2"]
    assert [d.verdict for r in receivers.values() for d in r.deliveries] == ["accepted"] * 4
    # No alert about fine 1 was ever written for mA, none about fine 2 for mB.
    assert not Alert.objects.filter(user=m_a, fine__external_id="1").exists()
    assert not Alert.objects.filter(user=m_b, fine__external_id="2").exists()
    assert Alert.objects.filter(status=AlertStatus.SENT).count() == 8


def test_a_group_matches_a_vehicle_under_its_old_and_its_mercosul_plate(
    client, person, smtp_server
):
    old_given = person("old", whole_fleet=False)
    new_given = person("new", whole_fleet=False)
    vehicle_group("Old plates", "ABC-1234", members=(old_given,))  # now ABC1C34
    vehicle_group("Mercosul plates", "DEF4F56", members=(new_given,))  # once DEF-4556
    post(client, fine(1, plate="ABC1C34"))  # the Mercosul plate of the old one given
    post(client, fine(2, plate="DEF-4556"))  # the old plate of the Mercosul one given
    post(client, fine(3, plate=Y))  # in neither group
    run_tasks()

    smtp_server.mailbox.wait_for(2)
    assert emailed(smtp_server) == {"new": ["DEF-4556"], "old": ["ABC1C34"]}
    assert Alert.objects.count() == 2


def test_a_digest_alert_is_cancelled_when_its_reader_left_the_group_before_it_was_due(
    client, person, smtp_server
):
    # 12:00 UTC is 09:00 in São Paulo: the digest at 8 o'clock is tomorrow's.
    with time_machine.travel(datetime(2026, 11, 22, 12, 0, tzinfo=UTC), tick=False) as clock:
        moved = person("moved", whole_fleet=False, delivery="digest", digest_hour=8)
        stays = person("stays", whole_fleet=False, delivery="digest", digest_hour=8)
        region_a = vehicle_group("Region A", X)
        region_b = vehicle_group("Region B", Y, members=(moved, stays))
        post(client, fine(1, plate=Y))
        run_tasks()
        waiting = Alert.objects.get(user=moved)
        assert (waiting.status, waiting.digest) == (AlertStatus.PENDING, True)
        assert smtp_server.mailbox.messages == []

        # Moved to another region before the digest.
        VehicleGroupMember.objects.filter(user=moved, group=region_b).delete()
        VehicleGroupMember.objects.create(user=moved, group=region_a)

        clock.move_to(datetime(2026, 11, 23, 11, 0, tzinfo=UTC))  # 08:00 in São Paulo
        run_tasks()

    (digest,) = smtp_server.mailbox.wait_for(1)
    assert digest["To"] == "stays@example.com"
    assert Alert.objects.get(user=stays).status == AlertStatus.SENT
    waiting.refresh_from_db()
    assert (waiting.status, waiting.last_error) == (AlertStatus.CANCELLED, OUT_OF_SCOPE)
    assert waiting.sent_at is None


def test_a_webhook_waiting_for_its_retry_is_cancelled_when_its_user_left_the_group(
    client, person, receivers, settings
):
    settings.ALERTS_RETRY_SECONDS = 30
    with time_machine.travel(datetime(2026, 11, 22, 12, 0, tzinfo=UTC), tick=False) as clock:
        moved = subscribed(person("moved", whole_fleet=False, delivery="off"), receivers["moved"])
        stays = subscribed(person("stays", whole_fleet=False, delivery="off"), receivers["stays"])
        region_b = vehicle_group("Region B", Y, members=(moved, stays))
        for receiver in receivers.values():
            receiver.failures_to_answer = [503]  # down at first: retried in 30 s
        post(client, fine(1, plate=Y))
        run_tasks()
        assert [len(r.deliveries) for r in receivers.values()] == [1, 1]

        VehicleGroupMember.objects.filter(user=moved, group=region_b).delete()
        clock.shift(timedelta(seconds=31))
        run_tasks()

    assert len(receivers["moved"].deliveries) == 1  # not posted again
    assert [d.payload["data"]["external_id"] for d in receivers["stays"].deliveries] == ["1", "1"]
    assert Alert.objects.get(user=stays).status == AlertStatus.SENT
    cancelled = Alert.objects.get(user=moved)
    assert (cancelled.channel, cancelled.status, cancelled.last_error) == (
        AlertChannel.WEBHOOK,
        AlertStatus.CANCELLED,
        OUT_OF_SCOPE,
    )


def test_a_record_without_a_plate_goes_to_whole_fleet_users_only(client, person, smtp_server):
    grouped = person("grouped", whole_fleet=False)
    person("nobody", whole_fleet=False)  # no permission, no group: hears of nothing
    person("w")
    vehicle_group("Region A", X, members=(grouped,))
    post(client, fine(1, plate=""))
    post(client, fine(2, plate=X))
    run_tasks()

    smtp_server.mailbox.wait_for(3)
    by_person = {
        name: sorted(
            str(a.fine.external_id) for a in Alert.objects.filter(user__username=name) if a.fine
        )
        for name in ("grouped", "nobody", "w")
    }
    assert by_person == {"grouped": ["2"], "nobody": [], "w": ["1", "2"]}
    assert sorted(str(m["To"]) for m in smtp_server.mailbox.messages) == [
        "grouped@example.com",
        "w@example.com",
        "w@example.com",
    ]
