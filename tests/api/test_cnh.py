"""The client's CNH lookups against the emulator: shapes, 504, 429, batches, their own timeout.

Lookups are charged (spec 4.5): a lookup sent that got no answer is never sent
again by the client, whatever its budget; it says it was sent (`sent=True`).
"""

from __future__ import annotations

import json
from datetime import date

import pytest

from fleet.api.client import CNH_BATCH, CNH_LOOKUP, CNH_READ_TIMEOUT, FleetClient
from fleet.api.errors import (
    GatewayTimeout,
    InvalidResponse,
    NotFound,
    RateLimited,
    UpstreamUnavailable,
)
from fleet.api.licences import CnhLookupResult
from tests.api.conftest import MakeClient, StoppedClock, wait_for_calls
from tests.conftest import Emulator

TIMEOUT_CPF, NO_LICENCE_CPF = "50450450406", "00000040495"
CPF, OTHER_CPF = "52998224725", "11144477735"
LOOKUP_CALLS, BATCH_CALLS = f"POST {CNH_LOOKUP}", f"POST {CNH_BATCH}"
LIST_CALLS = "GET /key/list-cars"


def test_a_lookup_returns_the_licence_known_members_typed_and_the_others_kept(
    client: FleetClient, emulator: Emulator
) -> None:
    result = client.lookup_cnh(CPF)

    assert result.cpf == CPF
    assert result.error is None
    licence = result.licence
    assert licence is not None
    assert all([licence.name, licence.number, licence.category, licence.situation])
    assert isinstance(licence.expires_on, date)
    assert isinstance(licence.first_licence_on, date)
    assert isinstance(licence.points, int)
    assert isinstance(licence.issuing_state, str)
    assert isinstance(licence.remarks, tuple)
    # Members the portal does not know are kept, whatever they are (minimal mode adds some).
    assert {"issuingState", "remarks"}.isdisjoint(licence.extra)
    assert emulator.minimal or licence.extra == {}
    assert "traceId" not in result.members
    sent = emulator.requests()[-1]
    assert sent["headers"]["Content-Type"] == "application/json"
    assert json.loads(sent["body"]) == {"cpf": CPF}


def test_a_known_member_of_an_unexpected_type_is_listed_not_dropped(
    client: FleetClient, emulator: Emulator
) -> None:
    emulator.fault(
        CNH_LOOKUP,
        body={"cpf": CPF, "status": "ok", "name": "Ana", "points": "três", "medical": "2027"},
    )

    licence = client.lookup_cnh(CPF).licence

    assert licence is not None
    assert licence.name == "Ana"
    assert licence.points is None
    assert licence.extra == {"points": "três", "medical": "2027"}


def test_the_timeout_cpf_raises_gateway_timeout_with_retry_after_after_one_call(
    make_client: MakeClient, emulator: Emulator
) -> None:
    # A budget that could wait out the Retry-After: the lookup still does not retry itself.
    client = make_client(retry_budget=60.0)

    with pytest.raises(GatewayTimeout) as raised:
        client.lookup_cnh(TIMEOUT_CPF)

    error = raised.value
    assert error.status == 504
    assert error.retry_after == 30
    assert error.code == "urn:fleet-api-v2:error:gateway-timeout"
    assert error.trace_id
    assert emulator.calls(LOOKUP_CALLS) == 1


def test_a_lookup_timeout_does_not_pause_the_route_for_other_lookups(
    client: FleetClient, emulator: Emulator
) -> None:
    with pytest.raises(GatewayTimeout):
        client.lookup_cnh(TIMEOUT_CPF)

    assert client.lookup_cnh(CPF).licence is not None
    assert emulator.calls(LOOKUP_CALLS) == 2


def test_a_429_on_a_lookup_is_raised_at_once_and_pauses_the_route(
    make_client: MakeClient, emulator: Emulator
) -> None:
    client = make_client(retry_budget=60.0)
    emulator.fault(CNH_LOOKUP, status=429, retry_after=1)

    with pytest.raises(RateLimited):
        client.lookup_cnh(CPF)
    with pytest.raises(RateLimited) as paused:
        client.lookup_cnh(OTHER_CPF)

    assert paused.value.status is None  # refused here, not by the API
    assert emulator.calls(LOOKUP_CALLS) == 1


