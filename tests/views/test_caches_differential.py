"""The differential walk: every answer the portal gives from what it keeps for speed reads
as the same request answered with every such cache off (`portal.lib.caches.caches_off`).

Users of four scopes (the whole fleet, one region, two regions, a staff member limited
to a region) walk a few hundred requests in both languages: pages, htmx fragments, CSV
exports and, for the staff member, admin change lists. Between requests fines arrive
through the webhook receiver, drivers are renamed, a plate moves from one region to the
other and a fine's driver is corrected on its page. Each request is asked twice, with
the caches and without, in an order drawn for it; the answers must agree on status,
content type and body, once what is new in every response (the CSRF token, the CSP
nonce, the request code of an error page) is set aside.

A cache whose key leaves out something its answer depends on (who asks, their language,
a version of the data) shows here as one user's or one language's answer served to
another: the walk draws each address once and has several users ask it in turn. The
walk comes from a seed (`--diff-seed`, or the DIFF_SEED variable, else a new one: in
pytest's header, the output and the failure): the same seed walks the same way.
"""

from __future__ import annotations

import difflib
import json
import random
import re
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from datetime import timedelta
from decimal import Decimal
from typing import Any
from urllib.parse import urlencode

import pytest
from django.contrib.auth.models import Permission
from django.test import Client
from django.utils import timezone

from fleet import plates
from fleet.models import Driver, Fine, Notification, VehicleGroup
from fleet.services.driver_history import history_observe
from fleet.services.vehicle_cache import current_snapshot
from fleet.services.vehicle_groups import (
    vehicle_group_grant,
    vehicle_group_plates_remove,
    vehicle_groups_import,
)
from fleet.services.vehicles import vehicle_search
from fleet.webhooks.processing import deliveries_process_received
from portal.lib.caches import caches_off
from tests.conftest import RUN_SUMMARY, run_tasks
from tests.scopes import grant_whole_fleet

# The worker commits as it goes (`run_tasks`), and what waits for a commit runs as it
# would in production; every user is given their scope here.
pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.scoped,
    pytest.mark.usefixtures("held_clock"),
]

WEBHOOK = "/webhooks/fleet/dev-webhook-token/"
LANGUAGES = ("pt-br", "en")
HTMX = {"HX-Request": "true"}
REQUESTS = 300  # requests compared, each asked twice
WRITES = 20  # writes between them, of each kind in turn
DIFF_LINES = 60  # of a difference's diff shown in a failure
# What is new in every response, set aside before answers are compared: the CSRF token
# (masked anew each time it is asked for), the CSP nonce, and the request code an error
# page quotes for an administrator (the request's id).
_PER_RESPONSE = [
    (re.compile(r'(name="csrfmiddlewaretoken" value=")[^"]*'), r"\1<csrf>"),
    (re.compile(r'("X-CSRFToken": ")[^"]*'), r"\1<csrf>"),
    (re.compile(r'(nonce=")[^"]*'), r"\1<nonce>"),
    (re.compile(r'(data-testid="request-code">[^<]*<code>)[^<]*'), r"\1<request id>"),
]
_HTML_LANG = re.compile(r'<html lang="([^"]*)"')
# Names the drivers are given, and given again, as the walk goes.
NAMES = [
    "Jacira Alvim",
    "Ubirajara Brito",
    "Conceição Dantas",
    "José Ávila",
    "Iracema Nogueira",
    "Thiago Araújo",
    "Luíza Pereira",
    "Benedito Campos",
]
REASONS = ["vehicle lent", "veículo emprestado", "the list was late"]


@dataclass(frozen=True)
class Walker:
    """A user of the walk, signed in on a client of their own."""

    name: str
    client: Client
    staff: bool = False


@dataclass(frozen=True)
class Request:
    path: str
    htmx: bool = False
    staff_only: bool = False  # the admin

    @property
    def kind(self) -> str:
        if self.staff_only:
            return "admin"
        if self.path.partition("?")[0].endswith(".csv"):
            return "export"
        return "fragment" if self.htmx else "page"

    def __str__(self) -> str:
        return f"{self.path}{' (htmx)' if self.htmx else ''}"


@dataclass(frozen=True)
class Answer:
    status: int
    content_type: str
    body: str


