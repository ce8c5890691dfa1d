"""Minimal mode: each answer holds what the spec promises, under the seed's spellings, plus
members nobody knows; errors, the control surface and normal mode do not change."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from tests.conftest import Emulator
from tests.emulator.support import V2_ERROR, Api, auth_headers

# The spellings the portal's client accepts (the emulator and the portal keep
# their own copies; this one checks the emulator's).
SPELLINGS = {
    "document_url": {"downloadUrl", "url", "download_url", "pdfUrl", "pdf_url", "link", "href"},
    "failure_code": {"code", "publicCode", "errorCode"},
    "failure_message": {"message", "publicMessage", "description"},
    "latest": {"latest", "lastIssued", "latestIssued", "current"},
    "in_progress": {"inProgress", "in_progress", "pending", "request"},
}
# Names a client may read: an added member must never use one.
READ_BY_CLIENTS = {
    "id", "status", "document", "failure", "url", "code", "message", "error", "plate",
    "carPlate", "car_plate", "model", "active", "driver_id", "cars", "data", "total",
    "accessKey", "items", "cpf", "traceId",
}.union(*SPELLINGS.values())  # fmt: skip
DATE_LIKE = re.compile(r"(?i).*(at|date|time|expir|created|updated|valid|day)s?$|.*(date|time)")
VEHICLE = {"id", "car_plate", "model", "active", "driver_id"}
LOOKUP, BATCH = "/v2/cnh/lookup", "/v2/cnh/lookup/batch"
CPF, TIMEOUT_CPF, NO_LICENCE_CPF = "52998224725", "50450450406", "00000040495"


def switch(emulator: Emulator, **body: Any) -> dict[str, Any]:
    mode: dict[str, Any] = emulator.control("POST", "mode", **body)
    return mode


@pytest.fixture(params=[1, 2, 3, 42])
def mode(emulator: Emulator, request: pytest.FixtureRequest) -> dict[str, Any]:
    """Minimal mode on, with a few spelling seeds; what GET /_emulator/mode says."""
    return switch(emulator, minimal=True, spelling_seed=request.param)


def walk(value: Any) -> Iterator[Any]:
    yield value
    children = value.values() if isinstance(value, dict) else value
    if isinstance(value, dict | list):
        for child in children:
            yield from walk(child)


def assert_members(
    body: dict[str, Any], promised: set[str], mode: dict[str, Any], place: str
) -> None:
    """Exactly the promised members, plus this place's added ones, all unknown to clients."""
    added = set(mode["extras"][place])
    assert added
    assert set(body) == promised | added, place
    assert not added & promised
    for name in added:
        assert name not in READ_BY_CLIENTS, name
        assert not DATE_LIKE.fullmatch(name), name
        for value in walk(body[name]):
            assert not (isinstance(value, dict) and "status" in value), (name, body[name])


def seeded(emulator: Emulator) -> dict[str, dict[str, Any]]:
    return {request["status"]: request for request in emulator.control("GET", "crlv/requests")}


def ok(response: requests.Response) -> Any:
    assert response.status_code == 200, response.text
    assert "X-Trace-Id" not in response.headers
    assert "traceId" not in response.text
    return response.json()


# The answers, route by route


def test_list_cars_holds_the_five_specified_members(
    api: Api, emulator: Emulator, mode: dict[str, Any]
) -> None:
    body = ok(api.get("/key/list-cars"))

    assert_members(body, {"cars", "error", "code"}, mode, "envelope")
    assert len(mode["extras"]["envelope"]) == len(mode["extras"]["cars"]) == 1
    assert (body["error"], body["code"]) == (False, "fbk_200")
    assert_members(body["cars"], {"data", "total"}, mode, "cars")
    assert body["cars"]["total"] == len(body["cars"]["data"]) == 200
    for vehicle in body["cars"]["data"]:
        assert_members(vehicle, VEHICLE, mode, "vehicle")
    switch(emulator, minimal=False)
    normal = [{name: car[name] for name in VEHICLE} for car in emulator.vehicles()]
    assert [{name: car[name] for name in VEHICLE} for car in body["cars"]["data"]] == normal


def test_list_cars_is_served_the_same_each_time(api: Api, mode: dict[str, Any]) -> None:
    assert api.get("/key/list-cars").content == api.get("/key/list-cars").content


def test_the_key_generator_answers_its_three_members_and_one_more(
    api: Api, emulator: Emulator, mode: dict[str, Any]
) -> None:
    body = ok(api.post("/key/generator"))

    assert_members(body, {"accessKey", "error", "code"}, mode, "access_key")
    assert len(mode["extras"]["access_key"]) == 1
    assert (body["error"], body["code"]) == (False, "fbk_200")
    login = requests.get(f"{emulator.url}/app/login?accessKey={body['accessKey']}", timeout=10)
    assert login.status_code == 200


