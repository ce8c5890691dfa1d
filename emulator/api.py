"""The API routes (spec section 4) and the checks every call goes through.

Order for each call: an injected fault, if one is armed, answers first (as
a failing gateway would); then the rate limit is counted (section 8: all
routes); then the headers are checked (section 5); then the route answers.

In minimal mode (see minimal.py) the routes answer with what the spec
promises only, and successes carry no trace id; errors do not change.
"""

from __future__ import annotations

import time
import traceback
import uuid
from typing import TYPE_CHECKING

from emulator import auth, cnh, indications, minimal
from emulator.errors import (
    BAD_REQUEST,
    GATEWAY_TIMEOUT,
    INDICATION_REFUSED,
    INTERNAL_ERROR,
    METHOD_NOT_ALLOWED,
    NOT_FOUND,
    TOO_MANY_REQUESTS,
    WRONG_LOGIN,
    ApiError,
    failure_for_status,
    render,
)
from emulator.faults import Fault
from emulator.messages import JSON, Call, Request, Response, json_response, parse_json_object
from emulator.routing import Match, Route, Router

if TYPE_CHECKING:
    from emulator.state import Emulator


def list_cars(emulator: Emulator, call: Call) -> Response:
    """GET /key/list-cars (4.1): the whole fleet, serialised once at start-up; when
    vehicles change hands, with the drivers of the clock's hour (made once per hour)."""
    if emulator.handovers:
        body = emulator.fleet.list_cars_body_at(emulator.clock.now(), call.minimal)
        return Response(200, body, JSON)
    if call.minimal is not None:
        return Response(200, emulator.fleet.minimal_list_cars_body(call.minimal), JSON)
    return Response(200, emulator.fleet.list_cars_body, JSON)


def _json_body(call: Call) -> dict[str, object]:
    """The body of a POST route: a JSON object sent as `application/json`."""
    content_type = (call.request.header("Content-Type") or "").split(";")[0].strip().lower()
    if content_type != "application/json":
        raise ApiError(BAD_REQUEST, "Envie o corpo como JSON (Content-Type: application/json).")
    try:
        return parse_json_object(call.request.body)
    except ValueError:
        raise ApiError(BAD_REQUEST, "O corpo da requisição não é um objeto JSON válido.") from None


def generate_access_key(emulator: Emulator, call: Call) -> Response:
    """POST /key/generator (4.2): a single-use login key for a web-app user."""
    body = _json_body(call)
    email, password = body.get("email"), body.get("password")
    if not isinstance(email, str) or not email or not isinstance(password, str) or not password:
        raise ApiError(BAD_REQUEST, "Os campos email e password são obrigatórios.")
    user = emulator.webapp.check_login(email, password)
    if user is None:
        raise ApiError(WRONG_LOGIN)
    key = emulator.webapp.mint_access_key(user, emulator.clock.now())
    if call.minimal is not None:
        return json_response(200, minimal.access_key(key, call.minimal))
    return json_response(200, {"accessKey": key, "error": False, "code": "fbk_200"})


def crlv_request_status(emulator: Emulator, call: Call) -> Response:
    """GET /v2/crlv/requests/{requestId} (4.3)."""
    request = emulator.crlv.get(call.params["requestId"])
    if request is None:
        raise ApiError(NOT_FOUND, "Solicitação de CRLV-e não encontrada.")
    described = emulator.crlv.describe(
        request, now=emulator.clock.now(), base_url=call.request.base_url
    )
    if call.minimal is not None:
        return _v2_success(call, minimal.crlv_request(described, call.minimal))
    return _v2_success(call, described)


