"""Every error class, from real emulator answers, and the two body parsers."""

from __future__ import annotations

import pickle

import pytest
import requests

from fleet.api.client import FleetClient
from fleet.api.errors import (
    ApiError,
    AuthenticationFailed,
    CredentialsRejected,
    FleetError,
    GatewayTimeout,
    InvalidResponse,
    LoginRejected,
    NotAuthorized,
    NotFound,
    Outcome,
    PermissionDenied,
    RateLimited,
    Unauthorized,
    UpstreamUnavailable,
    error_for_response,
    parse_retry_after,
    parse_v1_error,
    parse_v2_problem,
)
from fleet.api.signing import signature
from tests.api.conftest import DEMO_PASSWORD, DEMO_SECRET, DEMO_TOKEN, DEMO_USER, MakeClient
from tests.conftest import Emulator

CRLV_VEHICLE = "/v2/crlv/vehicles/{carPlate}"


def _raw_error(emulator: Emulator, path: str, route: str, **headers: str) -> FleetError | None:
    """What the parser makes of the emulator's real answer to a hand-made request."""
    response = requests.get(f"{emulator.url}{path}", headers=headers, timeout=5)
    return error_for_response(
        status=response.status_code,
        body=response.json(),
        headers=response.headers,
        route=route,
        method="GET",
    )


# --- Credentials -------------------------------------------------------------


def test_unknown_token_is_not_authorized_on_v1(make_client: MakeClient) -> None:
    client = make_client(access_token="other-env-access-token", secret_key="other-env-secret-key")
    with pytest.raises(NotAuthorized) as raised:
        client.list_vehicle_columns()
    error = raised.value
    assert (error.status, error.code, error.route) == (401, "fbk_001", "/key/list-cars")
    assert error.message == "Não autorizado"


def test_wrong_secret_key_is_not_authorized_on_v1(make_client: MakeClient) -> None:
    client = make_client(secret_key="not-the-demo-secret")
    with pytest.raises(NotAuthorized):
        client.list_vehicle_columns()


def test_bad_credentials_are_authentication_failed_on_v2(make_client: MakeClient) -> None:
    client = make_client(access_token="other-env-access-token", secret_key="other-env-secret-key")
    with pytest.raises(AuthenticationFailed) as raised:
        client.get_vehicle_crlv("ABC1234")
    error = raised.value
    assert isinstance(error, CredentialsRejected)
    assert error.status == 401
    assert error.code is not None
    assert error.code.endswith(":error:authentication-failed")
    assert error.trace_id
    assert error.message


def test_missing_authorization_header_is_unauthorized_on_v2(emulator: Emulator) -> None:
    key = signature(access_token=DEMO_TOKEN, secret_key=DEMO_SECRET)
    error = _raw_error(
        emulator,
        "/v2/crlv/vehicles/ABC1234",
        CRLV_VEHICLE,
        Key=key,
        **{"cache-control": "no-cache"},
    )
    assert isinstance(error, Unauthorized)
    assert error.trace_id


def test_wrong_authorization_scheme_is_unauthorized_on_v2(emulator: Emulator) -> None:
    key = signature(access_token=DEMO_TOKEN, secret_key=DEMO_SECRET)
    error = _raw_error(
        emulator,
        "/v2/crlv/vehicles/ABC1234",
        CRLV_VEHICLE,
        Authorization=f"Bearer {DEMO_TOKEN}",
        Key=key,
        **{"cache-control": "no-cache"},
    )
    assert isinstance(error, Unauthorized)


def test_missing_key_header_is_not_authorized_on_v1(emulator: Emulator) -> None:
    error = _raw_error(
        emulator,
        "/key/list-cars",
        "/key/list-cars",
        Authorization=f"Basic {DEMO_TOKEN}",
        **{"cache-control": "no-cache"},
    )
    assert isinstance(error, NotAuthorized)


def test_account_without_permission_is_permission_denied_on_v1(make_client: MakeClient) -> None:
    client = make_client(
        access_token="no-permission-access-token", secret_key="no-permission-secret-key"
    )
    with pytest.raises(PermissionDenied) as raised:
        client.list_vehicle_columns()
    assert (raised.value.status, raised.value.code) == (403, "fbk_002")


def test_account_without_permission_is_permission_denied_on_v2(make_client: MakeClient) -> None:
    client = make_client(
        access_token="no-permission-access-token", secret_key="no-permission-secret-key"
    )
    with pytest.raises(PermissionDenied) as raised:
        client.get_vehicle_crlv("ABC1234")
    assert raised.value.code is not None
    assert raised.value.code.endswith(":error:forbidden")


def test_wrong_web_app_password_is_login_rejected(make_client: MakeClient) -> None:
    client = make_client(wrong_login_codes=["fbk_003"])
    with pytest.raises(LoginRejected) as raised:
        client.create_access_key(email=DEMO_USER, password="not-the-password")
    assert raised.value.code == "fbk_003"
    assert raised.value.route == "/key/generator"


