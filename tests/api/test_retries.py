"""The retry policy: Retry-After within the budget, the shared cooldown, backoff, caps.

Every client here waits on a `StoppedClock`: the tests read back the waits it asked
for, so no verdict depends on how fast the machine is.
"""

from __future__ import annotations

import pytest

from fleet.api.client import LIST_VEHICLES, FleetClient
from fleet.api.cooldown import LocalCooldown
from fleet.api.errors import GatewayTimeout, RateLimited, UpstreamUnavailable
from fleet.api.resources import vehicle_columns_from_json
from tests.api.conftest import (
    DEMO_PASSWORD,
    DEMO_USER,
    MakeClient,
    Recorder,
    StoppedClock,
    wait_for_calls,
)
from tests.conftest import Emulator

LIST = "GET /key/list-cars"
VEHICLE_ROUTE = "/v2/crlv/vehicles/{carPlate}"
VEHICLE = f"GET {VEHICLE_ROUTE}"


@pytest.fixture
def client(make_client: MakeClient, clock: StoppedClock) -> FleetClient:
    return make_client(waits_on=clock)


@pytest.fixture
def plate(emulator: Emulator) -> str:
    plate: str = emulator.vehicles()[0]["car_plate"]
    return plate


# --- 429 and 504 ------------------------------------------------------------------


def test_429_with_a_retry_after_that_fits_the_budget_is_retried(
    emulator: Emulator, client: FleetClient, clock: StoppedClock
) -> None:
    emulator.fault("/key/list-cars", status=429, retry_after=1)
    result = client.list_vehicle_columns()
    assert clock.waits == [pytest.approx(1.0)]  # its Retry-After, once: the cooldown too
    assert result.total == 200
    assert emulator.calls(LIST) == 2


def test_429_with_a_long_retry_after_is_raised_at_once(
    emulator: Emulator, client: FleetClient, clock: StoppedClock
) -> None:
    emulator.fault("/key/list-cars", status=429, retry_after=30)
    with pytest.raises(RateLimited) as raised:
        client.list_vehicle_columns()
    assert clock.waits == []
    assert raised.value.retry_after == 30
    assert raised.value.status == 429
    assert raised.value.code == "fbk_429"
    assert "retry after 30 s" in str(raised.value)
    assert emulator.calls(LIST) == 1


def test_a_route_cooling_down_fails_without_calling_the_api(
    emulator: Emulator, client: FleetClient, clock: StoppedClock
) -> None:
    emulator.fault("/key/list-cars", status=429, retry_after=30)
    with pytest.raises(RateLimited):
        client.list_vehicle_columns()
    with pytest.raises(RateLimited) as raised:
        client.list_vehicle_columns()
    assert clock.waits == []
    assert raised.value.retry_after is not None
    assert 28 < raised.value.retry_after <= 30
    assert raised.value.status is None
    assert emulator.calls(LIST) == 1


def test_the_cooldown_pauses_only_its_route(
    emulator: Emulator, client: FleetClient, plate: str
) -> None:
    emulator.fault("/key/list-cars", status=429, retry_after=30)
    with pytest.raises(RateLimited):
        client.list_vehicle_columns()
    assert client.get_vehicle_crlv(plate).plate == plate


def test_the_cooldown_is_shared_by_clients_that_share_it(
    emulator: Emulator, make_client: MakeClient, clock: StoppedClock
) -> None:
    shared = LocalCooldown(clock=clock.monotonic)
    first = make_client(waits_on=clock, cooldown=shared)
    second = make_client(waits_on=clock, cooldown=shared)
    emulator.fault("/key/list-cars", status=429, retry_after=30)
    with pytest.raises(RateLimited):
        first.list_vehicle_columns()
    with pytest.raises(RateLimited):
        second.list_vehicle_columns()
    assert clock.waits == []
    assert emulator.calls(LIST) == 1


def test_a_short_cooldown_is_waited_out_within_the_budget(
    emulator: Emulator, client: FleetClient, clock: StoppedClock
) -> None:
    client.cooldown.hold("/key/list-cars", 0.5)
    client.list_vehicle_columns()
    assert clock.waits == [pytest.approx(0.5)]
    assert emulator.calls(LIST) == 1