def look_up(client: FleetClient, route: str, **options: float) -> CnhLookupResult:
    """The CPF's result, by an individual lookup or in a batch of one, as `route` says."""
    if route == CNH_LOOKUP:
        return client.lookup_cnh(CPF, **options)
    (item,) = client.lookup_cnh_batch([CPF], **options).items
    return item


@pytest.mark.parametrize("route", [CNH_LOOKUP, CNH_BATCH])
def test_a_429_on_a_lookup_carries_its_retry_after(
    client: FleetClient, emulator: Emulator, route: str
) -> None:
    emulator.fault(route, status=429, retry_after=17)

    with pytest.raises(RateLimited) as raised:
        look_up(client, route)

    assert raised.value.status == 429
    assert raised.value.retry_after == 17
    assert emulator.calls(f"POST {route}") == 1


@pytest.mark.parametrize("route", [CNH_LOOKUP, CNH_BATCH])
def test_a_429_on_a_lookup_is_waited_out_when_the_call_has_the_budget_for_it(
    make_client: MakeClient, clock: StoppedClock, emulator: Emulator, route: str
) -> None:
    client = make_client(waits_on=clock)
    emulator.fault(route, status=429, retry_after=1)

    assert look_up(client, route, retry_budget=5).licence is not None

    assert clock.waits == [pytest.approx(1)]  # its Retry-After, waited
    assert emulator.calls(f"POST {route}") == 2  # and retried once


@pytest.mark.parametrize("route", [CNH_LOOKUP, CNH_BATCH])
@pytest.mark.parametrize("fault", [{"drop": True}, {"cut": True}], ids=["dropped", "cut"])
def test_a_lookup_that_got_no_answer_is_not_sent_again_and_says_it_was_sent(
    make_client: MakeClient, emulator: Emulator, route: str, fault: dict[str, bool]
) -> None:
    client = make_client(retry_budget=60.0)
    emulator.fault(route, **fault, count=3)

    with pytest.raises(UpstreamUnavailable) as raised:
        look_up(client, route, retry_budget=60.0)

    assert raised.value.sent is True
    assert raised.value.status is None
    assert emulator.calls(f"POST {route}") == 1


@pytest.mark.parametrize("route", [CNH_LOOKUP, CNH_BATCH])
def test_an_unreadable_success_answer_is_not_sent_again_and_keeps_its_status(
    make_client: MakeClient, emulator: Emulator, route: str
) -> None:
    # The service relies on the 2xx status to tell "done, probably charged" from a refusal.
    client = make_client(retry_budget=60.0)
    emulator.fault(route, malformed=True, count=3)

    with pytest.raises(InvalidResponse) as raised:
        look_up(client, route, retry_budget=60.0)

    assert raised.value.status == 200
    assert emulator.calls(f"POST {route}") == 1


def test_a_lookup_that_cannot_connect_says_nothing_was_sent(
    make_client: MakeClient, closed_port_url: str
) -> None:
    client = make_client(base_url=closed_port_url)

    with pytest.raises(UpstreamUnavailable, match="could not connect") as raised:
        client.lookup_cnh(CPF)

    assert raised.value.sent is False
    assert raised.value.status is None


def test_a_cpf_without_a_licence_is_not_found(client: FleetClient) -> None:
    with pytest.raises(NotFound) as raised:
        client.lookup_cnh(NO_LICENCE_CPF)

    assert raised.value.status == 404


def test_a_batch_marks_the_timeout_item_error_and_the_others_are_fine(
    client: FleetClient, emulator: Emulator
) -> None:
    result = client.lookup_cnh_batch([CPF, TIMEOUT_CPF, OTHER_CPF])

    assert [item.cpf for item in result.items] == [CPF, TIMEOUT_CPF, OTHER_CPF]
    ok, timed_out, other = result.items
    assert (ok.error, other.error) == (None, None)
    assert None not in (ok.licence, other.licence)
    assert timed_out.licence is None
    assert timed_out.error is not None
    assert timed_out.error.code == "gateway-timeout"
    assert timed_out.error.message
    assert emulator.calls(BATCH_CALLS) == 1
    assert json.loads(emulator.requests()[-1]["body"]) == {"cpfs": [CPF, TIMEOUT_CPF, OTHER_CPF]}


