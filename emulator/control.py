"""The control surface under `/_emulator/`: for tests and demos, no auth.

It resets the emulator, arms faults, moves the clock, reads the traffic,
sets the rate limit, creates e-CRLV requests, sets how the CNH lookups'
timeout CPF behaves, switches minimal mode, switches hand-overs and lists
them, and sends webhooks. Its own answers are the same in minimal mode:
tests read them. Answers are JSON; a bad body gets 400 with
`{"error": "..."}` saying what to fix.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

from emulator import api, handovers, webhook_sender, webhooks
from emulator.clock import isoformat, parse_isoformat
from emulator.crlv import OUTCOMES, Status
from emulator.faults import parse_fault
from emulator.messages import Call, Request, Response, json_response, parse_json_object
from emulator.routing import Route, Router

if TYPE_CHECKING:
    from emulator.state import Emulator

# `GET /_emulator/handovers` answers at most this many, over at most this long.
MAX_HANDOVERS_LISTED = 100_000
LONGEST_HANDOVER_WINDOW = timedelta(days=400)


class ControlError(Exception):
    """A control call that cannot be done; the message says why."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


def reset(emulator: Emulator, call: Call) -> Response:
    emulator.reset()
    return json_response(200, {"reset": True})


def add_fault(emulator: Emulator, call: Call) -> Response:
    try:
        fault, count = parse_fault(_body(call), api.ROUTES.templates)
    except ValueError as error:
        raise ControlError(str(error)) from None
    return json_response(200, {"id": emulator.faults.add(fault, count)})


def list_faults(emulator: Emulator, call: Call) -> Response:
    return json_response(200, emulator.faults.pending())


def clear_faults(emulator: Emulator, call: Call) -> Response:
    return json_response(200, {"cleared": emulator.faults.clear()})


def read_clock(emulator: Emulator, call: Call) -> Response:
    return json_response(
        200, {"now": isoformat(emulator.clock.now()), "offset": emulator.clock.offset}
    )


def move_clock(emulator: Emulator, call: Call) -> Response:
    body = _body(call)
    if "advance" in body:
        seconds = body["advance"]
        if type(seconds) not in (int, float):
            raise ControlError("advance must be a number of seconds")
        emulator.clock.advance(seconds)
    elif "set" in body:
        try:
            emulator.clock.set(parse_isoformat(str(body["set"])))
        except ValueError:
            raise ControlError("set must be an ISO 8601 moment") from None
    else:
        raise ControlError('send {"advance": seconds} or {"set": "<ISO 8601>"}')
    return read_clock(emulator, call)


def read_stats(emulator: Emulator, call: Call) -> Response:
    return json_response(200, {"calls": emulator.traffic.calls()})


def clear_stats(emulator: Emulator, call: Call) -> Response:
    emulator.traffic.clear()
    return json_response(200, {"calls": {}})


def read_answers(emulator: Emulator, call: Call) -> Response:
    """`?route=GET /key/list-cars`: when each call of that route was answered, and how."""
    route = (parse_qs(call.request.query).get("route") or [""])[0]
    if not route:
        raise ControlError("name the route: ?route=GET /key/list-cars")
    answers = emulator.traffic.answers(route)
    return json_response(200, [{"at": at, "status": status} for at, status in answers])


def recent_requests(emulator: Emulator, call: Call) -> Response:
    return json_response(200, emulator.traffic.recent())


def read_rate_limit(emulator: Emulator, call: Call) -> Response:
    return json_response(200, emulator.rate_limiter.config)


def set_rate_limit(emulator: Emulator, call: Call) -> Response:
    body = _body(call)
    config = emulator.rate_limiter.config
    limit, window = body.get("limit", config["limit"]), body.get("window", config["window"])
    if type(limit) is not int or limit < 0:
        raise ControlError("limit must be a whole number of calls, 0 for no limit")
    if type(window) not in (int, float) or window <= 0:
        raise ControlError("window must be a positive number of seconds")
    emulator.rate_limiter.configure(limit=limit, window=float(window))
    return read_rate_limit(emulator, call)


def create_crlv_request(emulator: Emulator, call: Call) -> Response:
    body = _body(call)
    vehicle = emulator.fleet.find(str(body.get("plate", "")))
    if vehicle is None:
        raise ControlError("plate must be the plate of a vehicle of the fleet", status=404)
    outcome = body.get("outcome", Status.COMPLETED)
    if outcome not in OUTCOMES:
        raise ControlError(f"outcome must be one of {[str(o) for o in OUTCOMES]}")
    schedule = {
        name: body[name] for name in ("pending_seconds", "in_progress_seconds") if name in body
    }
    if any(type(seconds) not in (int, float) or seconds < 0 for seconds in schedule.values()):
        raise ControlError("pending_seconds and in_progress_seconds must be seconds, at least 0")
    now = emulator.clock.now()
    request = emulator.crlv.create(vehicle, now=now, outcome=Status(outcome), **schedule)
    return json_response(
        200, emulator.crlv.describe(request, now=now, base_url=call.request.base_url)
    )