@dataclass
class Difference:
    step: int
    walker: str
    language: str
    request: Request
    cached_first: bool
    cached: Answer
    uncached: Answer
    persists: bool  # asked both ways again at once, the answers still differ

    def headline(self) -> str:
        first = "cached first" if self.cached_first else "caches off first"
        again = "differs again when asked again" if self.persists else "agrees when asked again"
        return (
            f"step {self.step}: {self.walker} ({self.language}) GET {self.request} "
            f"[{first}; {again}]"
        )

    def shown(self) -> str:
        lines = [self.headline()]
        for name in ("status", "content_type"):
            if getattr(self.cached, name) != getattr(self.uncached, name):
                lines.append(
                    f"  {name}: {getattr(self.cached, name)!r} cached, "
                    f"{getattr(self.uncached, name)!r} with caches off"
                )
        diff = list(
            difflib.unified_diff(
                self.uncached.body.splitlines(),
                self.cached.body.splitlines(),
                "caches off",
                "cached",
                n=2,
                lineterm="",
            )
        )
        shown = [line if len(line) <= 240 else line[:237] + "..." for line in diff[:DIFF_LINES]]
        if len(diff) > DIFF_LINES:
            shown.append(f"... ({len(diff) - DIFF_LINES} more lines of diff)")
        return "\n".join(lines + shown)


@dataclass
class Fleet:
    """What the walk draws its requests and writes from, as the writes change it."""

    regions: dict[str, VehicleGroup]
    plates: dict[str, list[str]]  # region name (or "" for no region) -> its plates
    models: list[str]
    drivers: list[int]  # of the fleet's vehicles
    named: dict[int, str]  # drivers the portal names
    months: list[str]
    fines: list[int] = field(default_factory=list)
    notifications: list[int] = field(default_factory=list)
    sent: int = 0  # webhook events sent (their ids)

    def every_plate(self) -> list[str]:
        return [plate for found in self.plates.values() for plate in found]

    def records_read(self) -> None:
        self.fines = list(Fine.objects.order_by("pk").values_list("pk", flat=True))
        self.notifications = list(Notification.objects.order_by("pk").values_list("pk", flat=True))


def deliver(events: list[dict[str, Any]]) -> None:
    """The platform posts `events`; the worker processes them and what they ask for."""
    sender = Client()
    for event in events:
        response = sender.post(WEBHOOK, data=json.dumps(event), content_type="application/json")
        assert response.status_code == 202, response.content
    deliveries_process_received()
    run_tasks()


def fine_event(fleet: Fleet, rng: random.Random, plate: str) -> dict[str, Any]:
    fleet.sent += 1
    occurred = timezone.now() - timedelta(days=rng.randrange(80), hours=rng.randrange(24))
    amount = Decimal(rng.randrange(8_000, 300_000)) / 100
    return {
        "frame": {
            "id": 5000 + fleet.sent,
            "treated": rng.random() < 0.3,
            # A vehicle's fines name it by the plate listed, or by its Mercosul form.
            "carPlate": rng.choice([plate, plates.registration(plate)]),
            "description": rng.choice(["Excesso de velocidade", "Estacionar em local proibido"]),
            "autoInfracao": f"AUTO-{5000 + fleet.sent}",
            "amount": str(amount),
            "occurredAt": occurred.strftime("%Y-%m-%dT%H:%M:%SZ"),
        },
        "linkFrame": f"https://autoridade.example/{fleet.sent}.pdf" if rng.random() < 0.5 else None,
        "link": "https://boletos.example/1",
    }


def notification_event(fleet: Fleet, rng: random.Random, plate: str) -> dict[str, Any]:
    fleet.sent += 1
    return {
        "notification": {
            "id": 5000 + fleet.sent,
            "treated": rng.random() < 0.3,
            "carPlate": plate,
            "title": rng.choice(["Licenciamento a vencer", "Recall", "Revisão"]),
            "message": f"Aviso {fleet.sent}",
        }
    }