def crlv_vehicle_view(emulator: Emulator, call: Call) -> Response:
    """GET /v2/crlv/vehicles/{carPlate} (4.4): latest issued and in progress, when they exist."""
    vehicle = emulator.fleet.find(call.params["carPlate"])
    if vehicle is None:
        raise ApiError(NOT_FOUND, "Veículo não encontrado na frota.")
    now, base_url = emulator.clock.now(), call.request.base_url
    found = {
        "latest": emulator.crlv.latest_issued(vehicle.car_plate, now),
        "inProgress": emulator.crlv.in_progress(vehicle.car_plate, now),
    }
    described = {
        name: emulator.crlv.describe(request, now=now, base_url=base_url)
        for name, request in found.items()
        if request is not None
    }
    if call.minimal is not None:
        view = minimal.vehicle_view(
            described.get("latest"), described.get("inProgress"), call.minimal
        )
        return _v2_success(call, view)
    return _v2_success(call, {"carPlate": vehicle.car_plate, **described})


_TIMEOUT_DETAIL = "O serviço de consulta de CNH não respondeu a tempo; a consulta não foi cobrada."
_TIMEOUT_ITEM = "O serviço de consulta de CNH não respondeu a tempo."


def cnh_lookup(emulator: Emulator, call: Call) -> Response:
    """POST /v2/cnh/lookup (4.5): one CPF's licence; 504 with Retry-After on timeout (7.3)."""
    cpf = _json_body(call).get("cpf")
    if not isinstance(cpf, str) or not cnh.is_cpf(cpf):
        raise ApiError(BAD_REQUEST, "Envie um CPF válido no campo cpf.")
    cpf = cnh.normalize(cpf)
    if emulator.cnh.times_out(cpf):
        time.sleep(emulator.cnh.timeout_wait)
        return render(
            GATEWAY_TIMEOUT, call, detail=_TIMEOUT_DETAIL, retry_after=emulator.cnh.retry_after
        )
    if cpf == cnh.NO_LICENCE_CPF:
        raise ApiError(NOT_FOUND, "Nenhuma CNH encontrada para este CPF.")
    licence = emulator.cnh.licence(cpf, emulator.clock.now().date())
    if call.minimal is not None:
        return _v2_success(call, minimal.cnh_item(licence, call.minimal))
    return _v2_success(call, licence)


def cnh_lookup_batch(emulator: Emulator, call: Call) -> Response:
    """POST /v2/cnh/lookup/batch (4.5): one entry per CPF; a failed one has `status: error`.

    The items are looked up together: a timeout costs the whole call one wait,
    and the call itself still answers 200 (7.3).
    """
    cpfs = _json_body(call).get("cpfs")
    if (
        not isinstance(cpfs, list)
        or not 1 <= len(cpfs) <= cnh.BATCH_LIMIT
        or not all(isinstance(cpf, str) for cpf in cpfs)
    ):
        raise ApiError(
            BAD_REQUEST, f"Envie em cpfs uma lista de 1 a {cnh.BATCH_LIMIT} CPFs (texto)."
        )
    today, waited, items = emulator.clock.now().date(), False, []
    for sent in cpfs:
        cpf = cnh.normalize(sent)
        if not cnh.is_cpf(cpf):
            items.append(_item_error(sent, BAD_REQUEST.name, "CPF inválido."))
        elif emulator.cnh.times_out(cpf):
            if not waited:
                time.sleep(emulator.cnh.timeout_wait)
                waited = True
            items.append(_item_error(cpf, GATEWAY_TIMEOUT.name, _TIMEOUT_ITEM))
        elif cpf == cnh.NO_LICENCE_CPF:
            items.append(_item_error(cpf, NOT_FOUND.name, "Nenhuma CNH encontrada para este CPF."))
        else:
            items.append(emulator.cnh.licence(cpf, today))
    if call.minimal is not None:
        return _v2_success(call, minimal.cnh_batch(items, call.minimal))
    return _v2_success(call, {"items": items})


