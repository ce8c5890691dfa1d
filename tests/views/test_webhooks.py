"""The webhook receiver: every delivery stored as received, processed idempotently, kept when bad.

`send` posts a delivery, then does what the background worker does next
(`deliveries_process_received`); tests/webhooks/test_processing.py runs the
worker itself.

Duplicate, reordered, additive-key,
null-`treated`, malformed-JSON, wrong-token and oversized deliveries, each
with its effect and nothing lost; replay after a fix (also in
tests/commands/test_replay_webhooks.py).
"""

from __future__ import annotations

import hashlib
import json
import logging

import pytest
from django.core.signals import request_started
from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.test.utils import CaptureQueriesContext

from fleet.models import DeliveryStatus, Fine, Notification, UnknownWebhookKey, WebhookDelivery
from fleet.webhooks.processing import deliveries_process_received, delivery_replay

pytestmark = pytest.mark.django_db

TOKEN = "dev-webhook-token"
URL = f"/webhooks/fleet/{TOKEN}/"
DOCUMENT = "https://autoridade.example/autos/S000000001.pdf"
SLIP = "https://boletos.example/S000000001"


def fine(id=1, *, treated=False, at="2026-11-20T10:00:00Z", **fields):
    return {"frame": {"id": id, "treated": treated, "updatedAt": at, **fields}}


def send(client, payload, *, url=URL, content_type="application/json", **extra):
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    response = client.post(url, data=body, content_type=content_type, **extra)
    deliveries_process_received()  # the worker's next run
    return response


def only_delivery() -> WebhookDelivery:
    """The only delivery stored."""
    return WebhookDelivery.objects.get()


def stored_bodies() -> list[bytes]:
    return [
        bytes(body)
        for body in WebhookDelivery.objects.order_by("pk").values_list("body", flat=True)
    ]


def test_a_new_fine_is_stored_answered_202_then_processed(client):
    body = json.dumps(fine(7, linkFrame=None, link=SLIP, carPlate="ABC1D23")).encode()

    response = client.post(URL, data=body, content_type="application/json")

    assert response.status_code == 202
    stored = WebhookDelivery.objects.get()
    assert response.json() == {"delivery": stored.pk, "status": "received"}
    assert stored.status == "received"
    assert not Fine.objects.exists()

    assert deliveries_process_received() == {DeliveryStatus.PROCESSED: 1}

    delivery = WebhookDelivery.objects.get()
    assert delivery.status == "processed"
    assert bytes(delivery.body) == body
    assert delivery.body_sha256 == hashlib.sha256(body).hexdigest()
    assert delivery.content_type == "application/json"
    assert delivery.source_address == "127.0.0.1"
    assert delivery.kind == "frame"
    record = Fine.objects.get()
    assert delivery.fine == record
    assert (record.external_id, record.treated, record.link_frame, record.link) == (
        "7",
        False,
        "",
        SLIP,
    )
    assert record.plate == "ABC1D23"


def test_the_same_delivery_twice_has_one_effect_and_both_are_kept(client):
    payload = fine(1, linkFrame=DOCUMENT)

    first, second = send(client, payload), send(client, payload)

    assert (first.status_code, second.status_code) == (202, 202)
    original, duplicate = WebhookDelivery.objects.order_by("pk")
    assert (original.status, duplicate.status) == ("processed", "duplicate")
    assert duplicate.duplicate_of == original
    assert Fine.objects.count() == 1
    assert len(Fine.objects.get().treated_history) == 1


def test_an_update_changes_the_record_in_place_and_keeps_the_treated_history(client):
    send(client, fine(1, treated=False, at="2026-11-20T10:00:00Z", linkFrame=None))
    created = Fine.objects.get()

    send(client, fine(1, treated=True, at="2026-11-21T10:00:00Z", linkFrame=DOCUMENT))

    record = Fine.objects.get()
    assert record.pk == created.pk
    assert (record.treated, record.link_frame) == (True, DOCUMENT)
    assert record.updated_at > created.updated_at
    assert [(c["treated"], c["at"]) for c in record.treated_changes()] == [
        (False, "2026-11-20T10:00:00.000000+00:00"),
        (True, "2026-11-21T10:00:00.000000+00:00"),
    ]


def test_reordered_updates_end_in_the_latest_state(client):
    created = fine(1, treated=False, at="2026-11-20T10:00:00Z", linkFrame=None)
    document = fine(1, treated=False, at="2026-11-20T11:00:00Z", linkFrame=DOCUMENT)
    handled = fine(1, treated=True, at="2026-11-20T12:00:00Z", linkFrame=DOCUMENT)

    for payload in (handled, created, document):  # the latest first
        assert send(client, payload).status_code == 202

    record = Fine.objects.get()
    assert (record.treated, record.link_frame) == (True, DOCUMENT)
    assert [c["treated"] for c in record.treated_changes()] == [False, True]
    assert WebhookDelivery.objects.filter(status="processed").count() == 3


