"""What the pages keep for speed is kept per viewer: one manager's page, or a fragment of
it, is never the answer to another who sees another part of the fleet; a cache declared
the same for everyone is, rendered for two different parts of the fleet."""

from __future__ import annotations

import ast
import functools
import json
import re
from pathlib import Path

import pytest
from django.test import Client

from fleet import plates
from fleet.models import Driver, VehicleGroup, VehicleGroupMember
from fleet.services.driver_history import history_observe
from fleet.services.scopes import scope_of, vehicle_groups_changed
from fleet.services.vehicle_cache import current_snapshot
from fleet.views import vehicles as vehicle_views
from fleet.webhooks.processing import deliveries_process_received
from portal.lib import caches
from tests.views.test_vehicle_group_pages import regions

__all__ = ["regions"]  # the fixture

pytestmark = [pytest.mark.django_db, pytest.mark.scoped]

ENGLISH = {"Accept-Language": "en"}
ROOT = Path(__file__).resolve().parents[2]
ROW = re.compile(r'<tr data-testid="fine".*?</tr>', re.DOTALL)


@pytest.fixture
def groups(regions):
    """The regions of the vehicle group pages' tests, by name: São Paulo (4 vehicles), Rio (2)."""
    _fleet, made = regions
    return {name: group for name, (group, _plates) in made.items()}


def deliver_fine(number: int, plate: str) -> None:
    answer = Client().post(
        "/webhooks/fleet/dev-webhook-token/",
        data=json.dumps(
            {"frame": {"id": number, "treated": False, "carPlate": plate}, "linkFrame": None}
        ),
        content_type="application/json",
    )
    assert answer.status_code == 202
    deliveries_process_received()


def client_of(django_user_model, username, *groups, **fields) -> Client:
    user = django_user_model.objects.create_user(username, password="pw-123456", **fields)
    for group in groups:
        VehicleGroupMember.objects.create(group=group, user=user)
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.parametrize("htmx", [False, True], ids=["page", "fragment"])
def test_the_vehicle_lists_total_is_the_viewers_after_the_whole_fleets(
    django_user_model, groups, htmx
):
    """The same address, first asked by someone who sees the whole fleet: a manager of
    two regions reads their own total, not the fleet's."""
    sp, rio = groups["São Paulo"], groups["Rio"]
    everyone = client_of(django_user_model, "ana", is_staff=True, is_superuser=True)
    regina = client_of(django_user_model, "regina", sp, rio)
    headers = {**ENGLISH, **({"HX-Request": "true"} if htmx else {})}
    url = f"/vehicles/?group={sp.pk}"

    assert "4 vehicles of 200" in everyone.get(url, headers=headers).text
    assert "4 vehicles of 6" in regina.get(url, headers=headers).text
    assert "4 vehicles of 200" in everyone.get(url, headers=headers).text


def test_the_fines_filter_offers_only_the_drivers_the_viewer_sees(
    django_user_model, emulator, fleet_settings
):
    """A name that fits several drivers offers those the viewer sees: the form asked
    the same way by a manager of another region offers theirs, not the first's."""
    drivers: dict[int, str] = {}
    for vehicle in emulator.vehicles():
        if vehicle["driver_id"] is not None and vehicle["driver_id"] not in drivers:
            drivers[vehicle["driver_id"]] = plates.registration(vehicle["car_plate"])
    (d1, p1), (d2, p2), (d3, p3), (d4, p4) = list(drivers.items())[:4]
    # Two drivers called Ana in each region: the name fits two, whoever asks.
    named = {"Norte": [(d1, p1, "Ana Nortista"), (d2, p2, "Ana Amazonense")]}
    named["Sul"] = [(d3, p3, "Ana Gaúcha"), (d4, p4, "Ana Catarinense")]
    clients = []
    for name, members in named.items():
        group = VehicleGroup.objects.create(name=name)
        for driver_id, registration, driver_name in members:
            group.plates.create(registration=registration)
            Driver.objects.create(driver_id=driver_id, name=driver_name)
        vehicle_groups_changed([group.pk])
        clients.append(client_of(django_user_model, f"manager-{name.lower()}", group))
    history_observe(current_snapshot()[0])  # who had each vehicle, as a refresh takes it in
    for number, (_driver, registration, _name) in enumerate(
        [*named["Norte"], *named["Sul"]], start=1
    ):
        deliver_fine(number, registration)

    north = clients[0].get("/fines/?driver=Ana", headers=ENGLISH).text
    south = clients[1].get("/fines/?driver=Ana", headers=ENGLISH).text

    assert "Ana Nortista" in north
    assert "Ana Gaúcha" not in north
    assert "Ana Gaúcha" in south
    assert "Ana Nortista" not in south