def test_unknown_web_app_user_is_login_rejected(make_client: MakeClient) -> None:
    client = make_client(wrong_login_codes=["fbk_003"])
    with pytest.raises(LoginRejected):
        client.create_access_key(email="nobody@example.com", password=DEMO_PASSWORD)


def test_a_wrong_login_code_nobody_documented_is_not_called_a_wrong_password(
    client: FleetClient,
) -> None:
    # The spec documents no wrong-login code: without one configured, the
    # refusal is an error of its own, with the vendor's code and message.
    with pytest.raises(ApiError) as raised:
        client.create_access_key(email=DEMO_USER, password="not-the-password")
    assert type(raised.value) is ApiError
    assert raised.value.code == "fbk_003"
    assert raised.value.message == "E-mail ou senha inválidos"


@pytest.mark.parametrize(
    ("status", "code"),
    [(401, "fbk_042"), (403, "fbk_043"), (400, "fbk_400"), (200, "fbk_099")],
)
def test_any_other_login_refusal_is_shown_as_what_it_is(
    emulator: Emulator, make_client: MakeClient, status: int, code: str
) -> None:
    body = {"error": True, "code": code, "message": "Conta suspensa", "traceId": "tr-1"}
    # v1 may answer an error envelope with 200 (a fault without a status answers 200).
    emulator.fault("/key/generator", body=body, **({"status": status} if status != 200 else {}))
    client = make_client(wrong_login_codes=["fbk_003"])

    with pytest.raises(ApiError) as raised:
        client.create_access_key(email=DEMO_USER, password=DEMO_PASSWORD)

    assert type(raised.value) is ApiError  # not LoginRejected, not CredentialsRejected
    assert (raised.value.code, raised.value.message) == (code, "Conta suspensa")
    assert raised.value.trace_id == "tr-1"
    assert f"code {code}" in str(raised.value)
    assert "trace tr-1" in str(raised.value)


def test_bad_api_credentials_on_the_login_route_are_not_a_login_problem(
    make_client: MakeClient,
) -> None:
    client = make_client(secret_key="not-the-demo-secret")
    with pytest.raises(NotAuthorized):
        client.create_access_key(email=DEMO_USER, password=DEMO_PASSWORD)


# --- Not found, unknown codes, envelope on 200 ------------------------------------


def test_unknown_plate_is_not_found(client: FleetClient) -> None:
    with pytest.raises(NotFound) as raised:
        client.get_vehicle_crlv("ZZZ9Z99")
    assert raised.value.status == 404
    assert raised.value.code is not None
    assert raised.value.code.endswith(":error:not-found")


def test_unknown_crlv_request_is_not_found(client: FleetClient) -> None:
    with pytest.raises(NotFound):
        client.get_crlv_request("00000000-0000-4000-8000-000000000000")


def test_v1_error_envelope_on_a_200_is_an_error(emulator: Emulator, client: FleetClient) -> None:
    emulator.fault(
        "/key/list-cars", body={"error": True, "code": "fbk_001", "message": "Não autorizado"}
    )
    with pytest.raises(NotAuthorized) as raised:
        client.list_vehicle_columns()
    assert raised.value.status == 200


def test_unknown_v1_code_is_a_plain_api_error(emulator: Emulator, client: FleetClient) -> None:
    emulator.fault("/key/list-cars", body={"error": True, "code": "fbk_777", "message": "Novo"})
    with pytest.raises(ApiError) as raised:
        client.list_vehicle_columns()
    assert type(raised.value) is ApiError
    assert (raised.value.code, raised.value.message) == ("fbk_777", "Novo")


def test_server_error_with_a_problem_body_is_upstream_unavailable(
    emulator: Emulator, client: FleetClient
) -> None:
    emulator.fault(CRLV_VEHICLE, status=500)
    with pytest.raises(UpstreamUnavailable) as raised:
        client.get_vehicle_crlv("ABC1234")
    assert raised.value.status == 500
    assert raised.value.trace_id


# --- The parsers on their own -------------------------------------------------


def test_v1_parser_reads_the_envelope() -> None:
    parsed = parse_v1_error({"error": True, "code": "fbk_002", "message": "Sem permissão"})
    assert parsed is not None
    assert (parsed.format, parsed.code, parsed.message) == ("v1", "fbk_002", "Sem permissão")


@pytest.mark.parametrize(
    "body", [{"error": False, "code": "fbk_200"}, {"cars": {}}, [], "text", None]
)
def test_v1_parser_ignores_what_is_not_an_error_envelope(body: object) -> None:
    assert parse_v1_error(body) is None