def test_without_a_time_a_null_link_frame_never_erases_a_document(client):
    send(client, {"frame": {"id": 3, "treated": False}, "linkFrame": DOCUMENT})
    send(client, {"frame": {"id": 3, "treated": True}, "linkFrame": None})

    record = Fine.objects.get()
    assert (record.treated, record.link_frame) == (True, DOCUMENT)


def test_links_are_read_at_the_top_level_or_inside_the_frame(client):
    send(client, {"frame": {"id": 1, "treated": False}, "linkFrame": DOCUMENT, "link": SLIP})
    send(client, {"frame": {"id": 2, "treated": False, "linkFrame": DOCUMENT, "link": SLIP}})

    assert list(Fine.objects.order_by("external_id").values_list("link_frame", "link")) == [
        (DOCUMENT, SLIP),
        (DOCUMENT, SLIP),
    ]


def test_a_record_without_an_id_is_found_again_by_its_identifying_fields(client):
    identity = {"autoInfracao": "S1", "carPlate": "ABC1234", "description": "Velocidade"}
    send(client, {"frame": {**identity, "treated": False, "updatedAt": "2026-11-20T10:00:00Z"}})
    # The platform adds a key later: still the same fine.
    send(
        client,
        {"frame": {**identity, "treated": True, "updatedAt": "2026-11-20T11:00:00Z", "new": 1}},
    )

    record = Fine.objects.get()
    assert record.key.startswith("sha256:")
    assert record.external_id == ""
    assert record.treated is True


def test_unknown_keys_are_accepted_kept_and_reported(client):
    payload = fine(1, radar="RD-0042") | {"eventId": "e-1"}

    response = send(client, payload)

    assert response.status_code == 202
    assert Fine.objects.get().payload["radar"] == "RD-0042"
    assert dict(UnknownWebhookKey.objects.values_list("path", "sample")) == {
        "frame.radar": '"RD-0042"',
        "eventId": '"e-1"',
    }
    first_seen = UnknownWebhookKey.objects.get(path="eventId").first_seen

    send(client, fine(2) | {"eventId": "e-2"})

    assert UnknownWebhookKey.objects.get(path="eventId").first_seen == first_seen


def test_an_unknown_event_kind_is_kept_not_refused(client):
    response = send(client, {"trip": {"id": 9, "km": 12}})

    assert response.status_code == 202
    delivery = WebhookDelivery.objects.get()
    assert (delivery.status, delivery.kind) == ("unknown_kind", "unknown")
    assert UnknownWebhookKey.objects.filter(path="trip").exists()
    assert not Fine.objects.exists()
    assert not Notification.objects.exists()


@pytest.mark.parametrize(
    ("treated", "message"),
    [
        (None, "frame.treated is null"),
        ("missing", "frame.treated is missing"),
        ("yes", "true or false"),
    ],
)
def test_a_null_missing_or_non_boolean_treated_is_kept_as_invalid_not_coerced(
    client, treated, message
):
    payload = (
        {"frame": {"id": 1}} if treated == "missing" else {"frame": {"id": 1, "treated": treated}}
    )

    response = send(client, payload)

    assert response.status_code == 202
    assert only_delivery().status == "invalid"
    assert message in only_delivery().error
    assert not Fine.objects.exists()


def test_a_null_treated_update_leaves_the_record_as_it_was(client):
    send(client, fine(1, treated=True))

    send(client, {"frame": {"id": 1, "treated": None, "updatedAt": "2026-11-22T00:00:00Z"}})

    assert Fine.objects.get().treated is True


def test_malformed_json_is_kept_byte_for_byte_and_answered_2xx(client):
    body = b'{"frame": {"id": 1, "treated": fal\xff'

    response = send(client, body)

    assert response.status_code == 202
    assert "not valid JSON" in only_delivery().error
    assert only_delivery().status == "invalid"
    assert bytes(only_delivery().body) == body


def test_a_json_body_that_is_not_an_object_is_invalid(client):
    response = send(client, b"[1, 2]")

    assert response.status_code == 202
    assert "not an object" in WebhookDelivery.objects.get().error


def test_a_wrong_token_is_a_404_and_stores_nothing(client):
    response = send(client, fine(1), url="/webhooks/fleet/not-the-token/")

    assert response.status_code == 404
    assert not WebhookDelivery.objects.exists()


def test_any_of_the_configured_tokens_is_accepted_for_rotation(client, settings):
    settings.FLEET_WEBHOOK_TOKENS = ["new-token-123456", "old-token-654321"]

    assert send(client, fine(1), url="/webhooks/fleet/old-token-654321/").status_code == 202
    assert send(client, fine(2), url="/webhooks/fleet/new-token-123456/").status_code == 202
    assert send(client, fine(3), url=URL).status_code == 404
    assert Fine.objects.count() == 2