@pytest.fixture
def fleet(emulator: Any, fleet_settings: Any) -> Fleet:
    """Two regions of the emulator's fleet (Norte, Sul) and the vehicles of neither, some of
    their drivers named, and fines and notifications of all three."""
    vehicle_search()  # the list read, so that processing attributes fines to drivers
    history_observe(current_snapshot()[0])  # who had each vehicle, as a refresh takes it in
    listed = sorted(
        (v for v in emulator.vehicles() if v["driver_id"] is not None),
        key=lambda v: plates.normalize(v["car_plate"]),
    )
    chosen = {"Norte": listed[0:12:2], "Sul": listed[1:12:2], "": listed[12:18]}
    regions = {}
    for name in ("Norte", "Sul"):
        region = VehicleGroup.objects.create(name=f"Região {name}")
        vehicle_groups_import([v["car_plate"] for v in chosen[name]], group=region)
        regions[name] = region
    drivers = sorted({v["driver_id"] for found in chosen.values() for v in found})
    named = dict(zip(drivers[::2], NAMES, strict=False))
    for driver_id, name in named.items():
        Driver.objects.create(driver_id=driver_id, name=name)
    months = sorted({(timezone.localdate() - timedelta(days=d)).strftime("%Y-%m") for d in (0, 40)})
    fleet = Fleet(
        regions=regions,
        plates={
            name: [plates.normalize(v["car_plate"]) for v in found]
            for name, found in chosen.items()
        },
        models=sorted({v["model"].split()[0] for found in chosen.values() for v in found}),
        drivers=drivers,
        named=named,
        months=months,
    )
    rng = random.Random("the fleet's first records")  # noqa: S311 - not secret
    events = [fine_event(fleet, rng, plate) for plate in fleet.every_plate()[::-1]]
    events += [fine_event(fleet, rng, plate) for plate in fleet.every_plate()[::2]]
    events += [notification_event(fleet, rng, plate) for plate in fleet.every_plate()[::3]]
    deliver(events)
    fleet.records_read()
    return fleet


@pytest.fixture
def walkers(fleet: Fleet, django_user_model: Any) -> list[Walker]:
    """The whole fleet's manager (who may correct a fine's driver), Norte's, Norte and
    Sul's, and a staff member limited to Sul who may view the admin's lists."""
    made = []
    norte, sul = fleet.regions["Norte"], fleet.regions["Sul"]
    for username, first, groups, staff in (
        ("frota", "Fernanda", [], False),
        ("norte", "Nuno", [norte], False),
        ("norte-sul", "Noemi", [norte, sul], False),
        ("equipe-sul", "Sérgio", [sul], True),
    ):
        user = django_user_model.objects.create_user(
            username, first_name=first, last_name="Teste", is_staff=staff
        )
        if groups:
            vehicle_group_grant(user=user, groups=groups)
        else:
            grant_whole_fleet(user)
            user.user_permissions.add(Permission.objects.get(codename="change_fine_driver"))
        if staff:
            user.user_permissions.add(
                *Permission.objects.filter(codename__startswith="view_").exclude(
                    codename__in=["view_whole_fleet", "view_full_cpf"]
                )
            )
        client = Client()
        client.force_login(user)
        made.append(Walker(username, client, staff=staff))
    return made


@pytest.fixture
def operator(django_user_model: Any) -> Client:
    """A superuser, who renames drivers in the admin."""
    client = Client()
    client.force_login(django_user_model.objects.create_superuser("operador", "op@example.com"))
    return client


@pytest.fixture
def diff_seed(pytestconfig: pytest.Config) -> int:
    seed: int = pytestconfig.getoption("--diff-seed")
    return seed


# --- The requests ----------------------------------------------------------------------


def _query(path: str, params: dict[str, object]) -> str:
    return f"{path}?{urlencode(params)}" if params else path


def _some(
    rng: random.Random, options: dict[str, Callable[[], object]], p: float
) -> dict[str, object]:
    """Each of `options`, with probability `p`, in their order."""
    return {name: make() for name, make in options.items() if rng.random() < p}


def _group(fleet: Fleet, rng: random.Random) -> str:
    return rng.choice([str(fleet.regions["Norte"].pk), str(fleet.regions["Sul"].pk), "none"])


def _plate_typed(plate: str, rng: random.Random) -> str:
    return rng.choice([plate, plates.display(plate), plates.registration(plate)])


def _driver_typed(fleet: Fleet, rng: random.Random) -> str:
    driver = rng.choice(fleet.drivers)
    name = fleet.named.get(driver)
    return rng.choice([str(driver), name or str(driver), (name or "")[:4] or str(driver)])