def read_cnh(emulator: Emulator, call: Call) -> Response:
    return json_response(200, emulator.cnh.config)


def configure_cnh(emulator: Emulator, call: Call) -> Response:
    body = _body(call)
    unknown = set(body) - {"timeout_wait", "retry_after", "recover_after"}
    if unknown:
        raise ControlError(f"unknown fields: {sorted(unknown)}")
    wait = body.get("timeout_wait", 0)
    if type(wait) not in (int, float) or not 0 <= wait <= 600:
        raise ControlError("timeout_wait must be a number of seconds, 0 to 600")
    retry_after = body.get("retry_after", 0)
    if type(retry_after) is not int or retry_after < 0:
        raise ControlError("retry_after must be a whole number of seconds, at least 0")
    recover_after = body.get("recover_after")
    if recover_after is not None and (type(recover_after) is not int or recover_after < 0):
        raise ControlError("recover_after must be a whole number of timeouts, or null for never")
    emulator.cnh.configure(**body)
    return read_cnh(emulator, call)


def read_mode(emulator: Emulator, call: Call) -> Response:
    return json_response(200, emulator.mode.as_json())


def set_mode(emulator: Emulator, call: Call) -> Response:
    body = _body(call)
    unknown = set(body) - {"minimal", "spelling_seed"}
    if unknown:
        raise ControlError(f"unknown fields: {sorted(unknown)}")
    minimal = body.get("minimal")
    if type(minimal) is not bool:
        raise ControlError("minimal must be true or false")
    seed = body.get("spelling_seed")
    if "spelling_seed" in body and type(seed) is not int:
        raise ControlError("spelling_seed must be a whole number (left out: the current one)")
    emulator.mode.set(minimal=minimal, spelling_seed=seed)
    return read_mode(emulator, call)


def switch_handovers(emulator: Emulator, call: Call) -> Response:
    """`{"enabled": true}`: from now on, list-cars shows the drivers of the clock's hour."""
    body = _body(call)
    unknown = set(body) - {"enabled"}
    if unknown:
        raise ControlError(f"unknown fields: {sorted(unknown)}")
    enabled = body.get("enabled")
    if type(enabled) is not bool:
        raise ControlError("enabled must be true or false")
    emulator.handovers = enabled
    return json_response(200, {"enabled": enabled})


def list_handovers(emulator: Emulator, call: Call) -> Response:
    """`?since=ISO&until=ISO[&plate=P]`: the schedule's hand-overs with since < at <= until,
    by time then plate, whether the answers show them or not."""
    query = parse_qs(call.request.query)
    since, until = _query_moment(query, "since"), _query_moment(query, "until")
    if until <= since:
        raise ControlError("until must be later than since")
    if until - since > LONGEST_HANDOVER_WINDOW:
        raise ControlError(
            f"since to until is longer than {LONGEST_HANDOVER_WINDOW.days} days:"
            " ask for a shorter window"
        )
    fleet, indexes = emulator.fleet, None
    if "plate" in query:
        vehicle = fleet.find(query["plate"][0])
        if vehicle is None:
            raise ControlError("plate must be the plate of a vehicle of the fleet", status=404)
        indexes = [fleet.index(vehicle)]
    first, last = handovers.hour_of(since) + 1, handovers.hour_of(until)
    count = fleet.schedule.count(first, last, indexes)
    if count > MAX_HANDOVERS_LISTED:
        raise ControlError(
            f"{count} hand-overs from since to until, more than {MAX_HANDOVERS_LISTED}"
            " in one answer: ask for a narrower window or for one plate"
        )
    listed = sorted(
        (handover.hour, fleet.vehicles[handover.vehicle].car_plate, handover)
        for handover in fleet.schedule.handovers(first, last, indexes)
    )
    return json_response(
        200,
        {
            "enabled": emulator.handovers,
            "handovers": [
                {
                    "plate": plate,
                    "at": isoformat(handovers.start_of(hour)),
                    "from": handover.previous,
                    "to": handover.driver,
                }
                for hour, plate, handover in listed
            ],
        },
    )