def test_the_wrong_token_is_not_logged_in_full(client):
    from tests.test_logging import portal_handlers

    secret_looking = "rotated-out-token-abcdef"
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    handler = Keep()
    logging.getLogger("django.request").addHandler(handler)
    try:
        send(client, fine(1), url=f"/webhooks/fleet/{secret_looking}/")
    finally:
        logging.getLogger("django.request").removeHandler(handler)

    assert records, "a 404 is logged by django.request"
    for record in records:
        for portal_handler in portal_handlers():
            portal_handler.filter(record)
            assert secret_looking not in portal_handler.format(record)


def test_an_oversized_body_is_refused_with_413_and_recorded_without_its_body(client, settings):
    settings.FLEET_WEBHOOK_MAX_BYTES = 2048
    payload = fine(1, description="x" * 3000)

    response = send(client, payload)

    assert response.status_code == 413
    assert "2048 bytes" in response.json()["error"]
    delivery = WebhookDelivery.objects.get()
    assert delivery.status == "refused"
    assert delivery.body_size > 2048
    assert bytes(delivery.body) == b""
    assert not Fine.objects.exists()


def test_a_body_at_the_limit_is_accepted(client, settings):
    settings.FLEET_WEBHOOK_MAX_BYTES = 2048
    payload = fine(1, description="")
    padding = 2048 - len(json.dumps(payload).encode())
    payload["frame"]["description"] = "x" * padding

    assert send(client, payload).status_code == 202


@pytest.mark.parametrize("method", ["get", "put", "delete", "patch"])
def test_other_methods_get_405(client, method):
    response = getattr(client, method)(URL)

    assert response.status_code == 405
    assert response["Allow"] == "POST"
    assert not WebhookDelivery.objects.exists()


def test_a_body_that_is_not_json_by_content_type_gets_415_but_is_kept(client):
    body = json.dumps(fine(1)).encode()

    response = send(client, body, content_type="text/plain")

    assert response.status_code == 415
    delivery = WebhookDelivery.objects.get()
    assert (delivery.status, bytes(delivery.body)) == ("invalid", body)
    assert "text/plain" in delivery.error


def test_a_json_content_type_with_a_charset_is_accepted(client):
    assert send(client, fine(1), content_type="application/json; charset=utf-8").status_code == 202


# Headers a sender may put a credential, a signature or a session in, under the names
# webhook senders use: none of them may reach the database, whatever its value.
SECRET_HEADERS = {
    "Authorization": "Basic c2VjcmV0LWF1dGhvcml6YXRpb24=",
    "Proxy-Authorization": "Bearer secret-proxy-authorization",
    "Key": "secret-key-header-0123456789abcdef",
    "X-Hmac-Sha256": "secret-hmac-sha256-0123456789abcdef",
    "X-Signature": "sha256=secret-x-signature",
    "X-Hub-Signature-256": "sha256=secret-hub-signature",
    "Digest": "SHA-256=secret-digest-value",
    "Signature": "keyId=k,signature=secret-signature-value",
    "Signature-Input": "sig1=(secret-signature-input)",
    "X-Api-Token": "secret-x-api-token",
    "X-Api-Key": "secret-x-api-key",
    "X-Auth-Token": "secret-x-auth-token",
    "X-Client-Secret": "secret-x-client-secret",
    "X-Webhook-Secret": "secret-x-webhook-secret",
    "X-Access-Token": "secret-x-access-token",
    "Cookie": "sessionid=secret-session-cookie",
    "X-Forwarded-For": "198.51.100.7",  # the sender's own claim: no proxy is configured
}
# What an operator needs to tell who sent a delivery and which event it was.
ALLOWED_HEADERS = {
    "User-Agent": "FleetHook/1",
    "X-Request-Id": "req-1",
    "X-Correlation-Id": "corr-1",
    "X-Delivery-Id": "del-1",
    "X-Event-Id": "evt-1",
    "X-Event-Type": "frame.updated",
    "X-Webhook-Id": "wh-1",
    "Webhook-Id": "wh-2",
}


def test_only_allowlisted_headers_reach_the_database_never_a_credential(client):
    send(client, fine(1), headers=SECRET_HEADERS | ALLOWED_HEADERS)

    (stored,) = WebhookDelivery.objects.values_list("headers", flat=True)
    assert {name.lower() for name in stored} == {
        name.lower() for name in [*ALLOWED_HEADERS, "Content-Type", "Content-Length"]
    }
    assert stored["User-Agent"] == "FleetHook/1"
    assert stored["X-Event-Type"] == "frame.updated"
    row = json.dumps(stored)
    for name, value in SECRET_HEADERS.items():
        assert value not in row, name


