"""The soak's traffic, for locust run headless by `python -m bench.soak` (not on its own).

Three kinds of users, their numbers fixed by the plan `bench/soak.py` writes
(`SOAK_PLAN`, a JSON file):

- managers sign in through the login form, each from an address of its own on
  loopback (127.0.0.x, as people in an office behind their own addresses: the
  shipped nginx limits sign-ins per address), then browse the dashboard, list
  and search the fleet's vehicles, open e-CRLV pages and request documents,
  open the embedded fleet application and read fines and notifications;
- CNH users send batches and single lookups, each with a purpose, and follow
  them to their end;
- the fleet platform's webhook sender posts the plan's deliveries (events,
  20 % exact duplicates, shuffled) during the bursts at the plan's rate, each
  with an `X-Delivery-Id`; an answer other than 2xx (or none) is sent again,
  the same delivery under the same id, after a backoff, as a vendor's
  sender retries.

Every request is written to the plan's request log as one JSON line
(`[start, route, status, milliseconds, user]`, status 0 when no answer came);
every delivery the portal acknowledged, to the plan's acknowledgement log.
"""

from __future__ import annotations

import base64
import collections
import json
import os
import random
import re
import time
from pathlib import Path
from typing import Any

from locust import FastHttpUser, HttpUser, events, task
from requests.adapters import HTTPAdapter

PLAN: dict[str, Any] = json.loads(Path(os.environ["SOAK_PLAN"]).read_text())
START: float = PLAN["start"]
_log = Path(PLAN["request_log"]).open("a", buffering=1 << 16)  # noqa: SIM115 (closed at quit)
_acknowledged = Path(PLAN["acknowledged_log"]).open("a", buffering=1)  # noqa: SIM115
_LOOKUP = re.compile(r"/drivers/cnh/([0-9a-f-]{36})/")
_STATUS = re.compile(r'data-testid="cnh-lookup" data-status="(\w+)"')
_FINAL = {"done", "failed", "unknown"}
_CSRF = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')


@events.request.add_listener  # type: ignore[untyped-decorator]
def _record(
    request_type: str,
    name: str,
    response_time: float,
    response: Any = None,
    context: dict[str, Any] | None = None,
    start_time: float | None = None,
    **_: Any,
) -> None:
    status = getattr(response, "status_code", 0) or 0
    user = (context or {}).get("user", "")
    started = start_time if start_time is not None else time.time() - response_time / 1000
    _log.write(json.dumps([round(started, 3), name, status, round(response_time, 1), user]) + "\n")


@events.quitting.add_listener  # type: ignore[untyped-decorator]
def _close(**_: Any) -> None:
    _log.close()
    _acknowledged.close()


def _elapsed() -> float:
    return time.time() - START


class _SourceAddress(HTTPAdapter):
    """Connections from one loopback address."""

    def __init__(self, address: str) -> None:
        self._address = address
        super().__init__()

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        kwargs["source_address"] = (self._address, 0)
        super().init_poolmanager(*args, **kwargs)


_accounts = iter(PLAN["managers"])
_cnh_accounts = iter(PLAN["cnh_users"])
PLATES: list[str] = PLAN["plates"]


class _SignedIn(HttpUser):
    abstract = True
    account: dict[str, str]

    def context(self) -> dict[str, str]:
        return {"user": type(self).__name__}

    def sign_in(self) -> None:
        self.client.mount("http://", _SourceAddress(self.account["address"]))
        self.client.cookies.clear()
        page = self.client.get("/accounts/login/", name="/accounts/login/")
        match = _CSRF.search(page.text)
        self.client.post(
            "/accounts/login/",
            data={
                "csrfmiddlewaretoken": match.group(1) if match else "",
                "username": self.account["username"],
                "password": self.account["password"],
            },
            name="/accounts/login/ (POST)",
        )

    def post_form(self, path: str, data: dict[str, str], *, name: str) -> Any:
        data = {"csrfmiddlewaretoken": self.client.cookies.get("csrftoken") or "", **data}
        return self.client.post(
            path, data=data, name=name, headers={"Referer": f"{self.host}{path}"}
        )


class Manager(_SignedIn):
    """A fleet manager at work: a page every 1 to 4 seconds."""

    fixed_count = len(PLAN["managers"])

    def wait_time(self) -> float:
        return random.uniform(1, 4)

    def on_start(self) -> None:
        self.account = next(_accounts)
        self.sign_in()

    @task(3)
    def dashboard(self) -> None:
        self.client.get("/", name="/")

    @task(3)
    def vehicles(self) -> None:
        page = random.randint(1, 20)
        self.client.get(f"/vehicles/?page={page}", name="/vehicles/?page")

    @task(3)
    def search_vehicles(self) -> None:
        plate = random.choice(PLATES)
        self.client.get(f"/vehicles/?q={plate[: random.randint(3, 7)]}", name="/vehicles/?q")

    @task(2)
    def vehicle(self) -> None:
        self.client.get(f"/vehicles/{random.choice(PLATES)}/", name="/vehicles/[plate]/")

    @task(1)
    def request_document(self) -> None:
        plate = random.choice(PLATES)
        self.client.get(f"/vehicles/{plate}/crlv/download", name="/vehicles/[plate]/crlv/download")

    @task(1)
    def fleet_app(self) -> None:
        self.client.get("/app/", name="/app/")
        self.client.get("/app/frame", name="/app/frame", headers={"HX-Request": "true"})

    @task(3)
    def fines(self) -> None:
        self.client.get("/fines/", name="/fines/")

    @task(1)
    def fines_of_a_vehicle(self) -> None:
        self.client.get(f"/fines/?plate={random.choice(PLATES)}", name="/fines/?plate")

    @task(1)
    def notifications(self) -> None:
        self.client.get("/notifications/", name="/notifications/")

    @task(1)
    def sign_out_and_in(self) -> None:
        if random.random() < 0.2:
            self.post_form("/accounts/logout/", {}, name="/accounts/logout/ (POST)")
            self.sign_in()


