"""Alert e-mails through a real SMTP server on loopback
(aiosmtpd), sent by the background worker's task, never by the webhook request."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from urllib.parse import urlsplit

import pytest
import time_machine
from django.test import Client

from alerts.models import Alert, AlertPreferences, AlertStatus
from fleet.models import Fine, Notification, WebhookDelivery
from fleet.webhooks.processing import delivery_replay
from tests.alerts.conftest import PORTAL, fine, notification, post
from tests.conftest import run_tasks
from tests.mail import html_of, subject, text_of

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_new_fine_is_emailed_at_once_in_portuguese_with_its_plate_fields_and_page(
    client, smtp_server, person
):
    person("marcos")
    post(client, fine(100001, linkFrame="https://docs.example/expiring.pdf?sig=abc"))

    # The request only stored the delivery: the worker's tasks send the e-mail.
    assert smtp_server.mailbox.messages == []
    run_tasks()

    (message,) = smtp_server.mailbox.wait_for(1)
    record = Fine.objects.get()
    assert message["To"] == "marcos@example.com"
    assert subject(message) == "Nova multa: ABC1D23 · Avançar o sinal vermelho do semáforo"
    text, html = text_of(message), html_of(message)
    for part in (text, html):
        assert "E0100001" in part
        assert "R$ 293,47" in part
        assert "Documento oficial" in part
        assert "disponível no portal" in part
        assert "Não tratada" in part
        assert f"{PORTAL}/fines/{record.pk}/" in part
        # Never the platform's links: they expire, and the portal's page has them.
        assert "docs.example" not in part
        assert "boletos.example" not in part
    assert "20/11/2026 10:45" in text  # 13:45 UTC in São Paulo
    assert message["Content-Language"] == "pt-br"
    assert Alert.objects.get().status == AlertStatus.SENT


def test_an_english_reader_gets_english_in_their_time_zone(client, smtp_server, person):
    person("emma", language="en", time_zone="Europe/London")
    post(client, notification(500002, plate="ABC1234"))
    run_tasks()

    (message,) = smtp_server.mailbox.wait_for(1)
    record = Notification.objects.get()
    assert subject(message) == "New notification: ABC-1234 · Recall do fabricante"
    text = text_of(message)
    assert "Plate ABC-1234" in text
    assert "Message: O veículo ABC1234 está convocado para um recall." in text
    assert "Handling: Untreated" in text
    assert f"See it in the portal: {PORTAL}/notifications/{record.pk}/" in text
    assert "Stop these e-mails:" in text
    assert 'lang="en"' in html_of(message)


def test_a_daily_digest_waits_for_its_hour_in_the_readers_time_zone(client, smtp_server, person):
    # 12:00 UTC is 08:00 in Manaus (UTC-4): the digest at 7 o'clock is tomorrow's.
    with time_machine.travel(datetime(2026, 11, 22, 12, 0, tzinfo=UTC), tick=False) as clock:
        person("dora", delivery="digest", digest_hour=7, time_zone="America/Manaus")
        person("ivo")  # immediate, for comparison
        post(client, fine(1))
        post(client, fine(2, plate="XYZ9K88"))
        post(client, notification(3))
        run_tasks()
        assert {m["To"] for m in smtp_server.mailbox.messages} == {"ivo@example.com"}
        smtp_server.mailbox.clear()

        clock.move_to(datetime(2026, 11, 23, 10, 59, 59, tzinfo=UTC))
        run_tasks()
        assert smtp_server.mailbox.messages == []

        clock.move_to(datetime(2026, 11, 23, 11, 0, tzinfo=UTC))
        run_tasks()

    (digest,) = smtp_server.mailbox.wait_for(1)
    assert digest["To"] == "dora@example.com"
    assert subject(digest) == "Portal de Frota: 3 alertas"
    text = text_of(digest)
    assert "3 eventos na sua frota:" in text
    assert text.count("Veja no portal:") == 3
    assert "XYZ9K88" in text
    assert "Recall do fabricante" in text


def test_only_the_chosen_vehicles_under_either_plate(client, smtp_server, person):
    person("olga", all_vehicles=False, plates=["ABC-1234"])  # the old plate
    person("tudo")
    post(client, fine(1, plate="ABC1C34"))  # its Mercosul plate: the same vehicle
    post(client, fine(2, plate="XYZ9K88"))
    post(client, notification(3, plate="abc-1234"))
    run_tasks()

    messages = smtp_server.mailbox.wait_for(5)
    olga = sorted(subject(m) for m in messages if m["To"] == "olga@example.com")
    assert olga == [
        "Nova multa: ABC1C34 · Avançar o sinal vermelho do semáforo",
        "Nova notificação: ABC-1234 · Recall do fabricante",
    ]
    assert sum(m["To"] == "tudo@example.com" for m in messages) == 3


def test_a_webhook_delivered_twice_or_replayed_is_one_email(client, smtp_server, person):
    person("marcos")
    post(client, fine(7))
    post(client, fine(7))  # the same bytes again
    run_tasks()
    post(client, fine(7))  # and later again
    run_tasks()
    delivery_replay(ids=WebhookDelivery.objects.values_list("pk", flat=True))
    run_tasks()

    assert len(smtp_server.mailbox.messages) == 1
    assert Alert.objects.count() == 1


def test_the_document_and_treated_events(client, smtp_server, person):
    person("docs", new_fine=False, fine_document=True, fine_treated=True)
    person("news", new_fine=True, fine_document=True, fine_treated=False)
    post(client, fine(9, updatedAt="2026-11-22T10:00:00Z"))
    run_tasks()
    post(client, fine(9, updatedAt="2026-11-22T10:00:01Z", linkFrame="https://docs.example/9"))
    run_tasks()
    post(
        client,
        fine(9, updatedAt="2026-11-22T10:00:02Z", linkFrame="https://docs.example/9", treated=True),
    )
    run_tasks()
    # An older event arriving late changes nothing: no alert.
    post(client, fine(9, updatedAt="2026-11-22T09:00:00Z"))
    run_tasks()

    by_person = {
        name: [
            subject(m).partition(":")[0]
            for m in smtp_server.mailbox.messages
            if m["To"] == f"{name}@example.com"
        ]
        for name in ("docs", "news")
    }
    assert by_person == {
        "docs": ["Documento oficial disponível", "Multa tratada"],
        "news": ["Nova multa", "Documento oficial disponível"],
    }


def test_a_new_fine_with_its_document_is_one_email(client, smtp_server, person):
    person("docs", new_fine=True, fine_document=True)
    post(client, fine(11, linkFrame="https://docs.example/11"))
    run_tasks()

    (message,) = smtp_server.mailbox.wait_for(1)
    assert subject(message).startswith("Nova multa:")
    assert "disponível no portal" in text_of(message)


def test_the_unsubscribe_link_and_headers_work_in_one_click(client, smtp_server, person):
    user = person("marcos")
    post(client, fine(1))
    run_tasks()
    (message,) = smtp_server.mailbox.wait_for(1)

    assert message["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    url = re.fullmatch(r"<(.+)>", message["List-Unsubscribe"]).group(1)
    # As sent: the URL itself on one line, which mail providers read (not RFC 2047 words).
    (raw,) = smtp_server.mailbox.raw
    assert f"\r\nList-Unsubscribe: <{url}>\r\n".encode() in raw
    assert url.startswith(f"{PORTAL}/account/alerts/unsubscribe/")
    assert f"Parar estes e-mails: {url}" in text_of(message)
    assert f'href="{url}"' in html_of(message)
    path = urlsplit(url).path

    # A GET (a link scanner, a person clicking) only asks to confirm.
    anonymous = Client(enforce_csrf_checks=True)
    page = anonymous.get(path)
    assert page.status_code == 200
    assert "Parar os e-mails de alerta para m•••@example.com?" in page.text
    assert AlertPreferences.objects.get(user=user).delivery == "immediate"

    # RFC 8058: the mail client's POST, with no session and no CSRF token.
    answer = anonymous.post(
        path, data="List-Unsubscribe=One-Click", content_type="application/x-www-form-urlencoded"
    )
    assert answer.status_code == 200
    assert AlertPreferences.objects.get(user=user).delivery == "off"

    post(client, fine(2))
    run_tasks()
    assert len(smtp_server.mailbox.messages) == 1

    tampered = path.replace("/unsubscribe/", "/unsubscribe/x")
    assert (
        anonymous.post(
            tampered,
            data="List-Unsubscribe=One-Click",
            content_type="application/x-www-form-urlencoded",
        ).status_code
        == 404
    )


def test_over_the_hourly_cap_alerts_fold_into_one_digest(client, smtp_server, person, settings):
    settings.ALERTS_HOURLY_CAP = 3
    with time_machine.travel(datetime(2026, 11, 22, 12, 0, tzinfo=UTC), tick=False) as clock:
        person("marcos")
        for number in range(1, 8):
            post(client, fine(number))
        run_tasks()
        assert len(smtp_server.mailbox.messages) == 3
        clock.shift(timedelta(minutes=59, seconds=59))
        run_tasks()
        assert len(smtp_server.mailbox.messages) == 3

        clock.shift(timedelta(seconds=1))
        run_tasks()

    messages = smtp_server.mailbox.wait_for(4)
    assert subject(messages[3]) == "Portal de Frota: 4 alertas"
    assert text_of(messages[3]).count("Veja no portal:") == 4
    assert set(Alert.objects.values_list("status", flat=True)) == {AlertStatus.SENT}


def test_a_refused_email_is_retried_with_backoff_then_kept_as_failed_in_the_admin(
    client, smtp_server, person, settings, admin_client
):
    settings.ALERTS_RETRY_SECONDS = 60
    settings.ALERTS_MAX_ATTEMPTS = 3
    with time_machine.travel(datetime(2026, 11, 22, 12, 0, tzinfo=UTC), tick=False) as clock:
        person("marcos")
        smtp_server.mailbox.refuse(1)
        post(client, fine(1))
        run_tasks()
        alert = Alert.objects.get(user__username="marcos")  # the admin has the defaults' digest
        assert (alert.status, alert.attempts) == (AlertStatus.PENDING, 1)
        assert "451" in alert.last_error
        assert alert.due_at == datetime(2026, 11, 22, 12, 1, tzinfo=UTC)

        clock.shift(60)
        run_tasks()
        assert len(smtp_server.mailbox.wait_for(1)) == 1

        smtp_server.mailbox.refuse(3)
        post(client, fine(2))
        run_tasks()
        clock.shift(60)  # 1 minute, then 2
        run_tasks()
        clock.shift(120)
        run_tasks()

    failed = Alert.objects.get(status=AlertStatus.FAILED)
    assert failed.attempts == 3
    page = admin_client.get("/admin/alerts/alert/?status__exact=failed")
    assert page.status_code == 200
    assert "1 alerta" in page.text
    detail = admin_client.get(f"/admin/alerts/alert/{failed.pk}/change/")
    assert "451" in detail.text


HOSTILE = ("\r", "\n", "\x00", "\x1b", "\u2028")


def test_control_characters_in_a_fine_never_stop_its_email(client, smtp_server, person):
    person("marcos")
    post(
        client,
        fine(
            1,
            plate="ABC\r1D23\x1b",
            description="Avançar\ro sinal\n\x00vermelho\x1b[31m\u2028do semáforo",
        ),
    )
    run_tasks()

    (message,) = smtp_server.mailbox.wait_for(1)
    alert = Alert.objects.get()
    assert (alert.status, alert.attempts) == (AlertStatus.SENT, 1)
    assert subject(message) == "Nova multa: ABC 1D23 · Avançar o sinal vermelho[31m do semáforo"
    (raw,) = smtp_server.mailbox.raw
    head = raw.partition(b"\r\n\r\n")[0].decode()
    for line in head.split("\r\n"):
        assert not any(character in line for character in HOSTILE), line
    for value in message.values():
        assert not any(character in str(value) for character in HOSTILE), value
    for part in (text_of(message), html_of(message)):
        assert "Avançar o sinal vermelho[31m do semáforo" in part
        assert "ABC 1D23" in part