def test_a_batch_answer_that_is_not_a_list_of_items_is_an_invalid_response(
    client: FleetClient, emulator: Emulator
) -> None:
    emulator.fault(CNH_BATCH, body={"items": {"cpf": CPF}})

    with pytest.raises(InvalidResponse) as raised:
        client.lookup_cnh_batch([CPF])

    assert CPF not in str(raised.value)


def test_the_lookups_wait_70_s_by_default_and_the_other_calls_their_own_timeout() -> None:
    client = FleetClient(
        base_url="http://127.0.0.1:1", access_token="demo-access-token", secret_key="k" * 16
    )

    assert CNH_READ_TIMEOUT == 70.0
    assert client.cnh_read_timeout == 70.0
    assert client.read_timeout == 10.0


def test_the_portals_configured_client_waits_70_s_for_the_lookups(settings) -> None:
    from fleet.services.connection import fleet_client

    assert fleet_client().cnh_read_timeout == 70.0
    assert fleet_client().read_timeout == settings.FLEET_READ_TIMEOUT


def test_only_the_lookups_use_the_lookup_timeout(
    make_client: MakeClient, emulator: Emulator
) -> None:
    # Shortened so that the test takes seconds: each route answers after 1 s, ten
    # times the read timeout of every call (0.1 s) and a tenth of the lookups' (10 s).
    client = make_client(read_timeout=0.1, cnh_read_timeout=10, retry_budget=0)
    for route in ("/key/list-cars", CNH_LOOKUP, CNH_BATCH):
        emulator.fault(route, delay=1)

    with pytest.raises(UpstreamUnavailable) as listing:
        client.list_vehicle_columns()
    looked_up = client.lookup_cnh(CPF)
    batch = client.lookup_cnh_batch([CPF])

    assert "no answer within 0.1 s" in str(listing.value)
    assert looked_up.licence is not None
    assert batch.items[0].licence is not None


def test_a_lookup_that_outlasts_its_timeout_says_so(
    make_client: MakeClient, clock: StoppedClock, emulator: Emulator
) -> None:
    client = make_client(waits_on=clock, read_timeout=5, cnh_read_timeout=0.3)
    emulator.fault(CNH_LOOKUP, delay=3)  # ten times its timeout: always too late

    with pytest.raises(UpstreamUnavailable) as raised:
        client.lookup_cnh(CPF)

    assert clock.waits == []  # given up at its own timeout, not waited out
    assert "no answer within 0.3 s" in str(raised.value)
    assert (raised.value.sent, raised.value.status) == (True, None)  # it may have been done
    assert wait_for_calls(emulator, LOOKUP_CALLS, 1) == 1  # a POST is not sent twice


def test_the_lookup_paths_come_from_the_constructor(
    make_client: MakeClient, emulator: Emulator
) -> None:
    client = make_client(cnh_lookup_path="/v3/licences/query", cnh_batch_path="/v3/licences/many")

    with pytest.raises(NotFound):
        client.lookup_cnh(CPF)
    with pytest.raises(NotFound):
        client.lookup_cnh_batch([CPF])

    assert [r["path"] for r in emulator.requests()] == ["/v3/licences/query", "/v3/licences/many"]


@pytest.mark.parametrize("path", ["v2/cnh", "/v2/cnh?x=1", "/v2/{cpf}", "/v2/cnh lookup", ""])
def test_a_lookup_path_that_cannot_be_a_route_is_refused(
    make_client: MakeClient, path: str
) -> None:
    with pytest.raises(ValueError, match="API path"):
        make_client(cnh_lookup_path=path)


@pytest.mark.parametrize("cpf", ["529.982.247-25", "5299822472", "abcdefghijk", ""])
def test_a_cpf_not_in_eleven_digits_is_refused_before_anything_is_sent(
    client: FleetClient, emulator: Emulator, cpf: str
) -> None:
    with pytest.raises(ValueError, match="eleven digits"):
        client.lookup_cnh(cpf)
    with pytest.raises(ValueError, match="eleven digits"):
        client.lookup_cnh_batch([CPF, cpf])

    assert emulator.requests() == []