def test_x_forwarded_for_is_kept_only_behind_configured_proxies(client, settings):
    send(client, fine(1), headers={"X-Forwarded-For": "198.51.100.7"})
    settings.FLEET_WEBHOOK_PROXY_COUNT = 1
    send(client, fine(2), headers={"X-Forwarded-For": "198.51.100.7"})

    without_proxy, behind_proxy = WebhookDelivery.objects.order_by("pk").values_list(
        "headers", flat=True
    )
    assert "X-Forwarded-For" not in without_proxy
    assert behind_proxy["X-Forwarded-For"] == "198.51.100.7"


def test_the_source_address_comes_from_the_trusted_proxy_when_configured(client, settings):
    forwarded = {"HTTP_X_FORWARDED_FOR": "6.6.6.6, 203.0.113.9", "REMOTE_ADDR": "10.0.0.2"}

    send(client, fine(1), **forwarded)
    settings.FLEET_WEBHOOK_PROXY_COUNT = 1
    send(client, fine(2), **forwarded)

    assert list(
        WebhookDelivery.objects.order_by("pk").values_list("source_address", flat=True)
    ) == [
        "10.0.0.2",
        "203.0.113.9",
    ]


def test_notifications_are_records_of_their_own(client):
    send(client, {"notification": {"id": 1, "treated": False, "title": "Vistoria"}})
    send(client, fine(1))

    assert Notification.objects.get().title == "Vistoria"
    assert Fine.objects.count() == 1


@pytest.mark.django_db(transaction=True)
def test_a_delivery_that_failed_for_the_portal_is_replayed_once_the_cause_is_fixed(client):
    """The fines table is not where the portal looks (say, a botched migration):
    the delivery fails, is kept, and a replay processes it once the table is back."""
    table = Fine._meta.db_table
    with connection.schema_editor() as editor:
        editor.alter_db_table(Fine, table, f"{table}_elsewhere")
    try:
        response = send(client, fine(1, linkFrame=DOCUMENT))
        delivery = WebhookDelivery.objects.get()
        assert response.status_code == 202
        assert delivery.status == "failed"
        assert table in delivery.error
    finally:
        with connection.schema_editor() as editor:
            editor.alter_db_table(Fine, f"{table}_elsewhere", table)

    outcomes = delivery_replay(ids=[delivery.pk])

    assert outcomes == {DeliveryStatus.PROCESSED: 1}
    delivery.refresh_from_db()
    assert (delivery.status, delivery.error, delivery.attempts) == ("processed", "", 2)
    assert Fine.objects.get().link_frame == DOCUMENT
    assert stored_bodies() == [json.dumps(fine(1, linkFrame=DOCUMENT)).encode()]


@pytest.mark.django_db(transaction=True)  # the receiver's INSERT as in production: no transaction
def test_a_delivery_is_stored_when_the_database_dropped_the_connection(client):
    """PostgreSQL restarted, or ended the connection: at the next request Django checks
    the connection it kept (CONN_HEALTH_CHECKS) and opens a new one for the INSERT."""
    if connection.vendor != "postgresql":
        pytest.skip("a server ending a connection is PostgreSQL's; SQLite has none")
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        (backend,) = cursor.fetchone()
    admin = connections.create_connection(DEFAULT_DB_ALIAS)
    try:
        with admin.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(%s)", [backend])
    finally:
        admin.close()
    # What Django's handler does as each request starts (the test client leaves it out).
    request_started.send(sender=None)

    response = send(client, fine(9, linkFrame=DOCUMENT))

    assert response.status_code == 202
    assert only_delivery().status == DeliveryStatus.PROCESSED
    assert Fine.objects.get(external_id="9").link_frame == DOCUMENT


@pytest.mark.parametrize("length", ["-5", "many"])
def test_a_nonsense_content_length_is_a_400_and_stores_nothing(client, length):
    response = client.post(URL, data=b"{}", content_type="application/json", CONTENT_LENGTH=length)

    assert response.status_code == 400
    assert "Content-Length" in response.json()["error"]
    assert not WebhookDelivery.objects.exists()


def test_an_empty_body_is_kept_as_invalid(client):
    # The test client leaves the content type out when there is no body: set it here.
    response = send(client, b"", CONTENT_TYPE="application/json")

    assert response.status_code == 202
    assert WebhookDelivery.objects.get().error == "the body is empty"


@pytest.mark.django_db(transaction=True)  # the receiver's INSERT as in production: no transaction
def test_the_receivers_insert_is_in_the_sql_log_when_queries_are_logged(client):
    """With DEBUG, an operator reading `django.db.backends` sees the delivery stored."""
    with CaptureQueriesContext(connection) as queries:
        response = send(client, fine(10))

    assert response.status_code == 202
    table = WebhookDelivery._meta.db_table
    assert any(query["sql"].startswith(f'INSERT INTO "{table}"') for query in queries)
