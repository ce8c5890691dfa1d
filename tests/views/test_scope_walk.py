"""Two managers of disjoint vehicle groups walk every page of the URLconf that takes a
plate, a record id or a query (pages, htmx fragments, CSV, downloads, saved views, the
deep link): nothing of the other group shows (its plates in both formats, its amounts,
its records' ids and texts), and the other group's records are 404, never 403.

Every URL name of the portal is either walked here or named in `NOT_ABOUT_VEHICLES` with
the reason: a page added to the URLconf fails this test until it is one or the other.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

from fleet import plates
from fleet.models import Driver, Fine, Notification, SavedFineView, VehicleGroup, VehicleGroupMember
from fleet.services.scopes import vehicle_groups_changed
from fleet.services.tallies import group_tallies_catch_up
from fleet.services.vehicles import vehicle_search
from fleet.webhooks.processing import deliveries_process_received

pytestmark = [pytest.mark.django_db, pytest.mark.scoped]

WEBHOOK = "/webhooks/fleet/dev-webhook-token/"
HTMX = {"HX-Request": "true"}

# Pages that take no plate, record id or query about vehicles, and why.
NOT_ABOUT_VEHICLES = {
    "fleet:healthz": "liveness, no fleet data",
    "fleet:metrics": "counts by view and outcome for the operators, no fleet data (a token)",
    "fleet:app": "the page around the vendor's application (says it is not scoped)",
    "fleet:app_frame": "the iframe of the vendor's application, no plate",
    "fleet:fleet_account": "the user's own fleet login",
    "fleet:vehicles_refresh": "fetches the list again, shows nothing",
    "fleet:webhook": "the receiver: the platform posts, nobody reads",
    "fleet:cnh": "CNH lookups stay per user (their own tests)",
    "fleet:cnh_lookup_single": "CNH lookups stay per user",
    "fleet:cnh_lookup_batch": "CNH lookups stay per user",
    "fleet:cnh_lookup": "CNH lookups stay per user",
    "fleet:cnh_lookup_retry": "CNH lookups stay per user",
}
# Whole parts of the URLconf that show no fleet data: by the first segment of the path.
NOT_ABOUT_VEHICLES_UNDER = {
    "accounts/": "sign-in, sign-out and the identity provider's callbacks",
    "admin/": "the Django admin: staff with their own permissions",
    "account/alerts/": "a user's alert choices and subscriptions (alerts are scoped apart)",
    "scim/": "SCIM provisioning: the identity provider's client, with its own bearer token",
}


@dataclass
class Side:
    """One manager, their group's vehicles and records, and what must never leak of them."""

    name: str
    client: Client
    plates: list[str]  # as the vehicle list has them, normalized
    driver: int
    fine: int = 0
    notification: int = 0
    request_id: str = ""
    saved_view: int = 0
    amount: str = ""
    secret: str = ""  # a word only this side's records hold
    words: list[str] = field(default_factory=list)  # what must not show to the other side
    driver_name: str = ""

    def forbidden(self) -> list[str]:
        found = list(self.words)
        for plate in self.plates:
            found += {plate, plates.display(plate), plates.registration(plate)}
            if (old := plates.old_plate(plate)) is not None:
                found += {old, plates.display(old)}
        return found


def deliver(client: Client, payload: dict[str, Any]) -> None:
    response = client.post(WEBHOOK, data=json.dumps(payload), content_type="application/json")
    assert response.status_code == 202, response.content
    deliveries_process_received()