def test_v2_parser_prefers_detail_and_reads_the_trace_id() -> None:
    parsed = parse_v2_problem(
        {
            "type": "urn:x-api-v2:error:forbidden",
            "title": "Forbidden",
            "detail": "No access",
            "status": 403,
            "traceId": "t-1",
        }
    )
    assert parsed is not None
    assert (parsed.code, parsed.message, parsed.trace_id) == (
        "urn:x-api-v2:error:forbidden",
        "No access",
        "t-1",
    )


def test_v2_parser_falls_back_to_the_title() -> None:
    parsed = parse_v2_problem({"type": "urn:x:error:not-found", "title": "Not found"})
    assert parsed is not None
    assert parsed.message == "Not found"


@pytest.mark.parametrize(
    ("problem_type", "cls"),
    [
        ("urn:any-service-api-v2:error:unauthorized", Unauthorized),
        ("urn:other-api-v2:error:authentication-failed", AuthenticationFailed),
        ("urn:other-api-v2:error:forbidden", PermissionDenied),
        ("urn:other-api-v2:error:gateway-timeout", GatewayTimeout),
        ("urn:other-api-v2:error:too-many-requests", RateLimited),
        ("urn:other-api-v2:error:something-new", ApiError),
    ],
)
def test_v2_types_are_matched_by_suffix_whatever_the_service(
    problem_type: str, cls: type[FleetError]
) -> None:
    error = error_for_response(
        status=418,
        body={"type": problem_type, "title": "t"},
        headers={"Content-Type": "application/problem+json"},
        route="/v2/x",
    )
    assert type(error) is cls


def test_any_504_is_a_gateway_timeout_with_its_retry_after() -> None:
    error = error_for_response(status=504, body=None, headers={"Retry-After": "7"}, route="/v2/cnh")
    assert isinstance(error, GatewayTimeout)
    assert error.retry_after == 7


def test_a_success_body_with_type_and_status_members_is_not_a_problem() -> None:
    body = {"type": "crlv", "status": "completed", "title": "Documento"}
    assert error_for_response(status=200, body=body, headers={}, route="/v2/x") is None


def test_an_html_error_page_still_gives_a_typed_error() -> None:
    error = error_for_response(status=404, body=None, headers={}, route="/key/list-cars")
    assert isinstance(error, NotFound)
    assert "without a Fleet API error body" in str(error)


def test_a_redirect_is_an_invalid_response() -> None:
    error = error_for_response(status=302, body=None, headers={}, route="/key/list-cars")
    assert isinstance(error, InvalidResponse)


@pytest.mark.parametrize(
    ("status", "body", "outcome"),
    [
        (429, None, Outcome.RATE_LIMITED),
        (504, None, Outcome.UNAVAILABLE),
        (503, None, Outcome.UNAVAILABLE),
        (401, {"error": True, "code": "fbk_001"}, Outcome.CREDENTIALS_REJECTED),
        (403, {"error": True, "code": "fbk_002"}, Outcome.PERMISSION_DENIED),
        (404, None, Outcome.NOT_FOUND),
        (400, {"error": True, "code": "fbk_999"}, Outcome.ERROR),
        (302, None, Outcome.ERROR),
    ],
)
def test_each_error_carries_what_it_means_to_the_person_who_asked(
    status: int, body: object, outcome: Outcome
) -> None:
    error = error_for_response(status=status, body=body, headers={}, route="/key/list-cars")
    assert error is not None
    assert error.outcome is outcome


def test_a_login_refusal_is_its_own_outcome_and_only_a_retry_later_says_when() -> None:
    error = error_for_response(
        status=400,
        body={"error": True, "code": "fbk_010", "message": "Senha inválida"},
        headers={"Retry-After": "5"},
        route="/key/generator",
        login=True,
        wrong_login_codes={"fbk_010"},
    )
    assert isinstance(error, LoginRejected)
    assert error.outcome is Outcome.LOGIN_REJECTED
    assert error.retry_after is None


def test_retry_after_in_seconds() -> None:
    assert parse_retry_after("30") == 30
    assert parse_retry_after(" 1.5 ") == 1.5


def test_retry_after_as_an_http_date() -> None:
    now = 1_700_000_000.0  # 2023-11-14T22:13:20Z
    assert parse_retry_after("Tue, 14 Nov 2023 22:13:50 GMT", now=now) == 30


def test_retry_after_in_the_past_or_unreadable() -> None:
    assert parse_retry_after("Tue, 14 Nov 2023 22:13:00 GMT", now=1_700_000_000.0) == 0
    assert parse_retry_after("soon") is None
    assert parse_retry_after("") is None
    assert parse_retry_after(None) is None
    assert parse_retry_after("nan") is None


def test_errors_survive_pickling_with_their_fields() -> None:
    error = RateLimited("slow down", retry_after=3, status=429, route="/key/list-cars")
    copy = pickle.loads(pickle.dumps(error))  # noqa: S301 - our own object
    assert type(copy) is RateLimited
    assert (copy.retry_after, copy.status, copy.route) == (3, 429, "/key/list-cars")
    assert str(copy) == str(error)