@pytest.mark.parametrize("state", ["pending", "in_progress"])
def test_an_open_request_is_only_its_status(
    api: Api, emulator: Emulator, mode: dict[str, Any], state: str
) -> None:
    body = ok(api.get(f"/v2/crlv/requests/{seeded(emulator)[state]['requestId']}"))

    assert_members(body, {"status"}, mode, "crlv_request")
    assert body["status"] == state


def test_a_completed_request_has_only_the_pdf_url_in_its_document(
    api: Api, emulator: Emulator, mode: dict[str, Any]
) -> None:
    body = ok(api.get(f"/v2/crlv/requests/{seeded(emulator)['completed']['requestId']}"))

    assert_members(body, {"status", "document"}, mode, "crlv_request")
    assert body["status"] == "completed"
    assert list(body["document"]) == [mode["names"]["document_url"]]
    pdf = requests.get(body["document"][mode["names"]["document_url"]], timeout=10)
    assert pdf.status_code == 200
    assert pdf.content.startswith(b"%PDF-")


def test_a_failed_request_has_its_code_and_message_in_its_failure(
    api: Api, emulator: Emulator, mode: dict[str, Any]
) -> None:
    body = ok(api.get(f"/v2/crlv/requests/{seeded(emulator)['failed']['requestId']}"))

    assert_members(body, {"status", "failure"}, mode, "crlv_request")
    assert body["status"] == "failed"
    names = mode["names"]
    assert set(body["failure"]) == {names["failure_code"], names["failure_message"]}
    assert all(isinstance(text, str) and text for text in body["failure"].values())


@pytest.mark.parametrize(
    ("state", "members"),
    [
        ("completed", {"latest"}),
        ("pending", {"in_progress"}),
        ("in_progress", {"in_progress"}),
        ("failed", set()),
        ("both", {"latest", "in_progress"}),
    ],
)
def test_the_vehicle_view_holds_each_of_its_two_when_it_exists(
    api: Api, emulator: Emulator, mode: dict[str, Any], state: str, members: set[str]
) -> None:
    plate = seeded(emulator)["completed" if state == "both" else state]["carPlate"]
    if state == "both":
        emulator.create_crlv_request(plate)

    body = ok(api.get(f"/v2/crlv/vehicles/{plate}"))

    spelled = {mode["names"][member]: member for member in members}
    assert_members(body, set(spelled), mode, "vehicle_view")
    for name, member in spelled.items():
        entry = body[name]
        promised = {"status", "document"} if member == "latest" else {"status"}
        assert_members(entry, promised, mode, "crlv_request")
        assert (entry["status"] == "completed") == (member == "latest")
        if member == "latest":
            assert list(entry["document"]) == [mode["names"]["document_url"]]


def test_a_lookup_answers_its_licence_without_the_cpf(
    api: Api, emulator: Emulator, mode: dict[str, Any]
) -> None:
    body = ok(api.post(LOOKUP, json={"cpf": CPF}))

    switch(emulator, minimal=False)
    licence = {name: value for name, value in emulator.cnh_licence(CPF).items() if name != "cpf"}
    del licence["traceId"]
    assert_members(body, set(licence), mode, "cnh_licence")
    assert {name: body[name] for name in licence} == licence
    assert body["status"] == "ok"


def test_a_batch_answers_its_items_in_order_without_cpfs(
    api: Api, emulator: Emulator, mode: dict[str, Any]
) -> None:
    cpfs = [NO_LICENCE_CPF, CPF, "123", TIMEOUT_CPF, "11144477735"]
    body = ok(api.post(BATCH, json={"cpfs": cpfs}))

    switch(emulator, minimal=False)
    normal = api.post(BATCH, json={"cpfs": cpfs}).json()["items"]
    assert_members(body, {"items"}, mode, "cnh_batch")
    assert len(body["items"]) == len(cpfs)
    for item, expected in zip(body["items"], normal, strict=True):
        expected.pop("cpf")
        place = "cnh_item_error" if expected["status"] == "error" else "cnh_licence"
        assert_members(item, set(expected), mode, place)
        assert {name: item[name] for name in expected} == expected
    assert [item["status"] for item in body["items"]] == ["error", "ok", "error", "error", "ok"]
    assert body["items"][3]["error"]["code"] == "gateway-timeout"


# Errors keep their specified bodies


def test_a_v2_error_still_carries_its_trace_id(api: Api, mode: dict[str, Any]) -> None:
    response = api.get("/v2/crlv/requests/00000000-0000-4000-8000-000000000000")

    assert response.status_code == 404
    assert response.headers["Content-Type"] == "application/problem+json"
    body = response.json()
    assert set(body) == {"type", "title", "status", "detail", "instance", "traceId"}
    assert body["type"] == V2_ERROR + "not-found"
    assert body["traceId"] == response.headers["X-Trace-Id"]