@pytest.fixture
def sides(emulator: Any, fleet_settings: Any, django_user_model: Any) -> list[Side]:
    vehicle_search()  # the list read, so that processing attributes fines to drivers
    fleet = [v for v in emulator.vehicles() if v["driver_id"] is not None]
    old = [
        v
        for v in fleet
        if len(plates.normalize(v["car_plate"])) == 7 and v["car_plate"][4].isdigit()
    ]
    new = [v for v in fleet if v not in old]
    assert old, "the emulator's fleet has old plates"
    assert new, "the emulator's fleet has Mercosul plates"
    # Group A: an old plate and two Mercosul ones; group B: three others. Disjoint drivers.
    chosen_a = [old[0], new[0], new[1]]
    drivers_a = {v["driver_id"] for v in chosen_a}
    chosen_b = [v for v in [*old[1:], *new[2:]] if v["driver_id"] not in drivers_a][:3]
    built: list[Side] = []
    for name, chosen, amount, secret in (
        ("A", chosen_a, "1357.91", "Segredo-Alfa"),
        ("B", chosen_b, "8642.19", "Segredo-Beta"),
    ):
        group = VehicleGroup.objects.create(name=f"Região {name}")
        for vehicle in chosen:
            group.plates.create(registration=plates.registration(vehicle["car_plate"]))
        vehicle_groups_changed([group.pk])
        user = django_user_model.objects.create_user(f"manager-{name.lower()}", password="pw")
        VehicleGroupMember.objects.create(group=group, user=user)
        client = Client()
        client.force_login(user)
        side = Side(
            name=name,
            client=client,
            plates=[plates.normalize(v["car_plate"]) for v in chosen],
            driver=chosen[0]["driver_id"],
            amount=amount,
            secret=secret,
        )
        # A fine naming the vehicle by its Mercosul form, a notification by the plate listed.
        first = side.plates[0]
        deliver(
            client,
            {
                "frame": {
                    "id": 900 + len(built),
                    "treated": False,
                    "carPlate": plates.registration(first),
                    "description": f"Infração {secret}",
                    "autoInfracao": f"AUTO-{secret}",
                    "amount": amount,
                    "occurredAt": "2026-11-20T15:00:00Z",
                },
                "linkFrame": None,
                "link": "https://boletos.example/1",
            },
        )
        deliver(
            client,
            {
                "notification": {
                    "id": 900 + len(built),
                    "treated": False,
                    "carPlate": first,
                    "title": secret,
                }
            },
        )
        side.fine = Fine.objects.get(payload__autoInfracao=f"AUTO-{secret}").pk
        side.notification = Notification.objects.get(payload__title=secret).pk
        side.request_id = emulator.create_crlv_request(first, pending_seconds=3600)["requestId"]
        # Its manager opens the vehicle's page: the portal notes the request's vehicle.
        assert client.get(f"/vehicles/{first}/").status_code == 200
        side.saved_view = SavedFineView.objects.create(
            user=user, name=f"Vista {secret}", query=f"plate={first}"
        ).pk
        # Its driver has a name of its own (not the secret: the side's dashboard shows it).
        side.driver_name = {"A": "Jacira Alvim", "B": "Ubirajara Brito"}[name]
        Driver.objects.create(driver_id=side.driver, name=side.driver_name)
        side.words = [
            secret,
            side.driver_name,
            amount,
            f"{amount[:1]}.{amount[1:].replace('.', ',')}",  # 1.357,91
            f"{amount[:1]},{amount[1:]}",  # 1,357.91
            f"/fines/{side.fine}/",
            f"/notifications/{side.notification}/",
            f"/drivers/{side.driver}/",
            side.request_id,
        ]
        built.append(side)
    # What the worker does once a group's plates changed: each region's dashboard reads
    # its own tallies, as a region's does (else its first page says they are counted).
    group_tallies_catch_up()
    return built


