"""Routing on the raw path, query strings, keep-alive and the health check."""

from __future__ import annotations

import http.client
import json
from urllib.parse import urlsplit

from tests.conftest import Emulator
from tests.emulator.support import Api, auth_headers


def raw_get(emulator: Emulator, path: str) -> tuple[int, bytes]:
    """GET with the path exactly as written (no client-side normalisation)."""
    connection = http.client.HTTPConnection(urlsplit(emulator.url).netloc, timeout=10)
    try:
        connection.request("GET", path, headers=auth_headers())
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def test_an_encoded_slash_stays_inside_its_segment(emulator: Emulator) -> None:
    status, body = raw_get(emulator, "/v2/crlv/vehicles/..%2Fkey%2Fgenerator")

    assert status == 404
    assert json.loads(body)["type"] == "urn:fleet-api-v2:error:not-found"
    assert emulator.calls("GET /v2/crlv/vehicles/{carPlate}") == 1


def test_an_encoded_slash_in_a_request_id_is_one_unknown_id(emulator: Emulator) -> None:
    status, _ = raw_get(emulator, "/v2/crlv/requests/..%2F..%2Fkey%2Flist-cars")

    assert status == 404
    assert emulator.calls("GET /v2/crlv/requests/{requestId}") == 1
    assert emulator.calls("GET /key/list-cars") == 0


def test_dot_segments_are_not_resolved_into_another_route(emulator: Emulator) -> None:
    status, _ = raw_get(emulator, "/v2/crlv/vehicles/../../../key/list-cars")

    assert status == 404
    assert emulator.calls("GET /key/list-cars") == 0


def test_a_percent_encoded_plate_is_decoded_after_splitting(api: Api, emulator: Emulator) -> None:
    plate = emulator.vehicles()[0]["car_plate"]
    encoded = "".join(f"%{ord(c):02X}" for c in plate)

    status, body = raw_get(emulator, f"/v2/crlv/vehicles/{encoded}")

    assert status == 200
    assert json.loads(body)["carPlate"] == plate


def test_query_strings_play_no_part_in_routing(api: Api) -> None:
    response = api.get("/key/list-cars?route=/key/generator&page=2")

    assert response.status_code == 200
    assert response.json()["cars"]["total"] == 200


def test_a_trailing_slash_is_another_path(api: Api) -> None:
    assert api.get("/key/list-cars/").status_code == 404


def test_connections_are_kept_alive_with_content_length(emulator: Emulator) -> None:
    connection = http.client.HTTPConnection(urlsplit(emulator.url).netloc, timeout=10)
    answers = []
    sockets = []
    try:
        for path in ("/key/list-cars", "/v2/crlv/vehicles/NOPE000", "/key/list-cars"):
            connection.request("GET", path, headers=auth_headers())
            response = connection.getresponse()
            response.read()
            answers.append(response)
            sockets.append(connection.sock)
    finally:
        connection.close()

    assert all(response.version == 11 for response in answers)
    assert all(response.getheader("Content-Length") for response in answers)
    assert not any(response.will_close for response in answers)
    assert sockets[0] is not None
    assert sockets[0] is sockets[1] is sockets[2]


def test_healthz_answers_without_auth(emulator: Emulator) -> None:
    connection = http.client.HTTPConnection(urlsplit(emulator.url).netloc, timeout=10)
    connection.request("GET", "/healthz")
    response = connection.getresponse()

    assert response.status == 200
    assert json.loads(response.read()) == {"status": "ok"}