# CPFs: valid ones have a licence; the emulator's test CPFs play a licence nobody holds
# and a licensing service that does not answer in time (emulator/README.md).
NOT_FOUND_CPF = "00000040495"
TIMEOUT_CPF = "50450450406"


def _cpf(rng: random.Random) -> str:
    digits = [rng.randrange(10) for _ in range(9)]
    for length in (9, 10):
        total = sum(d * w for d, w in zip(digits, range(length + 1, 1, -1), strict=True))
        digits.append(0 if total % 11 < 2 else 11 - total % 11)
    return "".join(map(str, digits))


class CnhOfficer(_SignedIn):
    """Someone in HR checking licences: a batch or a single lookup every 5 to 10 seconds,
    each followed to its end."""

    fixed_count = len(PLAN["cnh_users"])

    def wait_time(self) -> float:
        return random.uniform(5, 10)

    def on_start(self) -> None:
        self.account = next(_cnh_accounts)
        self.rng = random.Random(self.account["username"])
        self.sign_in()

    @task(3)
    def batch(self) -> None:
        cpfs = [_cpf(self.rng) for _ in range(self.rng.randint(3, 15))]
        if self.rng.random() < 0.3:
            cpfs.append(NOT_FOUND_CPF)
        if self.rng.random() < 0.1:
            cpfs.append(TIMEOUT_CPF)
        data = {"cpfs": "\n".join(cpfs), "purpose": "periodic"}
        self._follow(self.post_form("/drivers/cnh/batch", data, name="/drivers/cnh/batch (POST)"))

    @task(1)
    def single(self) -> None:
        data = {"cpf": _cpf(self.rng), "purpose": "hiring"}
        self._follow(self.post_form("/drivers/cnh/lookup", data, name="/drivers/cnh/lookup (POST)"))

    def _follow(self, response: Any) -> None:
        match = _LOOKUP.search(getattr(response, "url", "") or "")
        if not match:
            return
        for _ in range(10):
            page = self.client.get(f"/drivers/cnh/{match.group(1)}/", name="/drivers/cnh/[id]/")
            status = _STATUS.search(page.text or "")
            if status and status.group(1) in _FINAL:
                return
            time.sleep(2)


class _Deliveries:
    """The plan's deliveries, as the fleet platform produces them: each burst releases its
    share at the burst's rate, and the senders send what is released as fast as the
    portal takes it (what a slower portal leaves is sent after the burst), again after
    a failure, with a backoff."""

    def __init__(self, path: str, bursts: list[dict[str, float]]) -> None:
        self.waiting: collections.deque[tuple[str, bytes]] = collections.deque(
            (line["id"], base64.b64decode(line["body"]))
            for line in map(json.loads, Path(path).read_text().splitlines())
        )
        self.bursts = bursts
        self.taken = 0
        self.retries: list[tuple[float, int, str, bytes]] = []
        self.attempts: collections.Counter[str] = collections.Counter()

    def released(self) -> int:
        """How many deliveries the platform has produced by now."""
        at = time.time() - START
        produced = sum(
            max(0.0, min(at, burst["end"]) - burst["start"]) * burst["rate"]
            for burst in self.bursts
        )
        return int(produced)

    def take(self) -> tuple[str, bytes] | None:
        now = time.time()
        due = [entry for entry in self.retries if entry[0] <= now]
        if due:
            entry = min(due)
            self.retries.remove(entry)
            return entry[2], entry[3]
        if self.waiting and self.taken < self.released():
            self.taken += 1
            return self.waiting.popleft()
        return None

    def failed(self, delivery_id: str, body: bytes) -> None:
        self.attempts[delivery_id] += 1
        backoff = min(0.5 * 2 ** (self.attempts[delivery_id] - 1), 4.0)
        self.retries.append((time.time() + backoff, self.attempts[delivery_id], delivery_id, body))


DELIVERIES = _Deliveries(PLAN["deliveries"], PLAN["bursts"])


class WebhookSender(FastHttpUser):
    """One connection of the fleet platform's webhook sender."""

    fixed_count = PLAN["senders"]
    sent = False

    def wait_time(self) -> float:
        return 0.0 if self.sent else 0.02

    @task
    def deliver(self) -> None:
        self.sent = False
        taken = DELIVERIES.take()
        if taken is None:
            return
        self.sent = True
        delivery_id, body = taken
        try:
            response = self.client.post(
                PLAN["webhook_path"],
                data=body,  # type: ignore[arg-type]  # bytes are sent as they are
                headers={"Content-Type": "application/json", "X-Delivery-Id": delivery_id},
                name="/webhooks/fleet/[token]/ (POST)",
                context={"user": "WebhookSender"},
            )
            status = response.status_code or 0
        except Exception:
            status = 0
        if 200 <= status < 300:
            _acknowledged.write(delivery_id + "\n")
        else:
            DELIVERIES.failed(delivery_id, body)
