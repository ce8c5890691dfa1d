"""`FleetClient`: every HTTP call the portal makes to the Fleet API.

It knows the API contract and HTTP only: the three headers and the signature
(spec 5), timeouts, the retry policy (`retries`), path-segment encoding (`paths`),
parsing answers into `resources` records and failures into `errors`. It
imports nothing from Django; it is configured by its constructor.
It stays one module: each route is a short method over the one way out
(`_call`), which a reader follows in one file.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Final, Self

import orjson
import requests

from fleet.api.cooldown import Cooldown, LocalCooldown
from fleet.api.credentials import credential_problems
from fleet.api.errors import FleetError, InvalidResponse, RateLimited, error_for_response
from fleet.api.indications import (
    DRIVER_INDICATIONS,
    INDICATION_ANSWER_MAX_BYTES,
    IndicationRequest,
    IndicationSent,
    indication_error,
    indication_sent_from_json,
)
from fleet.api.licences import (
    CnhBatchResult,
    CnhLookupResult,
    cnh_batch_from_json,
    cnh_lookup_from_json,
)
from fleet.api.paths import api_path, path_segment
from fleet.api.resources import (
    CrlvRequest,
    ShapeError,
    VehicleColumns,
    VehicleCrlv,
    access_key_from_json,
    crlv_request_from_json,
    vehicle_columns_from_bytes,
    vehicle_columns_from_json,
    vehicle_crlv_from_json,
)
from fleet.api.retries import CallBudget, retry_wait, spending
from fleet.api.transport import read_body, signed_session, upstream_unavailable
from portal.lib import metrics

logger = logging.getLogger("fleet.api")

LIST_VEHICLES: Final = "/key/list-cars"
CREATE_ACCESS_KEY: Final = "/key/generator"
CRLV_REQUEST: Final = "/v2/crlv/requests/{requestId}"
VEHICLE_CRLV: Final = "/v2/crlv/vehicles/{carPlate}"
# The spec does not show the CNH lookups' paths (4.5). These are the emulator's,
# the defaults of FLEET_CNH_LOOKUP_PATH and FLEET_CNH_BATCH_PATH; a deployment
# sets the vendor's documented ones.
CNH_LOOKUP: Final = "/v2/cnh/lookup"
CNH_BATCH: Final = "/v2/cnh/lookup/batch"
# The licensing service is waited for up to 60 s; clients wait 60 s plus a margin (spec 8).
CNH_READ_TIMEOUT: Final = 70.0
# An answer's body is read up to this size and for this long after its headers
# (FLEET_ANSWER_MAX_BYTES, FLEET_ANSWER_SECONDS): a million vehicles' list is ~150 MB.
ANSWER_MAX_BYTES: Final = 512 * 2**20
ANSWER_SECONDS: Final = 300.0


def _is_cpf_digits(value: str) -> bool:
    return isinstance(value, str) and len(value) == 11 and value.isascii() and value.isdigit()


@dataclass(frozen=True, slots=True)
class _Request:
    """What one call sends, the same at every attempt (its method and route: `CallBudget`)."""

    url: str
    data: bytes | None
    read_timeout: float
    login: bool
    max_bytes: int | None = None  # below the client's `answer_max_bytes`, for this call


def _refuse_unusable(access_token: str, secret_key: str, max_attempts: int) -> None:
    """`ValueError` naming what is wrong with the configuration, never quoting a credential."""
    for name, value in (("access_token", access_token), ("secret_key", secret_key)):
        if problems := credential_problems(value):
            raise ValueError(f"{name} {'; '.join(problems)}")
    if max_attempts < 1:
        raise ValueError("max_attempts must be at least 1")


def _json_or_none(content: bytes | bytearray) -> Any:
    """The answer's JSON, or None when it is not JSON (bad UTF-8 included)."""
    try:
        return orjson.loads(content)
    except orjson.JSONDecodeError:
        return None


def _read_answer[T](
    read: Callable[[Any], T], body: Any, call: CallBudget, *, status: int, trace_id: str | None
) -> T:
    """`read(body)` of a successful answer; `InvalidResponse` when it is not the spec's shape."""
    try:
        if body is None:
            raise ShapeError("the answer is not JSON")
        return read(body)
    except ShapeError as exc:
        raise InvalidResponse(
            str(exc), status=status, trace_id=trace_id, route=call.route, method=call.method
        ) from None


