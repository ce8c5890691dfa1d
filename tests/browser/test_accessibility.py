"""axe-core (pinned: axe-playwright-python in requirements-dev.txt ships it) over every page
a manager and an administrator can reach, in Portuguese and English, at a laptop's, a small
laptop's, a tablet's and a phone's width: no violation at any impact, best practices
included; and no page that scrolls sideways or has content wider than its box, with values
as long as real ones get (a seven-figure amount, a 40-character driver's name, a Mercosul
plate written with a hyphen).

A failure lists every violation as `rule (impact) on page at width: target`, and every box
its content overflows as `element "text" by N px on page at width`, so it says what to fix
and where.
"""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

import pytest
from axe_playwright_python.sync_playwright import Axe
from django.utils import timezone

from fleet import plates
from fleet.models import (
    CnhLookup,
    CnhLookupStatus,
    Driver,
    Fine,
    Notification,
    VehicleGroup,
    VehicleGroupPlate,
)
from fleet.services.cnh import cnh_lookup_create
from tests.conftest import Emulator

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Width: height, in px (a laptop, a small laptop, a tablet, a phone); axe runs at the first
# and the last (the same page in between: the layout is what changes, and is checked).
WIDTHS = {1280: 800, 1024: 768, 768: 1024, 390: 844}
AXE_WIDTHS = (1280, 390)
LOG_IN = {
    "pt-BR": ("Nome de usuário", "Senha", "Entrar"),
    "en-US": ("Username", "Password", "Log in"),
}
CPF = "529.982.247-25"
NOT_FOUND = "/no/such/page/"
AXE = Axe()
# As long as real values get.
LONG_AMOUNT = "1234567.89"
LONG_NAME = "Ana Beatriz Vasconcelos Albuquerque Lima"
LONG_FINE_ID = 990_001
MINUTE = timedelta(minutes=1)
# The boxes in `main` whose content is wider than they are. A box that scrolls or clips
# on purpose (`overflow-x` other than visible, a `.table-scroll`) is left out, and so are
# the fields, which scroll the text typed in them.
OVERFLOWING = r"""() => {
    const main = document.querySelector("main");
    if (!main) return [];
    const found = [];
    for (const box of [main, ...main.querySelectorAll("*")]) {
        if (["INPUT", "SELECT", "TEXTAREA"].includes(box.tagName)) continue;
        if (box.classList.contains("table-scroll")) continue;
        // Django admin's two columns: its sidebar stands in the column's margin on purpose.
        if (box.id === "content" && /\bcol(MS|SM)\b/.test(box.className)) continue;
        if (getComputedStyle(box).overflowX !== "visible") continue;
        const excess = box.scrollWidth - box.clientWidth;
        if (excess <= 1) continue;
        const classes = (box.getAttribute("class") || "").trim().split(/\s+/).filter(Boolean);
        const name = [box.tagName.toLowerCase(), ...classes].join(".");
        const id = box.dataset && box.dataset.testid ? `[data-testid=${box.dataset.testid}]` : "";
        const text = box.textContent.replace(/\s+/g, " ").trim().slice(0, 50);
        found.push(`${name}${id} "${text}" by ${excess} px`);
    }
    return found;
}"""


def wait_for(condition: Any, what: str) -> None:
    deadline = time.monotonic() + 30
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


@pytest.fixture
def records(live_server: Any, emulator: Emulator, db_worker: Any) -> None:
    """Fines and notifications, sent by the emulator like the platform sends them; among
    them a fine of R$ 1.234.567,89 on a Mercosul plate written with a hyphen, attributed
    to a driver with a 40-character name, treated and untreated again (its handling
    history, which the pages open, lists the changes)."""
    mercosul = (
        v for v in emulator.vehicles() if plates.registration(v["car_plate"]) == v["car_plate"]
    )
    vehicle = next(v for v in mercosul if v.get("driver_id"))
    Driver.objects.create(driver_id=vehicle["driver_id"], name=LONG_NAME)
    plate = plates.normalize(vehicle["car_plate"])
    long_fine = {
        "id": LONG_FINE_ID,
        "carPlate": f"{plate[:3]}-{plate[3:]}",
        "autoInfracao": "E99000001",
        "description": "Transitar em velocidade superior à máxima permitida em mais de 50%",
        "occurredAt": timezone.now().isoformat(timespec="seconds").replace("+00:00", "Z"),
        "amount": LONG_AMOUNT,
        "treated": False,
    }
    webhook = f"{live_server.url}/webhooks/fleet/dev-webhook-token/"
    emulator.control("POST", "webhooks", url=webhook, count=12)
    now = timezone.now()
    handled = [
        {"frame": long_fine | {"treated": treated, "updatedAt": _iso(now + minutes * MINUTE)}}
        for minutes, treated in ((1, False), (2, True), (3, False))
    ]
    emulator.control("POST", "webhooks", url=webhook, events=handled)

    def long_fine_ready() -> bool:
        found = Fine.objects.filter(
            external_id=str(LONG_FINE_ID), driver_id=vehicle["driver_id"]
        ).first()
        return found is not None and len(found.treated_changes()) == 3

    wait_for(
        lambda: Notification.objects.exists() and long_fine_ready(),
        "the worker did not process the deliveries and attribute the long fine to its driver",
    )


