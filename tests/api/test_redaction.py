"""No credential in any log line, error text or repr: a whole run, then the filter alone."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from fleet.api.client import FleetClient
from fleet.api.errors import FleetError, LoginRejected, NotAuthorized
from fleet.api.signing import signature
from portal.lib import redaction
from portal.lib.redaction import REDACTED, RedactingFilter, redact
from tests.api.conftest import (
    DEMO_PASSWORD,
    DEMO_SECRET,
    DEMO_TOKEN,
    DEMO_USER,
    MakeClient,
    Recorder,
    seeded_crlv_requests,
)
from tests.conftest import Emulator

SIGNATURE = signature(access_token=DEMO_TOKEN, secret_key=DEMO_SECRET)
WRONG_PASSWORD = "wrong-Passw0rd-!"


@pytest.fixture
def clients(make_client: MakeClient) -> tuple[FleetClient, FleetClient]:
    """The demo account's client and one with credentials of the other environment."""
    return (
        make_client(retry_budget=1.5, wrong_login_codes=["fbk_003"]),
        make_client(access_token="other-env-access-token", secret_key=DEMO_SECRET),
    )


def _run_every_method(
    emulator: Emulator, clients: tuple[FleetClient, FleetClient]
) -> tuple[str, list[FleetError]]:
    """Every method, successes and failures; returns the minted key and the errors."""
    client, stranger = clients
    errors: list[FleetError] = []

    def expect_error(call: object) -> None:
        try:
            call()  # type: ignore[operator]
        except FleetError as error:
            errors.append(error)
        else:
            pytest.fail("the call should have failed")

    client.list_vehicle_columns()
    key = client.create_access_key(email=DEMO_USER, password=DEMO_PASSWORD)
    expect_error(lambda: client.create_access_key(email=DEMO_USER, password=WRONG_PASSWORD))
    seeded = seeded_crlv_requests(emulator)
    for request in seeded:
        client.get_crlv_request(request["id"])
    client.get_vehicle_crlv(seeded[0]["plate"])
    expect_error(lambda: client.get_vehicle_crlv("ZZZ9Z99"))
    emulator.fault("/key/list-cars", status=429, retry_after=1)
    client.list_vehicle_columns()
    emulator.fault("/key/list-cars", drop=True, count=3)
    expect_error(client.list_vehicle_columns)
    emulator.fault("/v2/crlv/requests/{requestId}", malformed=True)
    expect_error(lambda: client.get_crlv_request(seeded[0]["id"]))
    emulator.fault("/key/generator", status=500)
    expect_error(lambda: client.create_access_key(email=DEMO_USER, password=DEMO_PASSWORD))
    expect_error(stranger.list_vehicle_columns)
    expect_error(lambda: stranger.get_crlv_request(seeded[0]["id"]))
    return key, errors


def _secrets(key: str) -> list[str]:
    return [DEMO_SECRET, SIGNATURE, DEMO_PASSWORD, WRONG_PASSWORD, key, DEMO_TOKEN]


def test_no_log_record_of_any_logger_contains_a_credential(
    emulator: Emulator, clients: tuple[FleetClient, FleetClient], log_records: Recorder
) -> None:
    key, errors = _run_every_method(emulator, clients)
    assert any(isinstance(e, LoginRejected) for e in errors)
    assert any(isinstance(e, NotAuthorized) for e in errors)
    assert log_records.of("fleet.api"), "the client logged nothing"
    assert any(r.name.startswith("urllib3") for r in log_records.records)
    for line in log_records.lines:
        for secret in _secrets(key):
            assert secret not in line, f"{secret[:4]}… leaked in {line!r}"


@pytest.fixture
def without_library_filters(clients: tuple[FleetClient, FleetClient]) -> Iterator[None]:
    """The client's loggers as if nobody had installed a RedactingFilter.

    After the clients exist: each new client installs the filters again.
    """
    loggers = [logging.getLogger(name) for name in redaction._LIBRARY_LOGGERS]
    for logger in loggers:
        logger.removeFilter(redaction._library_filter)
    yield
    redaction.protect_library_loggers()


def test_the_client_itself_logs_no_credential_even_unfiltered(
    emulator: Emulator,
    clients: tuple[FleetClient, FleetClient],
    without_library_filters: None,
    log_records: Recorder,
) -> None:
    key, _ = _run_every_method(emulator, clients)
    assert not logging.getLogger("fleet.api").filters
    assert log_records.of("fleet.api")
    for line in log_records.lines:
        for secret in _secrets(key):
            assert secret not in line, f"{secret[:4]}… leaked in {line!r}"