def vehicles_request(fleet: Fleet, rng: random.Random) -> Request:
    params = _some(
        rng,
        {
            "q": lambda: rng.choice([*fleet.models, rng.choice(fleet.every_plate())[:3]]),
            "active": lambda: rng.choice(["1", "0"]),
            "sort": lambda: rng.choice(["-plate", "model", "-model", "-active", "active"]),
            "page": lambda: rng.choice([2, 3]),
        },
        0.2,
    )
    if rng.random() < 0.6:
        params["group"] = _group(fleet, rng)
    return Request(_query("/vehicles/", params), htmx=rng.random() < 0.3)


def fines_request(fleet: Fleet, rng: random.Random) -> Request:
    params = _some(
        rng,
        {
            "q": lambda: rng.choice(["AUTO-50", "velocidade"]),
            "plate": lambda: _plate_typed(rng.choice(fleet.every_plate()), rng),
            "treated": lambda: rng.choice(["0", "1"]),
            "document": lambda: rng.choice(["0", "1"]),
            "driver": lambda: _driver_typed(fleet, rng),
            "month": lambda: rng.choice(fleet.months),
            "uncertain": lambda: "1",
            # Not a filter of the fines list (it is ignored): an address all the same, which
            # a cache keyed by the address must tell apart.
            "group": lambda: _group(fleet, rng),
            "sort": lambda: rng.choice(["-occurred_at", "occurred_at", "-amount", "amount"]),
            "page": lambda: 2,
        },
        0.15,
    )
    return Request(_query("/fines/", params), htmx=rng.random() < 0.3)


def notifications_request(fleet: Fleet, rng: random.Random) -> Request:
    params = _some(
        rng,
        {
            "q": lambda: rng.choice(["Recall", "Revisão"]),
            "plate": lambda: _plate_typed(rng.choice(fleet.every_plate()), rng),
            "treated": lambda: rng.choice(["0", "1"]),
            "page": lambda: 2,
        },
        0.25,
    )
    return Request(_query("/notifications/", params), htmx=rng.random() < 0.3)


def export_request(fleet: Fleet, rng: random.Random) -> Request:
    listed = rng.choice([vehicles_request, fines_request, notifications_request])(fleet, rng)
    path, _, query = listed.path.partition("?")
    return Request(f"{path}export.csv" + (f"?{query}" if query else ""))


def admin_request(fleet: Fleet, rng: random.Random) -> Request:
    plate = rng.choice(fleet.every_plate())
    return Request(
        rng.choice(
            [
                "/admin/",
                "/admin/fleet/fine/",
                "/admin/fleet/fine/?treated__exact=0",
                f"/admin/fleet/fine/?q={plates.display(plate)}",
                "/admin/fleet/notification/",
                "/admin/fleet/driver/",
                "/admin/fleet/vehiclegroup/",
            ]
        ),
        staff_only=True,
    )


def dashboard_request(fleet: Fleet, rng: random.Random) -> Request:
    return Request("/", htmx=rng.random() < 0.4)  # htmx: the counts it polls


def vehicle_request(fleet: Fleet, rng: random.Random) -> Request:
    return Request(f"/vehicles/{rng.choice(fleet.every_plate())}/")


def fine_request(fleet: Fleet, rng: random.Random) -> Request:
    return Request(f"/fines/{rng.choice(fleet.fines)}/")


def notification_request(fleet: Fleet, rng: random.Random) -> Request:
    return Request(f"/notifications/{rng.choice(fleet.notifications)}/")


def driver_request(fleet: Fleet, rng: random.Random) -> Request:
    return Request(f"/drivers/{rng.choice(fleet.drivers)}/")


def driver_choices_request(fleet: Fleet, rng: random.Random) -> Request:
    """The fines list's driver picker, as a name or an id is typed."""
    return Request(_query("/fines/drivers/", {"driver": _driver_typed(fleet, rng)}), htmx=True)


def cnh_request(fleet: Fleet, rng: random.Random) -> Request:
    return Request("/drivers/cnh/")


# Each kind of request, and how often the walk draws it.
REQUEST_KINDS: list[tuple[int, Callable[[Fleet, random.Random], Request]]] = [
    (3, dashboard_request),
    (8, vehicles_request),
    (3, vehicle_request),
    (6, fines_request),
    (3, fine_request),
    (3, notifications_request),
    (2, notification_request),
    (2, driver_request),
    (2, driver_choices_request),
    (1, cnh_request),
    (4, export_request),
    (2, admin_request),
]