def _iso(moment: Any) -> str:
    return moment.isoformat(timespec="seconds").replace("+00:00", "Z")


def manager_pages(manager: Any, emulator: Emulator) -> list[str]:
    """Every page of the portal a manager reaches, with something on each."""
    # The vehicle, the fine and the driver with the longest values.
    fine = Fine.objects.get(external_id=str(LONG_FINE_ID))
    plate = plates.normalize(fine.plate)
    crlv = emulator.create_crlv_request(plate, pending_seconds=0, in_progress_seconds=0)
    lookup = cnh_lookup_create(owner=manager, cpfs=[CPF], batch=False, purpose="periodic")
    wait_for(
        lambda: CnhLookup.objects.get(pk=lookup.pk).status == CnhLookupStatus.DONE,
        "the worker did not finish the CNH lookup",
    )
    return [
        "/",
        "/vehicles/",
        f"/vehicles/{plate}/",
        f"/crlv/requests/{crlv['requestId']}/",
        "/fines/",
        fine.get_absolute_url(),
        "/fines/indications/",
        "/notifications/",
        Notification.objects.first().get_absolute_url(),
        f"/fines/?month={fine.occurred_at:%Y-%m}",
        f"/drivers/{fine.driver_id}/",
        "/drivers/cnh/",
        lookup.get_absolute_url(),
        "/app/",
        "/app/account",
        "/account/alerts/",
        NOT_FOUND,
    ]


def regional_manager() -> tuple[str, str]:
    """A manager who sees two groups with long names (shown under their name in the
    header), one of them holding the vehicle of the longest fine; their login."""
    from django.contrib.auth.models import User

    user = User.objects.create_user("regional", password="regional-demo-password")
    user.user_permissions.clear()  # scoped: their groups only
    plate = Fine.objects.get(external_id=str(LONG_FINE_ID)).registration
    for name in ("Região Metropolitana de São Paulo, Zona Leste", "Campinas e Região"):
        group = VehicleGroup.objects.create(name=name)
        group.plates.create(registration=plate)
        group.members.create(user=user)
    return "regional", "regional-demo-password"


def admin_pages() -> list[str]:
    fine = Fine.objects.first()
    group = VehicleGroup.objects.create(name=f"Frota {LONG_NAME}", description=LONG_NAME)
    VehicleGroupPlate.objects.bulk_create(
        VehicleGroupPlate(group=group, registration=f"ABC{number // 100}D{number % 100:02d}")
        for number in range(150)
    )
    return [
        "/",
        "/admin/",
        "/admin/fleet/fine/",
        f"/admin/fleet/fine/{fine.pk}/change/",
        "/admin/fleet/webhookdelivery/",
        "/admin/fleet/driver/",
        "/admin/fleet/cnhlookup/",
        "/admin/alerts/alert/",
        "/admin/alerts/alertdefaults/",
        "/admin/alerts/alertpause/",
        "/admin/socialaccount/socialaccount/add/",
        "/admin/fleet/vehiclegroup/",
        f"/admin/fleet/vehiclegroup/{group.pk}/change/",
        "/admin/fleet/vehiclegroup/import/",
    ]