def _paths(side: Side, other: Side) -> dict[str, list[tuple[str, str, dict[str, Any]]]]:
    """Each URL name walked, with the requests `side`'s manager makes on it about `other`'s
    vehicles and records: (method, path, data). None may show anything of `other`."""
    plate = other.plates[0]
    forms = sorted({plate, plates.display(plate), plates.registration(plate)})
    return {
        "fleet:dashboard": [("GET", "/", {}), ("HTMX", "/", {})],
        "fleet:vehicles": [
            ("GET", "/vehicles/", {}),
            *(("GET", f"/vehicles/?q={form}", {}) for form in forms),
            ("GET", f"/vehicles/?q={plate[:5]}", {}),
            ("HTMX", f"/vehicles/?q={plate}", {}),
            ("GET", "/vehicles/?group=none", {}),
            *(
                ("GET", f"/vehicles/?group={pk}", {})
                for pk in VehicleGroup.objects.values_list("pk", flat=True)
            ),
        ],
        "fleet:vehicles_export": [
            ("GET", "/vehicles/export.csv", {}),
            ("GET", f"/vehicles/export.csv?q={plate}", {}),
        ],
        "fleet:fines": [
            ("GET", "/fines/", {}),
            *(("GET", f"/fines/?plate={form}", {}) for form in forms),
            ("GET", f"/fines/?driver={other.driver}", {}),
            ("GET", f"/fines/?driver={other.driver_name}", {}),
            ("GET", f"/fines/?q=AUTO-{other.secret}", {}),
            ("HTMX", f"/fines/?plate={plate}", {}),
        ],
        "fleet:fine_drivers": [
            ("GET", f"/fines/drivers/?driver={other.driver}", {}),
            ("HTMX", f"/fines/drivers/?driver={other.driver_name.split()[0][:4]}", {}),
            ("HTMX", f"/fines/drivers/?driver={other.driver_name}", {}),
        ],
        "fleet:fines_export": [
            ("GET", "/fines/export.csv", {}),
            ("GET", f"/fines/export.csv?plate={plate}", {}),
            ("GET", f"/fines/export.csv?driver={other.driver}", {}),
        ],
        "fleet:indications": [
            ("GET", "/fines/indications/", {}),
            *(("GET", f"/fines/indications/?plate={form}", {}) for form in forms),
            ("GET", f"/fines/indications/?driver={other.driver}", {}),
            ("GET", f"/fines/indications/?driver={other.driver_name}", {}),
            ("GET", "/fines/indications/?within=30", {}),
            *(
                ("GET", f"/fines/indications/?group={pk}", {})
                for pk in VehicleGroup.objects.values_list("pk", flat=True)
            ),
        ],
        "fleet:indications_export": [
            ("GET", "/fines/indications/export.csv", {}),
            ("GET", f"/fines/indications/export.csv?plate={plate}", {}),
            ("GET", f"/fines/indications/export.csv?driver={other.driver}", {}),
        ],
        "fleet:notifications": [
            ("GET", "/notifications/", {}),
            ("GET", f"/notifications/?plate={plate}", {}),
            ("GET", f"/notifications/?q={other.secret}", {}),
            ("HTMX", f"/notifications/?plate={plate}", {}),
        ],
        "fleet:notifications_export": [
            ("GET", "/notifications/export.csv", {}),
            ("GET", f"/notifications/export.csv?plate={plate}", {}),
        ],
        "fleet:fine_view_save": [
            ("POST", "/fines/views/", {"name": "Outra", "query": f"plate={plate}"}),
        ],
        "fleet:app_open": [
            ("POST", "/app/open", {"next": f"/vehicles/{plate}/"}),
            ("POST", "/app/open", {"next": f"/fines/{other.fine}/"}),
            ("GET", f"/app/open?plate={plate}", {}),
        ],
        # Direct addresses of the other group's records: each a 404.
        "fleet:vehicle": [("404", f"/vehicles/{form}/", {}) for form in (*forms, plate.lower())],
        "fleet:vehicle_crlv_download": [("404", f"/vehicles/{plate}/crlv/download", {})],
        "fleet:crlv_request": [
            ("404", f"/crlv/requests/{other.request_id}/", {}),
            ("404", f"/crlv/requests/{other.request_id.upper()}/", {}),
        ],
        "fleet:crlv_request_download": [
            ("404", f"/crlv/requests/{other.request_id}/download", {}),
        ],
        "fleet:fine": [("404", f"/fines/{other.fine}/", {})],
        "fleet:fine_packet": [("404", f"/fines/{other.fine}/packet.pdf", {})],
        # A selection naming one of the other group's fines is not found, whatever else.
        "fleet:indications_packet": [
            ("404-POST", "/fines/indications/packet.pdf", {"fine": [str(other.fine)]}),
            (
                "404-POST",
                "/fines/indications/packet.pdf",
                {"fine": [str(side.fine), str(other.fine)]},
            ),
        ],
        "fleet:indications_indicate": [
            ("404-POST", "/fines/indications/indicate", {"fine": [str(other.fine)]}),
            (
                "404-POST",
                "/fines/indications/indicate",
                {"fine": [str(side.fine), str(other.fine)], "confirm": "1"},
            ),
        ],
        # Not found before the permission is asked for: 404 whether or not they may.
        "fleet:fine_driver": [
            ("404-POST", f"/fines/{other.fine}/driver", {"choice": "1", "reason": "lent"})
        ],
        "fleet:fine_deadline": [
            (
                "404-POST",
                f"/fines/{other.fine}/deadline",
                {"field": "indication_due", "day": "2099-01-01", "reason": "x"},
            )
        ],
        "fleet:fine_indicate": [
            (
                "404-POST",
                f"/fines/{other.fine}/indicate",
                {"driver": str(other.driver), "channel": "post", "on": "2026-01-01"},
            )
        ],
        # Another group's receipt: test_indication_receipts walks one that exists.
        "fleet:fine_indication_receipt": [
            ("404", f"/fines/{other.fine}/indications/1/receipt", {}),
        ],
        "fleet:fine_indication_answer": [
            ("404-POST", f"/fines/{other.fine}/indication-answer", {"accepted": "1"})
        ],
        "fleet:fine_indication_need": [
            ("404-POST", f"/fines/{other.fine}/indication-need", {"needed": "0", "reason": "x"})
        ],
        "fleet:notification": [("404", f"/notifications/{other.notification}/", {})],
        "fleet:driver": [("404", f"/drivers/{other.driver}/", {})],
        "fleet:driver_cpf": [("404-POST", f"/drivers/{other.driver}/cpf", {"cpf": ""})],
        "fleet:driver_licence": [("404-POST", f"/drivers/{other.driver}/licence", {})],
        "fleet:fine_view_delete": [("404-POST", f"/fines/views/{other.saved_view}/delete", {})],
    }