def request_draw(fleet: Fleet, rng: random.Random) -> Request:
    weights = [weight for weight, _make in REQUEST_KINDS]
    (make,) = rng.choices([make for _weight, make in REQUEST_KINDS], weights)
    return make(fleet, rng)


# --- Asking both ways --------------------------------------------------------------------


def _normalised(body: str) -> str:
    for pattern, replacement in _PER_RESPONSE:
        body = pattern.sub(replacement, body)
    return body


def ask(client: Client, request: Request, language: str, *, cached: bool) -> Answer:
    headers = {"Accept-Language": language} | (HTMX if request.htmx else {})
    switch: AbstractContextManager[None] = nullcontext() if cached else caches_off()
    with switch:  # an export is written as it is read: read it whole in here
        response = client.get(request.path, headers=headers)
        streamed = getattr(response, "streaming_content", None)
        body = response.content if streamed is None else b"".join(streamed)
    return Answer(
        response.status_code,
        response.get("Content-Type", ""),
        _normalised(body.decode("utf-8", errors="replace")),
    )


# --- The writes --------------------------------------------------------------------------


def fines_arrive(fleet: Fleet, rng: random.Random, **_: Any) -> str:
    plate = rng.choice(fleet.every_plate())
    events = [fine_event(fleet, rng, plate)]
    if rng.random() < 0.5:
        events.append(notification_event(fleet, rng, rng.choice(fleet.every_plate())))
    deliver(events)
    fleet.records_read()
    return f"a fine of {plate} arrives"


def driver_renamed(fleet: Fleet, rng: random.Random, operator: Client, **_: Any) -> str:
    driver_id = rng.choice(sorted(fleet.named))
    name = rng.choice([n for n in NAMES if n != fleet.named[driver_id]])
    driver = Driver.objects.get(driver_id=driver_id)
    if rng.random() < 0.5:
        response = operator.post(
            f"/admin/fleet/driver/{driver.pk}/change/",
            {"driver_id": driver_id, "name": name, "_save": "1"},
        )
        assert response.status_code == 302, response.content
        how = "in the admin"
    else:
        driver.name = name
        driver.save()
        how = "by its model"
    run_tasks()
    fleet.named[driver_id] = name
    return f"driver {driver_id} renamed {name!r} {how}"


def plate_moved(fleet: Fleet, rng: random.Random, **_: Any) -> str:
    source, target = rng.sample(["Norte", "Sul"], 2)
    if len(fleet.plates[source]) < 3:
        source, target = target, source
    plate = rng.choice(fleet.plates[source])
    vehicle_group_plates_remove(
        group=fleet.regions[source], registrations=[plates.registration(plate)]
    )
    vehicle_groups_import([plate], group=fleet.regions[target])
    run_tasks()
    fleet.plates[source].remove(plate)
    fleet.plates[target].append(plate)
    return f"{plate} moved from {source} to {target}"


def driver_corrected(fleet: Fleet, rng: random.Random, walkers: list[Walker], **_: Any) -> str:
    fine_id = rng.choice(fleet.fines)
    driver_id = rng.choice(fleet.drivers)
    whole = walkers[0]  # the one who may
    response = whole.client.post(
        f"/fines/{fine_id}/driver",
        {"choice": "other", "driver": str(driver_id), "reason": rng.choice(REASONS)},
        headers={"Sec-Fetch-Site": "same-origin"},
        follow=True,  # to the fine's page, which shows (and so consumes) the message saying so
    )
    assert response.redirect_chain, response.content
    assert response.status_code == 200
    run_tasks()
    return f"fine {fine_id}'s driver corrected to {driver_id}"


WRITE_KINDS: list[Callable[..., str]] = [
    fines_arrive,
    driver_renamed,
    plate_moved,
    driver_corrected,
]


# --- The walk ------------------------------------------------------------------------