def violations(page: Any, path: str) -> list[str]:
    """What axe finds on `path` at a laptop's and a phone's width, one line per element;
    at every width, a page wider than the screen and a box in `main` whose content is wider
    than it (Django's admin too, with the portal's corrections in static/css/admin.css)."""
    found = []
    response = page.goto(path)
    # The page itself, not the sign-in page or an error in its place.
    assert response.url.endswith(path), f"{path} sent to {response.url}"
    assert response.status == (404 if path == NOT_FOUND else 200), f"{path}: {response.status}"
    page.wait_for_load_state("networkidle")
    # What a click reveals is checked too: a table in a closed `details` still has to fit.
    page.evaluate("document.querySelectorAll('main details').forEach(d => { d.open = true; })")
    for width, height in WIDTHS.items():
        page.set_viewport_size({"width": width, "height": height})
        at = f"on {path} at {width} px"
        if width in AXE_WIDTHS:
            for rule in AXE.run(page).response["violations"]:
                for node in rule["nodes"]:
                    target = " ".join(str(part) for part in node["target"])
                    found.append(f"{rule['id']} ({rule['impact']}) {at}: {target}")
        # Wide tables scroll in their own box, never the whole page.
        overflow = page.evaluate(
            "document.documentElement.scrollWidth - document.documentElement.clientWidth"
        )
        if overflow:
            found.append(f"page scrolls sideways by {overflow} px {at}")
        found += [f"{box} {at}" for box in page.evaluate(OVERFLOWING)]
    return found


def signed_in(browser: Any, live_server: Any, locale: str, username: str, password: str) -> Any:
    context = browser.new_context(base_url=live_server.url, locale=locale)
    context.set_default_timeout(15_000)
    page = context.new_page()
    found = violations(page, NOT_FOUND) + violations(page, "/accounts/login/")  # signed out
    label_username, label_password, button = LOG_IN[locale]
    page.get_by_label(label_username).fill(username)
    page.get_by_label(label_password).fill(password)
    page.get_by_role("button", name=button, exact=True).click()
    page.wait_for_url(f"{live_server.url}/")
    return page, found


@pytest.mark.parametrize("locale", ["pt-BR", "en-US"])
def test_every_page_has_no_axe_violation(
    browser, live_server, fleet_settings, manager, admin_user, emulator, records, locale
):
    pages = manager_pages(manager, emulator)
    found: list[str] = []

    page, at_login = signed_in(browser, live_server, locale, "manager", "manager-demo-password")
    found += at_login
    for path in pages:
        found += violations(page, path)
    page.context.close()

    page, _ = signed_in(browser, live_server, locale, admin_user.username, "password")
    for path in admin_pages():
        found += violations(page, path)
    page.context.close()

    page, _ = signed_in(browser, live_server, locale, *regional_manager())
    for path in ("/", "/vehicles/", "/fines/", "/app/"):
        found += violations(page, path)
    page.context.close()

    assert not found, f"{len(found)} problem(s) in {locale}:\n" + "\n".join(found)


def test_the_keyboard_focus_is_always_visible(
    browser, live_server, fleet_settings, manager, records
):
    page, _ = signed_in(browser, live_server, "pt-BR", "manager", "manager-demo-password")
    page.goto("/fines/")

    page.keyboard.press("Tab")
    skip = page.get_by_role("link", name="Pular para o conteúdo")
    assert skip.evaluate("link => link === document.activeElement")
    assert skip.bounding_box()["y"] >= 0  # brought on screen
    shown = []
    for _ in range(80):  # every link, field and button of the page, in order
        focused = page.evaluate(
            """() => {
                const element = document.activeElement, style = getComputedStyle(element);
                const text = element.textContent.trim();
                const field = `${element.name || ""} ${element.type || ""}`;
                const name = `${element.tagName}.${element.className} ${field} ${text}`;
                return [name.slice(0, 80), style.outlineStyle, style.outlineWidth];
            }"""
        )
        element, outline_style, outline_width = focused
        if element.startswith("BODY"):  # past the last one
            break
        if element.startswith("INPUT.") and element.split()[2] in ("date", "month"):
            # Chromium keeps the focus of a date or month field on the part being typed
            # (day, month, year), which it highlights; the field itself matches no :focus.
            shown.append(element)
            page.keyboard.press("Tab")
            continue
        assert outline_style != "none", element
        assert float(outline_width.removesuffix("px")) >= 2, element
        shown.append(element)
        page.keyboard.press("Tab")
    assert any(element.startswith("A.icon-button") for element in shown), shown
    page.context.close()