def _send(client: Client, method: str, path: str, data: dict[str, Any]) -> Any:
    if method == "HTMX":
        return client.get(path, headers=HTMX)
    if method == "404":  # a plate typed another way is first sent to its canonical form
        return client.get(path, follow=True)
    if method in ("POST", "404-POST"):
        return client.post(
            path, data, follow=method == "POST", headers={"Sec-Fetch-Site": "same-origin"}
        )
    return client.get(path)


# What a page echoes of the request itself (the search box, links that keep the filters):
# attribute values holding a query string, and form values; the messages that quote what
# was typed, which the walk checks are the same whether it names a driver or not; the
# filters applied, as chips.
_ECHOES = re.compile(
    r'(?:value|placeholder)="[^"]*"|="[^"]*\?[^"]*"'
    r'|data-testid="(?:filter-error|driver-choices-none)">[^<]*<'
    r'|<li class="chip" data-testid="filter-chip">.*?</li>',
    re.DOTALL,
)


def _text(response: Any) -> str:
    if getattr(response, "streaming", False):
        return b"".join(response.streaming_content).decode("utf-8-sig")
    return _ECHOES.sub("", response.content.decode())


def _walk(side: Side, other: Side) -> list[str]:
    """What `side`'s manager was shown of `other`: each problem in a line."""
    problems = []
    for name, requests in _paths(side, other).items():
        for method, path, data in requests:
            response = _send(side.client, method, path, data)
            status = response.status_code
            if method.startswith("404"):
                if status != 404:
                    problems.append(f"{name} {path}: {status}, not 404")
            elif status >= 400 and not (name == "fleet:app_open" and status == 404):
                problems.append(f"{name} {path}: {status}")
            text = _text(response)
            leaked = [word for word in other.forbidden() if word in text]
            if leaked and status != 404:
                problems.append(f"{name} {method} {path} shows {leaked}")
            elif leaked:  # a 404 page that names what was asked says nothing it did not know
                asked = plates.normalize(path)
                leaked = [w for w in leaked if plates.normalize(w) not in asked]
                if leaked:
                    problems.append(f"{name} 404 {path} shows {leaked}")
    return problems


def _url_names() -> set[str]:
    """Every named URL of the portal outside the parts that show no fleet data."""
    names: set[str] = set()

    def walk(patterns: list[Any], prefix: str, namespace: str) -> None:
        for pattern in patterns:
            route = prefix + str(pattern.pattern)
            if any(route.startswith(part) for part in NOT_ABOUT_VEHICLES_UNDER):
                continue
            if isinstance(pattern, URLResolver):
                inner = pattern.namespace or namespace
                walk(pattern.url_patterns, route, f"{inner}:" if pattern.namespace else namespace)
            elif isinstance(pattern, URLPattern):
                assert pattern.name, f"{route} has no name"
                names.add(f"{namespace}{pattern.name}")

    walk(get_resolver().url_patterns, "", "")
    return names