def walk(
    seed: int, fleet: Fleet, walkers: list[Walker], operator: Client
) -> Iterator[tuple[int, str, Walker, str, Request, bool]]:
    """The walk's requests (step, what was written just before, walker, language, request,
    whether the cached answer is asked first), with the writes made between them."""
    rng = random.Random(seed)  # noqa: S311 - not secret
    writes = sorted(rng.sample(range(1, REQUESTS), WRITES))
    kinds = [WRITE_KINDS[n % len(WRITE_KINDS)] for n in range(WRITES)]
    rng.shuffle(kinds)
    step = 0
    while step < REQUESTS:
        request = request_draw(fleet, rng)
        # Several users follow the same address in turn (a link shared, an alert's).
        askers = [w for w in walkers if w.staff] if request.staff_only else walkers
        for walker in rng.sample(askers, min(len(askers), rng.choice([1, 2, 2, 3]))):
            written = ""
            while writes and writes[0] <= step:
                writes.pop(0)
                write = kinds.pop()
                written = write(fleet, rng, operator=operator, walkers=walkers)
            yield step, written, walker, rng.choice(LANGUAGES), request, rng.random() < 0.5
            step += 1
            if step == REQUESTS:
                return


def test_every_answer_reads_the_same_with_caches_off(
    fleet: Fleet, walkers: list[Walker], operator: Client, diff_seed: int
) -> None:
    print(f"differential: seed {diff_seed} (walk it again with --diff-seed {diff_seed})")
    differences: list[Difference] = []
    said_behind = 0
    statuses: Counter[int] = Counter()
    kinds: Counter[str] = Counter()
    users, languages, other_language = set(), set(), []
    for step, write, walker, language, request, cached_first in walk(
        diff_seed, fleet, walkers, operator
    ):
        if write:
            kinds["write"] += 1
            print(f"differential: before step {step}, {write}")
        kinds[request.kind] += 1
        first = ask(walker.client, request, language, cached=cached_first)
        second = ask(walker.client, request, language, cached=not cached_first)
        cached, uncached = (first, second) if cached_first else (second, first)
        users.add(walker.name)
        languages.add(language)
        statuses[uncached.status] += 1
        if (page := _HTML_LANG.search(uncached.body)) and page[1] != language:
            other_language.append(f"step {step}: {request} in {page[1]}, not {language}")
        if cached != uncached:
            # Asked both ways again at once: whether it lasts, or only the first answer
            # after a write was behind. A dashboard that said its figures are being
            # counted (by the worker) is asked again once the worker ran.
            behind = any(said in cached.body for said in _BEHIND)
            if behind:
                run_tasks()
            again = ask(walker.client, request, language, cached=True)
            persists = again != ask(walker.client, request, language, cached=False)
            if behind and not persists:
                # Figures being counted, or kept while newer ones are, said so on the
                # page and counted by the worker: a fact of when they were read, not
                # another viewer's.
                said_behind += 1
                continue
            differences.append(
                Difference(
                    step, walker.name, language, request, cached_first, cached, uncached, persists
                )
            )
    print(f"differential: {dict(sorted(kinds.items()))}, statuses {dict(sorted(statuses.items()))}")
    summary = (
        f"differential: seed {diff_seed}, {REQUESTS} requests, {len(users)} users, "
        f"{len(languages)} languages, {len(differences)} differences "
        f"({said_behind} dashboards said their figures were being counted)"
    )
    print(summary)
    RUN_SUMMARY.append(summary)
    assert (len(users), len(languages)) == (len(walkers), len(LANGUAGES))
    assert other_language == []
    assert statuses[200] > REQUESTS // 2, statuses  # the walk reads pages, not error pages
    if differences:
        pytest.fail(_failure(diff_seed, differences), pytrace=False)


# What a dashboard (its page, or its counts polled) says when it shows a part of the
# fleet's figures as they were kept, or while the worker counts them.
_BEHIND = (
    'data-testid="figures-behind"',
    'data-testid="counts-behind"',
    'data-testid="figures-counting"',
    'data-testid="counts-counting"',
)


def _failure(seed: int, differences: list[Difference]) -> str:
    """The differences: each in a line, and the diff of the first of each kind (page, and
    whether it lasts)."""
    shown: dict[tuple[str, bool], Difference] = {}
    for difference in differences:
        kind = (difference.request.path.partition("?")[0], difference.persists)
        shown.setdefault(kind, difference)
    diffs = "\n\n".join(difference.shown() for difference in list(shown.values())[:3])
    listed = "\n".join(f"  {difference.headline()}" for difference in differences[:30])
    return (
        f"differential: seed {seed}: {len(differences)} of {REQUESTS} answers differ with "
        f"caches on and off (walk it again with --diff-seed {seed})\n{listed}\n\n{diffs}"
    )