class FleetClient:
    """A client of the Fleet Management API, safe to share between threads.

    Every method takes `retry_budget=` to override, for that call, how many
    seconds it may spend waiting to retry (0: fail at the first problem).
    Failures raise `fleet.api.errors.FleetError` subclasses.

    `wrong_login_codes` are the v1 codes with which `/key/generator` refuses a
    user's e-mail or password: the spec documents none (7.1), so a deployment
    names them.

    `answer_max_bytes` and `answer_seconds` bound each answer's body (`read_body`):
    past either, the call fails as `UpstreamUnavailable` and reads no more.

    `sleep` makes every wait the client makes and `clock` (monotonic seconds) times its budgets.
    """

    def __init__(
        self,
        *,
        base_url: str,
        access_token: str,
        secret_key: str,
        connect_timeout: float = 3.05,
        read_timeout: float = 10.0,
        retry_budget: float = 2.0,
        max_attempts: int = 3,
        cooldown: Cooldown | None = None,
        cnh_lookup_path: str = CNH_LOOKUP,
        cnh_batch_path: str = CNH_BATCH,
        cnh_read_timeout: float = CNH_READ_TIMEOUT,
        answer_max_bytes: int = ANSWER_MAX_BYTES,
        answer_seconds: float = ANSWER_SECONDS,
        wrong_login_codes: Iterable[str] = (),
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        _refuse_unusable(access_token, secret_key, max_attempts)
        self.base_url = base_url.rstrip("/")
        self.connect_timeout = connect_timeout
        self.read_timeout = read_timeout
        self.retry_budget = retry_budget
        self.max_attempts = max_attempts
        self.cooldown: Cooldown = cooldown if cooldown is not None else LocalCooldown(clock=clock)
        self.cnh_lookup_path = api_path(cnh_lookup_path)
        self.cnh_batch_path = api_path(cnh_batch_path)
        self.cnh_read_timeout = cnh_read_timeout
        self.answer_max_bytes = answer_max_bytes
        self.answer_seconds = answer_seconds
        self.wrong_login_codes = frozenset(wrong_login_codes)
        self._sleep = sleep
        self._clock = clock
        self._session = signed_session(
            access_token=access_token, secret_key=secret_key, max_attempts=max_attempts
        )

    def __repr__(self) -> str:
        return f"<FleetClient {self.base_url}>"

    def close(self) -> None:
        """Close the pooled connections."""
        self._session.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # --- The API ------------------------------------------------------------

    def list_vehicle_columns(self, *, retry_budget: float | None = None) -> VehicleColumns:
        """All vehicles of the fleet (spec 4.1), column by column: for large fleets."""
        return self._call(
            "GET",
            LIST_VEHICLES,
            vehicle_columns_from_json,
            read_bytes=vehicle_columns_from_bytes,
            retry_budget=retry_budget,
        )

    def create_access_key(
        self, *, email: str, password: str, retry_budget: float | None = None
    ) -> str:
        """A single-use accessKey that logs this web-app user in (spec 4.2).

        `LoginRejected` when refused with one of `wrong_login_codes`; any other
        refusal is an `ApiError` with the vendor's code and message.
        """
        return self._call(
            "POST",
            CREATE_ACCESS_KEY,
            access_key_from_json,
            body={"email": email, "password": password},
            retry_budget=retry_budget,
            login=True,
        )

    def get_crlv_request(
        self, request_id: str, *, retry_budget: float | None = None
    ) -> CrlvRequest:
        """An e-CRLV issuance request; a fresh download URL when completed (spec 4.3)."""
        return self._call(
            "GET",
            CRLV_REQUEST,
            lambda body: crlv_request_from_json(body, request_id=request_id),
            params={"requestId": request_id},
            retry_budget=retry_budget,
        )

    def get_vehicle_crlv(self, plate: str, *, retry_budget: float | None = None) -> VehicleCrlv:
        """A vehicle's latest e-CRLV and request in progress (spec 4.4)."""
        return self._call(
            "GET",
            VEHICLE_CRLV,
            lambda body: vehicle_crlv_from_json(body, plate=plate),
            params={"carPlate": plate},
            retry_budget=retry_budget,
        )

    def lookup_cnh(self, cpf: str, *, retry_budget: float = 0.0) -> CnhLookupResult:
        """One driver's licence by CPF (eleven digits), individually (spec 4.5).

        Waits up to `cnh_read_timeout` (70 s) for the answer. When the licensing
        service times out the API answers 504 with `Retry-After` (not charged):
        `GatewayTimeout` with `retry_after`, raised at once by default so that
        the caller schedules the retry instead of holding a thread for it.
        """
        if not _is_cpf_digits(cpf):
            raise ValueError("a CPF must be sent as its eleven digits")
        return self._call(
            "POST",
            self.cnh_lookup_path,
            lambda body: cnh_lookup_from_json(body, cpf=cpf),
            body={"cpf": cpf},
            retry_budget=retry_budget,
            timeout=self.cnh_read_timeout,
            timeout_pauses_route=False,
        )

    def lookup_cnh_batch(self, cpfs: Sequence[str], *, retry_budget: float = 0.0) -> CnhBatchResult:
        """Several drivers' licences at once (spec 4.5): one entry per CPF.

        An item whose lookup timed out comes back with `status: error`; the call
        itself succeeds (spec 7.3). Same 70 s wait as `lookup_cnh`.
        """
        if not cpfs or not all(_is_cpf_digits(cpf) for cpf in cpfs):
            raise ValueError("a batch needs one or more CPFs, each as its eleven digits")
        return self._call(
            "POST",
            self.cnh_batch_path,
            lambda body: cnh_batch_from_json(body, cpfs=cpfs),
            body={"cpfs": list(cpfs)},
            retry_budget=retry_budget,
            timeout=self.cnh_read_timeout,
            timeout_pauses_route=False,
        )

    def send_driver_indication(
        self, indication: IndicationRequest, *, retry_budget: float | None = None
    ) -> IndicationSent:
        """Indicate a fine's driver through the platform (spec 4.6 names the route only:
        its shapes are assumed, `fleet.api.indications`).

        `IndicationRefused` carries the platform's reason; `IndicationRouteMissing` says
        the platform has no such route; 429 and 504 are retried within the budget, then
        raised with their `retry_after`. A POST sent that got no answer is never sent
        again: it may have been received.
        """
        indication.check()
        try:
            return self._call(
                "POST",
                DRIVER_INDICATIONS,
                indication_sent_from_json,
                body=indication.as_json(),
                retry_budget=retry_budget,
                answer_max_bytes=INDICATION_ANSWER_MAX_BYTES,
            )
        except FleetError as error:
            refined = indication_error(error)
            if refined is error:
                raise
            raise refined from None

    # --- The one way out ----------------------------------------------------

    def _call[T](
        self,
        method: str,
        route: str,
        read: Callable[[Any], T],
        *,
        read_bytes: Callable[[bytes | bytearray], T | None] | None = None,
        params: Mapping[str, str] | None = None,
        body: Mapping[str, Any] | None = None,
        retry_budget: float | None = None,
        timeout: float | None = None,
        login: bool = False,
        timeout_pauses_route: bool = True,
        answer_max_bytes: int | None = None,
    ) -> T:
        """Call `route` and return `read(json)`, retrying as the policy allows.

        `read_bytes`, when given, reads a successful answer from its bytes first;
        when it returns None, the answer is parsed and `read` as usual. `timeout`
        overrides the read timeout for this call only (the CNH lookup needs 70 s
        where everything else needs 10). `timeout_pauses_route=False` keeps a
        504 from pausing the route for every caller. `answer_max_bytes` reads less of
        this call's answer than the client's bound.
        """
        # Encode first: a bad parameter must not cost a request.
        request = self._request(route, params, body, timeout=timeout, login=login)
        if answer_max_bytes is not None:
            request = replace(request, max_bytes=answer_max_bytes)
        call = self._budget(method, route, retry_budget, timeout_pauses_route=timeout_pauses_route)
        with spending(call):
            return self._until_done(call, lambda: self._attempt(call, request, read, read_bytes))

    def _request(
        self,
        route: str,
        params: Mapping[str, str] | None,
        body: Mapping[str, Any] | None,
        *,
        timeout: float | None,
        login: bool,
    ) -> _Request:
        """What to send: `route` with its parameters, each one path segment, and the JSON body."""
        path = route.format_map({k: path_segment(v) for k, v in (params or {}).items()})
        return _Request(
            url=f"{self.base_url}{path}",
            data=None if body is None else json.dumps(body).encode(),
            read_timeout=self.read_timeout if timeout is None else timeout,
            login=login,
        )

    def _budget(
        self, method: str, route: str, seconds: float | None, *, timeout_pauses_route: bool
    ) -> CallBudget:
        """A call's budget from now: `seconds` to spend waiting (the client's by default)."""
        seconds = self.retry_budget if seconds is None else seconds
        return CallBudget(
            method,
            route,
            self._clock() + seconds,
            max_attempts=self.max_attempts,
            timeout_pauses_route=timeout_pauses_route,
            clock=self._clock,
            sleep=self._sleep,
        )

    def _until_done[T](self, call: CallBudget, attempt: Callable[[], T]) -> T:
        """`attempt` until an answer, an error that is final, or a wait that does not fit."""
        while True:
            try:
                self._wait_for_cooldown(call)
            except FleetError:
                metrics.FLEET_API_CALLS.labels(call.route, "paused").inc()
                raise
            call.attempts += 1
            started = time.monotonic()
            try:
                answer = attempt()
            except FleetError as error:
                _counted(call, error.outcome.value, started)
                wait = retry_wait(call, error, self.cooldown)
                if wait is None or not call.allows(wait):
                    logger.warning(
                        "%s %s failed after %d attempt(s): %s",
                        call.method,
                        call.route,
                        call.attempts,
                        error,
                        extra=self._log_fields(call, error.status, error.trace_id),
                    )
                    raise
                logger.info("%s %s: %s; retrying in %.2f s", call.method, call.route, error, wait)
                self._sleep(wait)
            else:
                _counted(call, "ok", started)
                return answer

    def _wait_for_cooldown(self, call: CallBudget) -> None:
        """Honour the route's shared pause: wait if it fits, else fail without calling."""
        pause = self.cooldown.remaining(call.route)
        if pause <= 0:
            return
        if pause <= call.remaining():
            self._sleep(pause)
            return
        error = RateLimited(
            f"calls to this route are paused for {pause:.0f} s after the API asked to wait",
            retry_after=pause,
            route=call.route,
            method=call.method,
        )
        logger.warning(
            "%s %s not called: %s",
            call.method,
            call.route,
            error,
            extra=self._log_fields(call, None, None),
        )
        raise error

    def _attempt[T](
        self,
        call: CallBudget,
        request: _Request,
        read: Callable[[Any], T],
        read_bytes: Callable[[bytes | bytearray], T | None] | None,
    ) -> T:
        """One request and its answer, turned into `T` or a `FleetError`."""
        started = time.monotonic()
        response, content = self._send(call, request)
        elapsed_ms = (time.monotonic() - started) * 1000
        status = response.status_code
        if read_bytes is not None and 200 <= status < 300:
            quick = read_bytes(content)
            if quick is not None:
                self._log_answer(call, status, None, elapsed_ms, response)
                return quick
        body = _json_or_none(content)
        failure = error_for_response(
            status=status,
            body=body,
            headers=response.headers,
            route=call.route,
            method=call.method,
            login=request.login,
            wrong_login_codes=self.wrong_login_codes,
        )
        trace_id = self._log_answer(call, status, failure, elapsed_ms, response)
        if failure is not None:
            raise failure
        return _read_answer(read, body, call, status=status, trace_id=trace_id)

    def _send(self, call: CallBudget, request: _Request) -> tuple[requests.Response, bytearray]:
        """The response and its whole body; `UpstreamUnavailable` when there is none."""
        try:
            response = self._session.request(
                call.method,
                request.url,
                data=request.data,
                headers=None if request.data is None else {"Content-Type": "application/json"},
                timeout=(self.connect_timeout, request.read_timeout),
                allow_redirects=False,  # a redirect would carry the Key header elsewhere
                stream=True,  # the body is read below, in one read
            )
            body = read_body(
                response,
                max_bytes=min(self.answer_max_bytes, request.max_bytes or self.answer_max_bytes),
                seconds=self.answer_seconds,
                clock=self._clock,
            )
            return response, body
        except requests.RequestException as exc:
            raise upstream_unavailable(
                exc, read_timeout=request.read_timeout, route=call.route, method=call.method
            ) from exc

    def _log_answer(
        self,
        call: CallBudget,
        status: int,
        failure: FleetError | None,
        elapsed_ms: float,
        response: requests.Response,
    ) -> str | None:
        """Log one answer; its trace id, if any."""
        trace_id = failure.trace_id if failure else response.headers.get("X-Trace-Id")
        logger.info(
            "%s %s -> %d in %.0f ms (attempt %d, trace %s)",
            call.method,
            call.route,
            status,
            elapsed_ms,
            call.attempts,
            trace_id or "-",
            extra=self._log_fields(call, status, trace_id, elapsed_ms),
        )
        return trace_id

    @staticmethod
    def _log_fields(
        call: CallBudget,
        status: int | None,
        trace_id: str | None,
        duration_ms: float | None = None,
    ) -> dict[str, Any]:
        """Structured fields for log handlers that ship `extra` (JSON logs)."""
        return {
            "fleet_method": call.method,
            "fleet_route": call.route,
            "fleet_status": status,
            "fleet_duration_ms": None if duration_ms is None else round(duration_ms),
            "fleet_trace_id": trace_id,
            "fleet_attempt": call.attempts,
        }


def _counted(call: CallBudget, outcome: str, started: float) -> None:
    """Count one attempt of `call` (portal.lib.metrics): its route, never its values."""
    metrics.FLEET_API_CALLS.labels(call.route, outcome).inc()
    metrics.FLEET_API_LATENCY.labels(call.route).observe(time.monotonic() - started)
