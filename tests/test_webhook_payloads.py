"""The tolerant reader of webhook payloads (fleet/webhooks/payloads.py): what it takes, refuses."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from fleet.webhooks.payloads import (
    InvalidPayload,
    event_from,
    is_json_content_type,
    parse_body,
    unknown_keys,
)


@pytest.mark.parametrize(
    ("content_type", "json"),
    [
        ("application/json", True),
        ("Application/JSON; charset=UTF-8", True),
        ("application/vnd.fleet+json", True),
        ("text/json", False),
        ("text/plain", False),
        ("", False),
    ],
)
def test_json_content_types(content_type, json):
    assert is_json_content_type(content_type) is json


def test_a_declared_latin1_body_is_read_as_such():
    body = '{"frame": {"id": 1, "treated": false, "description": "Infração"}}'.encode("latin-1")

    payload = parse_body(body, "application/json; charset=ISO-8859-1")

    assert payload["frame"]["description"] == "Infração"


def test_a_nul_character_is_read_out_of_every_text_of_a_payload():
    # PostgreSQL's text and jsonb cannot hold U+0000: kept, it would make the fine unwritable.
    body = (
        rb'{"frame": {"id": 1, "treated": false, "description": "A\u0000B", "k\u0000": ["\u0000"]}}'
    )

    payload = parse_body(body, "application/json")

    assert payload["frame"] == {"id": 1, "treated": False, "description": "AB", "k": [""]}


def test_an_unknown_charset_is_invalid():
    with pytest.raises(InvalidPayload, match="not valid"):
        parse_body(b"{}", "application/json; charset=klingon")


def test_the_time_of_the_event_is_read_with_or_without_a_zone():
    zoned = event_from({"frame": {"id": 1, "treated": False, "updatedAt": "2026-11-20T10:00:00Z"}})
    naive = event_from({"frame": {"id": 1, "treated": False, "updated_at": "2026-11-20T10:00:00"}})
    nonsense = event_from({"frame": {"id": 1, "treated": False, "updatedAt": "yesterday"}})

    moment = datetime(2026, 11, 20, 10, tzinfo=UTC)
    assert zoned.as_of == naive.as_of == moment
    assert nonsense.as_of is None


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({"frame": {"id": True, "treated": False}}, "frame.id must be a number or a string"),
        ({"frame": {"id": "", "treated": False}}, "frame.id must have 1 to 100 characters"),
        ({"frame": {"id": "x" * 101, "treated": False}}, "1 to 100 characters"),
        ({"frame": [1], "treated": False}, "frame must be an object, not array"),
        ({"frame": {"treated": False}, "notification": {"treated": False}}, "both"),
        ({"frame": {"id": 1, "treated": False}, "linkFrame": 7}, "linkFrame must be a URL or null"),
        ({"notification": {"id": 1, "treated": 0}}, "true or false, not number"),
    ],
)
def test_what_cannot_become_a_record_says_why(payload, message):
    with pytest.raises(InvalidPayload, match=message):
        event_from(payload)


def test_an_empty_link_frame_is_not_available_yet():
    event = event_from({"frame": {"id": 1, "treated": False}, "linkFrame": "  "})

    assert event.link_frame is None


def test_unknown_keys_are_named_by_where_they_sit_with_a_sample():
    found = unknown_keys(
        {
            "frame": {"id": 1, "treated": False, "vehicle": {"renavam": "x" * 300}},
            "eventId": "e-1",
            "notification": {"channel": "app"},
        }
    )

    assert set(found) == {"frame.vehicle", "eventId", "notification.channel"}
    assert found["eventId"] == '"e-1"'
    assert len(found["frame.vehicle"]) == 200
    assert found["frame.vehicle"].endswith("…")


def test_records_without_an_id_share_a_key_when_their_identifying_fields_match():
    first = event_from({"notification": {"title": "Recall", "createdAt": "t1", "treated": False}})
    again = event_from(
        {"notification": {"title": "Recall", "createdAt": "t1", "treated": True, "new": 1}}
    )
    other = event_from({"notification": {"title": "Recall", "createdAt": "t2", "treated": False}})

    assert first.key == again.key != other.key
    assert first.key.startswith("sha256:")