def test_every_page_is_walked_or_says_why_not(sides: list[Side]) -> None:
    a, b = sides
    walked = set(_paths(a, b))
    assert _url_names() == walked | set(NOT_ABOUT_VEHICLES), (
        f"not walked: {_url_names() - walked - set(NOT_ABOUT_VEHICLES)}; "
        f"gone: {(walked | set(NOT_ABOUT_VEHICLES)) - _url_names()}"
    )


@pytest.mark.parametrize("who", ["A", "B"])
def test_a_manager_sees_nothing_of_the_other_group(sides: list[Side], who: str) -> None:
    side, other = sides if who == "A" else sides[::-1]

    assert _walk(side, other) == []


@pytest.mark.parametrize("who", ["A", "B"])
def test_the_other_groups_driver_is_nobody_to_a_manager(sides: list[Side], who: str) -> None:
    """What the walk leaves out as echoes: typed, the other group's driver's name says what
    a name nobody has says."""
    side, other = sides if who == "A" else sides[::-1]
    nobody = "Zuleica Quixabeira"
    said = {}
    for typed in (other.driver_name, nobody):
        page = side.client.get("/fines/", {"driver": typed}).content.decode()
        errors = re.findall(r'data-testid="(?:filter-error|driver-found)"[^>]*>([^<]*)<', page)
        picker = side.client.get("/fines/drivers/", {"driver": typed}, headers=HTMX).content
        said[typed] = ([e.replace(typed, "…") for e in errors], picker.decode().replace(typed, "…"))
    assert said[nobody][0], "no error for a name nobody has"
    assert said[other.driver_name] == said[nobody]


def test_a_manager_follows_the_requests_of_their_vehicles(sides: list[Side], emulator: Any) -> None:
    """A request seen on the page of a vehicle of theirs, or whose status names one. Where
    the API says neither (the spec promises no request id in a vehicle's view, nor a plate
    in a request's status: the emulator's minimal mode), the portal cannot tell whose it
    is, and a scoped manager does not see it."""
    for side in sides:
        response = side.client.get(f"/crlv/requests/{side.request_id}/")
        if emulator.minimal:
            assert response.status_code == 404
        else:
            assert response.status_code == 200
            assert "data-status=" in response.text


def test_each_manager_sees_their_own_group(sides: list[Side]) -> None:
    """The walk's other side: the same pages show a manager their own vehicles and records
    (else the walk would pass on pages that show nothing to anyone)."""
    for side in sides:
        _owns(side)


def _owns(side: Side) -> None:
    own = side.plates[0]
    checks: list[tuple[str, Callable[[str], bool]]] = [
        ("/vehicles/", lambda text: all(plates.display(p) in text for p in side.plates)),
        (f"/vehicles/?q={own}", lambda text: plates.display(own) in text),
        ("/vehicles/export.csv", lambda text: text.count("\n") == 1 + len(side.plates)),
        ("/fines/", lambda text: side.secret in text),
        ("/fines/export.csv", lambda text: side.secret in text),
        (f"/fines/?driver={side.driver}", lambda text: side.secret in text),
        (f"/fines/?driver={side.driver_name}", lambda text: side.secret in text),
        (f"/fines/drivers/?driver={side.driver_name[:12]}", lambda text: side.driver_name in text),
        ("/notifications/", lambda text: side.secret in text),
        (f"/fines/{side.fine}/", lambda text: side.secret in text),
        (f"/notifications/{side.notification}/", lambda text: side.secret in text),
        (f"/drivers/{side.driver}/", lambda text: side.secret in text),
        (f"/vehicles/{own}/", lambda text: side.secret in text),
        ("/", lambda text: side.secret not in text and "1 vehicle" not in text),
    ]
    for path, shows in checks:
        response = side.client.get(path)
        assert response.status_code == 200, (side.name, path, response.status_code)
        assert shows(_text(response)), f"{side.name} {path}"
    dashboard = side.client.get("/", headers={"Accept-Language": "en"}).content.decode()
    assert f"{float(side.amount):,.2f}" in dashboard  # its untreated R$
    assert side.client.get(f"/vehicles/{own}/crlv/download").status_code != 404