def _query_moment(query: dict[str, list[str]], name: str) -> datetime:
    if name not in query:
        raise ControlError("give since and until: ?since=<ISO 8601>&until=<ISO 8601>")
    try:
        return parse_isoformat(query[name][0])
    except ValueError:
        raise ControlError(
            f"{name} must be an ISO 8601 moment such as 2026-11-05T13:00:00Z"
            " (in a query string, write a + of an offset as %2B)"
        ) from None


def list_crlv_requests(emulator: Emulator, call: Call) -> Response:
    now = emulator.clock.now()
    return json_response(
        200,
        [
            {
                "requestId": request.request_id,
                "carPlate": request.plate,
                "status": str(request.status_at(now)),
            }
            for request in emulator.crlv.all()
        ],
    )


def send_webhooks(emulator: Emulator, call: Call) -> Response:
    """Send webhooks to `url` now and answer what came back (synchronous: keep counts small)."""
    body = _body(call)
    url = body.get("url")
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise ControlError("url must be an absolute http(s) URL")
    events = body.get("events")
    try:
        if events is not None:
            if not isinstance(events, list) or not events:
                raise ControlError("events must be a non-empty list of payloads")
            batch = webhooks.events_batch(events)
        else:
            within = None
            if "within_hours" in body:
                within = _number(body, "within_hours") * 3600
            batch = webhooks.generate(
                _whole(body, "count", 10),
                seed=_whole(body, "seed", 1),
                duplicates=_number(body, "duplicates"),
                malformed=_number(body, "malformed"),
                shuffle=body.get("shuffle") is True,
                extra_keys=body.get("extra_keys") is True,
                now=emulator.clock.now(),
                plates=[vehicle.car_plate for vehicle in emulator.fleet.vehicles],
                within=within,
                schedule=emulator.fleet.schedule if emulator.handovers else None,
            )
        # Given payloads go one after the other, in their order: a test may depend on it.
        concurrency = _whole(body, "concurrency", 1 if events is not None else 4)
        bodies = [delivery.body for delivery in batch.deliveries]
        report = webhook_sender.send(url, bodies, concurrency=concurrency)
    except ValueError as error:
        raise ControlError(str(error)) from None
    return json_response(
        200, batch.counts() | report.as_json() | {"records": list(batch.records.values())}
    )


def _whole(body: dict[str, Any], name: str, default: int) -> int:
    value = body.get(name, default)
    if type(value) is not int:
        raise ControlError(f"{name} must be a whole number")
    return value


def _number(body: dict[str, Any], name: str) -> float:
    value = body.get(name, 0)
    if type(value) not in (int, float):
        raise ControlError(f"{name} must be a number")
    return float(value)


ROUTES = Router(
    [
        Route("POST", "/_emulator/reset", reset),
        Route("GET", "/_emulator/faults", list_faults),
        Route("POST", "/_emulator/faults", add_fault),
        Route("DELETE", "/_emulator/faults", clear_faults),
        Route("GET", "/_emulator/clock", read_clock),
        Route("POST", "/_emulator/clock", move_clock),
        Route("GET", "/_emulator/stats", read_stats),
        Route("DELETE", "/_emulator/stats", clear_stats),
        Route("GET", "/_emulator/requests", recent_requests),
        Route("GET", "/_emulator/answers", read_answers),
        Route("GET", "/_emulator/rate-limit", read_rate_limit),
        Route("POST", "/_emulator/rate-limit", set_rate_limit),
        Route("GET", "/_emulator/crlv/requests", list_crlv_requests),
        Route("POST", "/_emulator/crlv/requests", create_crlv_request),
        Route("GET", "/_emulator/cnh", read_cnh),
        Route("POST", "/_emulator/cnh", configure_cnh),
        Route("GET", "/_emulator/mode", read_mode),
        Route("POST", "/_emulator/mode", set_mode),
        Route("GET", "/_emulator/handovers", list_handovers),
        Route("POST", "/_emulator/handovers", switch_handovers),
        Route("POST", "/_emulator/webhooks", send_webhooks),
    ]
)


def handle(emulator: Emulator, request: Request) -> Response:
    match = ROUTES.resolve(request.method, request.path)
    if match is None:
        return json_response(404, {"error": f"no control route {request.path}"})
    if match.handler is None:
        return json_response(
            405,
            {"error": f"{request.path} takes {', '.join(match.allowed)}"},
            headers=[("Allow", ", ".join(match.allowed))],
        )
    try:
        return match.handler(emulator, Call(request, match.params))
    except ControlError as error:
        return json_response(error.status, {"error": str(error)})


def _body(call: Call) -> dict[str, Any]:
    try:
        return parse_json_object(call.request.body)
    except ValueError as error:
        raise ControlError(str(error)) from None