def test_a_per_call_budget_of_zero_does_not_wait(
    emulator: Emulator, client: FleetClient, clock: StoppedClock
) -> None:
    emulator.fault("/key/list-cars", status=429, retry_after=1)
    with pytest.raises(RateLimited) as raised:
        client.list_vehicle_columns(retry_budget=0)
    assert clock.waits == []
    assert raised.value.retry_after == 1


def test_504_with_a_retry_after_that_fits_the_budget_is_retried(
    emulator: Emulator, client: FleetClient, clock: StoppedClock, plate: str
) -> None:
    emulator.fault(VEHICLE_ROUTE, status=504, retry_after=1)
    assert client.get_vehicle_crlv(plate).plate == plate
    assert clock.waits == [pytest.approx(1.0)]
    assert emulator.calls(VEHICLE) == 2


def test_504_with_a_long_retry_after_is_raised_then_the_route_cools_down(
    emulator: Emulator, client: FleetClient, clock: StoppedClock, plate: str
) -> None:
    emulator.fault(VEHICLE_ROUTE, status=504, retry_after=30)
    with pytest.raises(GatewayTimeout) as raised:
        client.get_vehicle_crlv(plate)
    assert clock.waits == []
    assert raised.value.retry_after == 30
    assert raised.value.code is not None
    assert raised.value.code.endswith(":error:gateway-timeout")
    assert raised.value.trace_id
    with pytest.raises(RateLimited):
        client.get_vehicle_crlv(plate)
    assert emulator.calls(VEHICLE) == 1


def test_429_on_the_login_route_is_retried_too(
    emulator: Emulator, client: FleetClient, clock: StoppedClock
) -> None:
    emulator.fault("/key/generator", status=429, retry_after=1)
    assert client.create_access_key(email=DEMO_USER, password=DEMO_PASSWORD)
    assert clock.waits == [pytest.approx(1.0)]
    assert emulator.calls("POST /key/generator") == 2


# --- Server errors and lost connections ------------------------------------------------


def test_503_is_upstream_unavailable_and_not_retried(
    emulator: Emulator, client: FleetClient
) -> None:
    emulator.fault("/key/list-cars", status=503)
    with pytest.raises(UpstreamUnavailable) as raised:
        client.list_vehicle_columns()
    assert raised.value.status == 503
    assert emulator.calls(LIST) == 1


@pytest.mark.parametrize("fault", ["drop", "cut"])  # no answer; half an answer, then closed
def test_a_connection_lost_on_a_get_is_retried(
    emulator: Emulator, client: FleetClient, fault: str
) -> None:
    emulator.fault("/key/list-cars", **{fault: True})
    assert client.list_vehicle_columns().total == 200
    assert emulator.calls(LIST) == 2


def test_dropped_connections_end_in_upstream_unavailable_after_max_attempts(
    emulator: Emulator, make_client: MakeClient, clock: StoppedClock
) -> None:
    client = make_client(waits_on=clock, max_attempts=3)
    emulator.fault("/key/list-cars", drop=True, count=10)
    with pytest.raises(UpstreamUnavailable) as raised:
        client.list_vehicle_columns()
    assert raised.value.status is None
    assert raised.value.sent is True
    assert len(clock.waits) == 2  # a backoff before each retry
    assert emulator.calls(LIST) == 3


def test_max_attempts_caps_the_retries(
    emulator: Emulator, make_client: MakeClient, clock: StoppedClock
) -> None:
    client = make_client(waits_on=clock, max_attempts=2)
    emulator.fault("/key/list-cars", drop=True, count=10)
    with pytest.raises(UpstreamUnavailable):
        client.list_vehicle_columns()
    assert emulator.calls(LIST) == 2


def test_answers_cut_off_mid_way_end_in_upstream_unavailable(
    emulator: Emulator, make_client: MakeClient, clock: StoppedClock
) -> None:
    client = make_client(waits_on=clock, max_attempts=2)
    emulator.fault("/key/list-cars", cut=True, count=10)
    with pytest.raises(
        UpstreamUnavailable, match="the connection was closed before a complete answer"
    ) as raised:
        client.list_vehicle_columns()
    assert raised.value.sent is True
    assert emulator.calls(LIST) == 2


