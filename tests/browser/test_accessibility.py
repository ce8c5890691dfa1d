"""axe-core (pinned: axe-playwright-python in requirements-dev.txt ships it) over every page
a manager and an administrator can reach, in Portuguese and English, at a laptop's and a
phone's width: no violation at any impact, best practices included.

A failure lists every violation as `rule (impact) on page at width: target`, so it says
what to fix and where.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from axe_playwright_python.sync_playwright import Axe

from fleet import plates
from fleet.models import CnhLookup, CnhLookupStatus, Fine, Notification
from fleet.services.cnh import cnh_lookup_create
from tests.conftest import Emulator

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WIDTHS = {"desktop": {"width": 1280, "height": 800}, "phone": {"width": 375, "height": 812}}
LOG_IN = {
    "pt-BR": ("Nome de usuário", "Senha", "Entrar"),
    "en-US": ("Username", "Password", "Log in"),
}
CPF = "529.982.247-25"
NOT_FOUND = "/no/such/page/"
AXE = Axe()


def wait_for(condition: Any, what: str) -> None:
    deadline = time.monotonic() + 15
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


@pytest.fixture
def records(live_server: Any, emulator: Emulator, db_worker: Any) -> None:
    """Fines and notifications, sent by the emulator like the platform sends them."""
    emulator.control(
        "POST", "webhooks", url=f"{live_server.url}/webhooks/fleet/dev-webhook-token/", count=12
    )
    wait_for(
        lambda: Fine.objects.exists() and Notification.objects.exists(),
        "the worker did not process the deliveries",
    )


def manager_pages(manager: Any, emulator: Emulator) -> list[str]:
    """Every page of the portal a manager reaches, with something on each."""
    # A vehicle with fines, so that its page lists them.
    plate = plates.normalize(Fine.objects.exclude(registration="").first().plate)
    crlv = emulator.create_crlv_request(plate, pending_seconds=0, in_progress_seconds=0)
    lookup = cnh_lookup_create(owner=manager, cpfs=[CPF], batch=False, purpose="periodic")
    wait_for(
        lambda: CnhLookup.objects.get(pk=lookup.pk).status == CnhLookupStatus.DONE,
        "the worker did not finish the CNH lookup",
    )
    # A driver of the fleet, whose page lists their vehicles.
    driver = next(v["driver_id"] for v in emulator.vehicles() if v.get("driver_id"))
    return [
        "/",
        "/vehicles/",
        f"/vehicles/{plate}/",
        f"/crlv/requests/{crlv['requestId']}/",
        "/fines/",
        Fine.objects.first().get_absolute_url(),
        "/notifications/",
        Notification.objects.first().get_absolute_url(),
        f"/fines/?month={Fine.objects.exclude(occurred_at=None).first().occurred_at:%Y-%m}",
        f"/drivers/{driver}/",
        "/drivers/cnh/",
        lookup.get_absolute_url(),
        "/app/",
        "/app/account",
        "/account/alerts/",
        NOT_FOUND,
    ]


def admin_pages() -> list[str]:
    fine = Fine.objects.first()
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
    ]


def violations(page: Any, path: str) -> list[str]:
    """What axe finds on `path`, at each width, one line per element; and a page wider
    than the screen."""
    found = []
    response = page.goto(path)
    # The page itself, not the sign-in page or an error in its place.
    assert response.url.endswith(path), f"{path} sent to {response.url}"
    assert response.status == (404 if path == NOT_FOUND else 200), f"{path}: {response.status}"
    page.wait_for_load_state("networkidle")
    for width, viewport in WIDTHS.items():
        page.set_viewport_size(viewport)
        for rule in AXE.run(page).response["violations"]:
            for node in rule["nodes"]:
                target = " ".join(str(part) for part in node["target"])
                found.append(f"{rule['id']} ({rule['impact']}) on {path} at {width}: {target}")
        # The phone layout: wide tables scroll in their own box, never the whole page.
        overflow = page.evaluate(
            "document.documentElement.scrollWidth - document.documentElement.clientWidth"
        )
        if overflow:
            found.append(f"page scrolls sideways by {overflow} px on {path} at {width}")
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

    assert not found, f"{len(found)} axe violation(s) in {locale}:\n" + "\n".join(found)


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