def test_a_lookup_timeout_is_still_a_504_problem_with_retry_after(
    api: Api, mode: dict[str, Any]
) -> None:
    response = api.post(LOOKUP, json={"cpf": TIMEOUT_CPF})

    assert response.status_code == 504
    assert response.headers["Retry-After"] == "30"
    assert response.json()["traceId"] == response.headers["X-Trace-Id"]


def test_a_v1_error_is_unchanged(api: Api, mode: dict[str, Any]) -> None:
    response = api.get("/key/list-cars", headers=auth_headers(Key="0" * 64))

    assert response.status_code == 401
    assert response.json() == {"error": True, "code": "fbk_001", "message": "Não autorizado"}


def test_control_answers_do_not_change(emulator: Emulator, mode: dict[str, Any]) -> None:
    plate = emulator.control("GET", "crlv/requests")[0]["carPlate"]

    created = emulator.create_crlv_request(plate, pending_seconds=60)  # still pending when listed

    assert {"requestId", "carPlate", "status", "createdAt", "updatedAt"} <= set(created)
    listed = emulator.control("GET", "crlv/requests")
    assert {"requestId": created["requestId"], "carPlate": plate, "status": "pending"} in listed


# Normal mode, the switch and reset


def test_normal_mode_is_the_default_and_comes_back_unchanged(api: Api, emulator: Emulator) -> None:
    assert emulator.control("GET", "mode")["minimal"] is False
    before = api.get("/key/list-cars").content

    switch(emulator, minimal=True, spelling_seed=5)
    assert api.get("/key/list-cars").content != before
    switch(emulator, minimal=False)

    assert api.get("/key/list-cars").content == before
    vehicle = api.get(f"/v2/crlv/vehicles/{seeded(emulator)['completed']['carPlate']}")
    assert vehicle.json()["traceId"] == vehicle.headers["X-Trace-Id"]
    assert set(vehicle.json()) == {"carPlate", "latest", "traceId"}
    assert "downloadUrl" in vehicle.json()["latest"]["document"]


def test_the_mode_names_the_spellings_chosen(emulator: Emulator) -> None:
    mode = switch(emulator, minimal=True, spelling_seed=1234)

    assert mode["minimal"] is True
    assert mode["spelling_seed"] == 1234
    assert set(mode["names"]) == set(SPELLINGS)
    for member, name in mode["names"].items():
        assert name in SPELLINGS[member]
    assert emulator.control("GET", "mode") == mode


def test_the_same_seed_gives_the_same_spellings(emulator: Emulator) -> None:
    first = switch(emulator, minimal=True, spelling_seed=77)
    switch(emulator, minimal=True, spelling_seed=78)

    assert switch(emulator, minimal=True, spelling_seed=77) == first
    assert switch(emulator, minimal=False, spelling_seed=77)["names"] == first["names"]


def test_over_many_seeds_every_spelling_is_used(emulator: Emulator) -> None:
    used: dict[str, set[str]] = {member: set() for member in SPELLINGS}
    added: set[str] = set()
    for seed in range(300):
        mode = switch(emulator, minimal=True, spelling_seed=seed)
        for member, name in mode["names"].items():
            used[member].add(name)
        added.update(*mode["extras"].values())

    assert used == SPELLINGS
    assert not added & READ_BY_CLIENTS
    assert not any(DATE_LIKE.fullmatch(name) for name in added)


def test_the_spelling_seed_is_optional_and_kept(emulator: Emulator) -> None:
    switch(emulator, minimal=True, spelling_seed=9)

    assert switch(emulator, minimal=False)["spelling_seed"] == 9
    assert switch(emulator, minimal=True) == switch(emulator, minimal=True, spelling_seed=9)


def test_reset_brings_back_the_command_line_mode(api: Api, emulator: Emulator) -> None:
    started = emulator.control("GET", "mode")
    switch(emulator, minimal=True, spelling_seed=started["spelling_seed"] + 1)

    emulator.reset()

    assert emulator.control("GET", "mode") == started
    assert "year" in api.get("/key/list-cars").json()["cars"]["data"][0]


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"minimal": "yes"},
        {"minimal": 1},
        {"minimal": None},
        {"minimal": True, "spelling_seed": "3"},
        {"minimal": True, "spelling_seed": 1.5},
        {"minimal": True, "spelling_seed": True},
        {"minimal": True, "spelling_seed": None},
        {"minimal": True, "seed": 3},
        ["minimal"],
    ],
)
def test_a_bad_mode_body_is_refused(emulator: Emulator, body: Any) -> None:
    response = requests.post(f"{emulator.url}/_emulator/mode", json=body, timeout=10)

    assert response.status_code == 400
    assert isinstance(response.json()["error"], str)
    assert emulator.control("GET", "mode")["minimal"] is False


def test_a_mode_body_that_is_not_json_is_refused(emulator: Emulator) -> None:
    response = requests.post(f"{emulator.url}/_emulator/mode", data=b"{minimal", timeout=10)

    assert response.status_code == 400
    assert "error" in response.json()