def driver_indication(emulator: Emulator, call: Call) -> Response:
    """POST /v2/driver-indications (4.6 names it only: shapes assumed, indications.py).

    Minimal mode answers 404 `not-found`, as for any path the spec shows no shape of.
    """
    if call.minimal is not None:
        raise ApiError(NOT_FOUND)
    body = _json_body(call)
    try:
        answer = indications.received(
            body,
            plate_known=lambda plate: emulator.fleet.find(plate) is not None,
            today=emulator.clock.now().date(),
        )
    except indications.Invalid as error:
        raise ApiError(BAD_REQUEST, str(error)) from None
    except indications.Refused as error:
        raise ApiError(INDICATION_REFUSED, str(error)) from None
    return json_response(201, {**answer, "traceId": call.trace_id})


def _item_error(cpf: str, code: str, message: str) -> dict[str, object]:
    return {"cpf": cpf, "status": "error", "error": {"code": code, "message": message}}


ROUTES = Router(
    [
        Route("GET", "/key/list-cars", list_cars),
        Route("POST", "/key/generator", generate_access_key),
        Route("GET", "/v2/crlv/requests/{requestId}", crlv_request_status),
        Route("GET", "/v2/crlv/vehicles/{carPlate}", crlv_vehicle_view),
        Route("POST", "/v2/cnh/lookup", cnh_lookup),
        Route("POST", "/v2/cnh/lookup/batch", cnh_lookup_batch),
        Route("POST", "/v2/driver-indications", driver_indication),
    ]
)


def handle(emulator: Emulator, request: Request) -> Response:
    """Answer an API call, and record it for the control surface."""
    match = ROUTES.resolve(request.method, request.path)
    template = match.template if match else None
    call = Call(
        request,
        match.params if match else {},
        trace_id=uuid.uuid4().hex if request.is_v2 else None,
        minimal=emulator.mode.current(),
    )
    entry = emulator.traffic.arrive(request, template)
    fault = emulator.faults.take(template, request.method)
    if fault is not None and fault.delay:
        time.sleep(fault.delay)
    if fault is not None and fault.answers:
        response = _fault_response(fault, call)
    else:
        try:
            response = _answer(emulator, call, match)
        except Exception:
            traceback.print_exc()  # a bug of the emulator: show it, answer like the API would
            response = render(INTERNAL_ERROR, call)
    # Minimal mode: a success carries no trace id; an error keeps its (spec 7.2).
    if call.trace_id is not None and (call.minimal is None or response.status >= 400):
        response.headers.append(("X-Trace-Id", call.trace_id))
    if fault is not None and fault.cut:
        response.cut = True
    emulator.traffic.answered(entry, None if response.drop else response.status)
    return response


def _answer(emulator: Emulator, call: Call, match: Match | None) -> Response:
    request = call.request
    # Per access token: the Authorization header names it, even when malformed.
    retry_after = emulator.rate_limiter.hit(
        request.header("Authorization") or "", emulator.clock.now().timestamp()
    )
    if retry_after is not None:
        return render(TOO_MANY_REQUESTS, call, retry_after=retry_after)
    failure = auth.authenticate(request)
    if failure is not None:
        return render(failure, call)
    if match is None:
        return render(NOT_FOUND, call)
    if match.handler is None:
        response = render(METHOD_NOT_ALLOWED, call)
        response.headers.append(("Allow", ", ".join(match.allowed)))
        return response
    try:
        return match.handler(emulator, call)
    except ApiError as error:
        return render(error.failure, call, detail=error.detail)


def _fault_response(fault: Fault, call: Call) -> Response:
    headers = [] if fault.retry_after is None else [("Retry-After", str(fault.retry_after))]
    if fault.drop:
        return Response(0, drop=True)
    status = fault.status or 200
    if fault.malformed:
        # Declared as JSON, cut off mid-way: what a truncated upstream answer looks like.
        return Response(status, b'{"cars": {"data": [{"id": 1, "car_pl', JSON, headers)
    if fault.body is not None:
        return Response(status, fault.body, JSON, headers)
    return render(failure_for_status(status), call, retry_after=fault.retry_after)


def _v2_success(call: Call, payload: dict[str, object]) -> Response:
    if call.minimal is not None:
        return json_response(200, payload)
    return json_response(200, {**payload, "traceId": call.trace_id})