def test_errors_and_the_client_never_show_a_credential(
    emulator: Emulator, clients: tuple[FleetClient, FleetClient]
) -> None:
    key, errors = _run_every_method(emulator, clients)
    client = clients[0]
    assert len(errors) == 7
    texts = [repr(client), str(client), repr(client._session.auth)]
    texts += [str(e) for e in errors] + [repr(e) for e in errors]
    for text in texts:
        for secret in _secrets(key):
            assert secret not in text


def test_errors_say_route_status_code_and_trace_to_an_operator(
    emulator: Emulator, make_client: MakeClient
) -> None:
    stranger = make_client(access_token="other-env-access-token", secret_key="other-secret")
    with pytest.raises(FleetError) as raised:
        stranger.get_vehicle_crlv("ABC1234")
    text = str(raised.value)
    assert "GET /v2/crlv/vehicles/{carPlate}" in text
    assert "HTTP 401" in text
    assert "authentication-failed" in text
    assert f"trace {raised.value.trace_id}" in text


@pytest.fixture
def filtered_logger() -> Iterator[tuple[logging.Logger, Recorder]]:
    logger = logging.getLogger("tests.api.redaction")
    recorder = Recorder()
    recorder.addFilter(RedactingFilter(secrets=["extra-secret-value"]))
    logger.addHandler(recorder)
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    yield logger, recorder
    logger.removeHandler(recorder)
    logger.propagate = True


def test_filter_scrubs_header_dicts(filtered_logger: tuple[logging.Logger, Recorder]) -> None:
    logger, recorder = filtered_logger
    headers = {"Authorization": "Basic some-token-value", "Key": "ab" * 32, "Accept": "x"}
    logger.info("sent %s", headers)
    (line,) = recorder.lines
    assert "some-token-value" not in line
    assert "ab" * 32 not in line
    assert "'Accept': 'x'" in line
    assert REDACTED in line


def test_filter_scrubs_raw_header_lines(filtered_logger: tuple[logging.Logger, Recorder]) -> None:
    logger, recorder = filtered_logger
    logger.debug("Authorization: Basic tok-123456\r\nKey: %s\r\n", "0f" * 32)
    (line,) = recorder.lines
    assert "tok-123456" not in line
    assert "0f" * 32 not in line


def test_filter_scrubs_passwords_and_access_keys(
    filtered_logger: tuple[logging.Logger, Recorder],
) -> None:
    logger, recorder = filtered_logger
    logger.warning('body {"email": "a@b.c", "password": "hunter 22"}')
    logger.warning("GET /app/login?accessKey=2f1c2a9e-3b4d-4e5f-8a6b-1c2d3e4f5a6b&x=1")
    assert "hunter 22" not in recorder.lines[0]
    assert '"email": "a@b.c"' in recorder.lines[0]
    assert "2f1c2a9e" not in recorder.lines[1]
    assert "&x=1" in recorder.lines[1]


def test_filter_scrubs_given_and_registered_secrets(
    filtered_logger: tuple[logging.Logger, Recorder], client: FleetClient
) -> None:
    logger, recorder = filtered_logger
    logger.info("values %s and %s", "extra-secret-value", DEMO_SECRET)
    (line,) = recorder.lines
    assert "extra-secret-value" not in line
    assert DEMO_SECRET not in line


def test_filter_scrubs_tracebacks(
    filtered_logger: tuple[logging.Logger, Recorder], client: FleetClient
) -> None:
    logger, recorder = filtered_logger
    try:
        raise RuntimeError(f"bad key {SIGNATURE}")
    except RuntimeError:
        logger.exception("it failed")
    (line,) = recorder.lines
    assert "RuntimeError" in line
    assert SIGNATURE not in line


def test_urllib3_records_are_scrubbed_even_without_the_portal_filter(
    client: FleetClient, log_records: Recorder
) -> None:
    logging.getLogger("urllib3.connectionpool").debug("headers Key: %s", SIGNATURE)
    (line,) = [line for line in log_records.lines if "headers" in line]
    assert SIGNATURE not in line


def test_redact_leaves_ordinary_text_alone() -> None:
    text = "GET /key/list-cars -> 200 in 12 ms (attempt 1, trace abc)"
    assert redact(text) == text


def test_client_repr_shows_only_the_base_url(client: FleetClient) -> None:
    assert repr(client).startswith("<FleetClient http://127.0.0.1:")
    assert DEMO_TOKEN not in repr(client)
    assert DEMO_TOKEN not in repr(vars(client))


def test_exception_text_is_scrubbed_when_logged(client: FleetClient) -> None:
    error = FleetError(f"server echoed {SIGNATURE}", route="/key/list-cars")
    assert SIGNATURE not in str(error)
    assert SIGNATURE not in repr(error)