def test_each_cache_kept_for_everyone_is_the_same_for_two_scopes(django_user_model, groups, rf):
    """The caches the vehicle list declares the same for everyone, computed for a manager of
    one region and for someone who sees the whole fleet: the same answers."""
    sp = groups["São Paulo"]
    regional = client_of(django_user_model, "paulo", sp)
    everyone = client_of(django_user_model, "ana", is_staff=True, is_superuser=True)
    query = f"group={sp.pk}&q=a&active=maybe"
    answers = []
    for client in (regional, everyone):
        user = django_user_model.objects.get(pk=client.session["_auth_user_id"])
        scope = scope_of(user)
        with caches.caches_off():
            filters = vehicle_views._filters(query)
            named = tuple(vehicle_views._group_named(scope, filters["group"]).items())
            chips = vehicle_views._applied("/vehicles/", query, named)
            request = rf.get(f"/vehicles/?{query}")
            request.user = user
            context: dict[str, object] = {"chips": chips[0], "form": None}
            shown = vehicle_views._applied_shown.render(
                request,
                "fleet/_record_parts.html#filter_errors",
                functools.partial(dict, context),
                parts=(chips[0], "/vehicles/"),
            )
        answers.append((dict(filters), chips, str(shown)))
    assert answers[0] == answers[1]


def test_no_view_builds_a_cache_key_by_hand() -> None:
    """The views keep nothing for speed but through `portal.lib.caches`: no `RenderCache`,
    no `lru_cache`, no Django cache of their own."""
    found = []
    for path in sorted((ROOT / "fleet" / "views").glob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module in (
                "django.core.cache",
                "functools",
                "portal.lib.render_cache",
            ):
                found.append(f"{path.name}: from {node.module} import ...")
            if isinstance(node, ast.Attribute) and node.attr in ("lru_cache", "cache"):
                found.append(f"{path.name}:{node.lineno}: {node.attr}")
    assert not found


def test_every_declared_cache_says_whose_answers_it_keeps() -> None:
    declared = caches.declared()
    assert {"vehicles.results", "vehicles.page", "fines.filter_form"} <= set(declared)
    assert declared["vehicles.results"] == "per viewer"
    assert declared["vehicles.chips"] == "for everyone"


def test_a_lists_row_kept_for_everyone_is_the_same_for_two_scopes(django_user_model, groups):
    """A fine's row, rendered for a manager of its region and for someone who sees the
    whole fleet, caches off: the same HTML (so one may be kept for the other)."""
    sp = groups["São Paulo"]
    deliver_fine(5, sp.plates.values_list("registration", flat=True)[0])
    shown = []
    for client in (
        client_of(django_user_model, "paulo", sp),
        client_of(django_user_model, "ana", is_staff=True, is_superuser=True),
    ):
        with caches.caches_off():
            page = client.get("/fines/", headers={**ENGLISH, "HX-Request": "true"}).text
        rows = ROW.findall(page)
        assert len(rows) == 1
        shown.append(rows[0])
    assert shown[0] == shown[1]


# Each cache declared the same for everyone, and the test above that computes it for two
# parts of the fleet and compares, or why its answer cannot name a viewer.
FOR_EVERYONE = {
    "vehicles.chips": "test_each_cache_kept_for_everyone_is_the_same_for_two_scopes",
    "rows": "test_a_lists_row_kept_for_everyone_is_the_same_for_two_scopes",
    "dashboard.money_html": "test_the_money_fragment_is_the_same_for_two_viewers_of_one_part",
    "vehicles.ungrouped": "the whole fleet's count of vehicles in no group, shown to it alone",
}


def test_every_cache_kept_for_everyone_is_compared_for_two_scopes() -> None:
    import fleet.services.dashboard
    import fleet.services.list_walks
    import fleet.services.vehicles
    import fleet.views.fines
    import fleet.views.rows  # noqa: F401 -- the modules that declare caches

    for_everyone = {name for name, whose in caches.declared().items() if whose == "for everyone"}
    assert for_everyone == set(FOR_EVERYONE)
    for name, test in FOR_EVERYONE.items():
        if test.startswith("test_"):
            assert callable(globals().get(test)), f"{name}: {test} is not in this module"


def test_the_money_fragment_is_the_same_for_two_viewers_of_one_part(
    django_user_model, groups
) -> None:
    """The dashboard's fragment about money is kept by the figures it shows, whose key
    names their part of the fleet: rendered from the same figures it is the same HTML
    whoever asks, and two parts' figures never share a key."""
    from fleet.services.dashboard import fine_figures, fine_figures_html

    sp = groups["São Paulo"]
    paulo = django_user_model.objects.get(
        pk=client_of(django_user_model, "paulo", sp).session["_auth_user_id"]
    )
    ana = django_user_model.objects.create_superuser("ana", password="pw")
    regional, whole = fine_figures(scope=scope_of(paulo)), fine_figures(scope=scope_of(ana))
    assert scope_of(paulo).key in regional.key
    assert regional.key != whole.key
    with caches.caches_off():
        rendered = [fine_figures_html(regional, language="en") for _viewer in (paulo, ana)]
    assert rendered[0] == rendered[1]