def test_an_answer_cut_off_mid_way_on_a_post_is_not_retried(
    emulator: Emulator, client: FleetClient
) -> None:
    emulator.fault("/key/generator", cut=True)
    with pytest.raises(UpstreamUnavailable, match="closed before a complete answer"):
        client.create_access_key(email=DEMO_USER, password=DEMO_PASSWORD)
    assert emulator.calls("POST /key/generator") == 1


def test_a_dropped_connection_on_a_post_is_not_retried(
    emulator: Emulator, client: FleetClient
) -> None:
    emulator.fault("/key/generator", drop=True)
    with pytest.raises(UpstreamUnavailable):
        client.create_access_key(email=DEMO_USER, password=DEMO_PASSWORD)
    assert emulator.calls("POST /key/generator") == 1


def test_an_answer_slower_than_the_read_timeout_is_upstream_unavailable(
    emulator: Emulator, make_client: MakeClient, clock: StoppedClock
) -> None:
    client = make_client(waits_on=clock, read_timeout=0.3)
    # Ten times the read timeout: however busy the machine, the answer comes too late.
    emulator.fault("/key/list-cars", delay=3.0, count=3)
    with pytest.raises(UpstreamUnavailable, match=r"no answer within 0\.3 s"):
        client.list_vehicle_columns(retry_budget=0)
    assert clock.waits == []  # given up at the read timeout, not waited out
    assert wait_for_calls(emulator, LIST, 1) == 1
    assert emulator.calls(LIST) == 1


def test_a_slow_answer_is_retried_while_the_budget_lasts(
    emulator: Emulator, make_client: MakeClient, clock: StoppedClock
) -> None:
    # The retry must answer within the read timeout: a second, however busy the machine.
    client = make_client(waits_on=clock, read_timeout=1.0)
    emulator.fault("/key/list-cars", delay=10.0)  # ten times the read timeout
    assert client.list_vehicle_columns().total == 200
    assert len(clock.waits) == 1  # a backoff, then the retry that got the answer
    assert wait_for_calls(emulator, LIST, 2) == 2


def test_a_per_call_timeout_overrides_the_read_timeout(
    emulator: Emulator, make_client: MakeClient
) -> None:
    client = make_client(read_timeout=0.2)
    emulator.fault("/key/list-cars", delay=0.5)
    result = client._call(  # a timeout ten times the delay: the answer always fits
        "GET", LIST_VEHICLES, vehicle_columns_from_json, timeout=5, retry_budget=0
    )
    assert result.total == 200
    assert client.read_timeout == 0.2


def test_a_refused_connection_is_upstream_unavailable(
    closed_port_url: str, make_client: MakeClient, clock: StoppedClock, log_records: Recorder
) -> None:
    client = make_client(waits_on=clock, base_url=closed_port_url, max_attempts=3)
    with pytest.raises(UpstreamUnavailable, match="could not connect") as raised:
        client.list_vehicle_columns()
    # urllib3's backoff between reconnections, asked of the client's sleep, within its budget.
    assert 0 < sum(clock.waits) <= client.retry_budget
    assert raised.value.sent is False
    retries = [
        r for r in log_records.of("fleet.api") if "could not connect, retrying" in r.getMessage()
    ]
    assert len(retries) == 2


def test_a_refused_connection_is_retried_for_a_post_too(
    closed_port_url: str, make_client: MakeClient, clock: StoppedClock, log_records: Recorder
) -> None:
    client = make_client(waits_on=clock, base_url=closed_port_url)
    with pytest.raises(UpstreamUnavailable):
        client.create_access_key(email=DEMO_USER, password=DEMO_PASSWORD)
    retries = [
        r for r in log_records.of("fleet.api") if "could not connect, retrying" in r.getMessage()
    ]
    assert len(retries) == 2


def test_a_refused_connection_with_no_budget_is_not_retried(
    closed_port_url: str, make_client: MakeClient, clock: StoppedClock, log_records: Recorder
) -> None:
    client = make_client(waits_on=clock, base_url=closed_port_url)
    with pytest.raises(UpstreamUnavailable):
        client.list_vehicle_columns(retry_budget=0)
    assert clock.waits == []
    assert not [r for r in log_records.of("fleet.api") if "retrying" in r.getMessage()]
