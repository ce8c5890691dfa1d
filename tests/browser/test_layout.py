"""On a phone's screen the pages fit its width: a wide table scrolls inside its own
box, and nothing makes the whole page scroll sideways."""

from __future__ import annotations

import time

import pytest
from playwright.sync_api import expect

from fleet.models import (
    CnhItemStatus,
    CnhLookup,
    CnhLookupItem,
    CnhLookupStatus,
    Fine,
    Notification,
)
from tests.browser.conftest import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PHONE = {"width": 390, "height": 844}
LAPTOP = {"width": 1280, "height": 800}


def test_every_page_fits_a_phone_and_its_tables_scroll_inside_their_box(
    browser, live_server, manager, emulator, fleet_settings, db_worker
):
    emulator.control(
        "POST", "webhooks", url=f"{live_server.url}/webhooks/fleet/dev-webhook-token/", count=12
    )
    deadline = time.monotonic() + 30  # the worker runs each second: thirty times that
    while not (Fine.objects.exists() and Notification.objects.exists()):
        assert time.monotonic() < deadline, "the worker did not process the deliveries"
        time.sleep(0.05)
    plate = emulator.vehicles()[0]["car_plate"]
    context = browser.new_context(base_url=live_server.url, locale="pt-BR", viewport=PHONE)
    context.set_default_timeout(10_000)
    page = context.new_page()
    log_in(page, "manager", "manager-demo-password")

    for path, table in [
        ("/", None),
        ("/vehicles/", "vehicle-table"),
        (f"/vehicles/{plate}/", None),
        ("/fines/", "fine-table"),
        ("/notifications/", "notification-table"),
        ("/drivers/cnh/", None),
    ]:
        page.goto(path)
        if table is not None:
            shown = page.get_by_test_id(table)
            expect(shown).to_be_visible()
            # Wider than the phone, so it has to scroll inside its box.
            assert shown.evaluate("t => t.parentElement.scrollWidth > t.parentElement.clientWidth")
        overflow = page.evaluate(
            "document.documentElement.scrollWidth - document.documentElement.clientWidth"
        )
        assert overflow == 0, f"{path} scrolls sideways by {overflow} px on a phone"
        if path == "/":
            # The chart's months and counts as tall on the screen as the page's small text.
            heights = page.locator(".chart__label, .chart__value").evaluate_all(
                "texts => texts.map(t => t.getBoundingClientRect().height)"
            )
            assert len(heights) == 24
            assert min(heights) >= 11, f"the chart's text is {min(heights):.1f} px high"
    context.close()

    # On a laptop the fines, the widest table, fit without scrolling at all.
    context = browser.new_context(base_url=live_server.url, locale="pt-BR", viewport=LAPTOP)
    page = context.new_page()
    log_in(page, "manager", "manager-demo-password")
    page.goto("/fines/")
    box = page.get_by_test_id("fine-table").locator("xpath=..")
    assert box.evaluate("b => b.scrollWidth - b.clientWidth") == 0
    context.close()


def test_a_licence_with_long_members_the_portal_does_not_know_fits_a_phone(
    browser, live_server, manager, fleet_settings
):
    # Members a vendor may add are listed as sent; some are one long word.
    checksum, link = "d5c7952cc10858dfc3a14b65f68f4559" * 2, "https://detran.example/" + "a" * 80
    lookup = CnhLookup.objects.create(
        owner=manager, kind="single", purpose="periodic", status=CnhLookupStatus.DONE
    )
    CnhLookupItem.objects.create(
        lookup=lookup,
        position=0,
        cpf="52998224725",
        status=CnhItemStatus.OK,
        result={"name": "MARIA DA SILVA", "checksum": checksum, "x-very-long-member-name": link},
    )
    context = browser.new_context(base_url=live_server.url, locale="pt-BR", viewport=PHONE)
    context.set_default_timeout(10_000)
    page = context.new_page()
    log_in(page, "manager", "manager-demo-password")
    page.goto(lookup.get_absolute_url())

    expect(page.get_by_test_id("cnh-extra").first).to_have_text(checksum)
    overflow = page.evaluate(
        "document.documentElement.scrollWidth - document.documentElement.clientWidth"
    )
    assert overflow == 0, f"the licence scrolls sideways by {overflow} px on a phone"
    context.close()


# The width a placeholder's text takes in its field's font, against the room inside it.
_PLACEHOLDERS_CUT = """() => {
  const canvas = document.createElement("canvas").getContext("2d");
  return [...document.querySelectorAll("input[placeholder]")]
    .filter(field => field.offsetParent !== null)
    .map(field => {
      const style = getComputedStyle(field);
      canvas.font = `${style.fontWeight} ${style.fontSize} ${style.fontFamily}`;
      const padding = parseFloat(style.paddingLeft) + parseFloat(style.paddingRight);
      const room = field.clientWidth - padding;
      return [field.name, field.placeholder, canvas.measureText(field.placeholder).width - room];
    })
    .filter(([, , over]) => over > 0.5);
}"""


@pytest.mark.parametrize("locale", ["pt-BR", "en-GB"])
@pytest.mark.parametrize("viewport", [PHONE, LAPTOP], ids=["phone", "laptop"])
def test_no_placeholder_is_cut_off(browser, live_server, manager, emulator, locale, viewport):
    context = browser.new_context(base_url=live_server.url, locale=locale, viewport=viewport)
    context.set_default_timeout(10_000)
    page = context.new_page()
    page.goto("/accounts/login/")
    page.locator("#id_username").fill("manager")
    page.locator("#id_password").fill("manager-demo-password")
    page.locator("form button[type=submit]").first.click()
    page.wait_for_url("**/")
    cut = {}
    for path in ("/vehicles/", "/fines/", "/notifications/", "/drivers/cnh/"):
        page.goto(path)
        cut[path] = page.evaluate(_PLACEHOLDERS_CUT)
    context.close()
    assert {path: fields for path, fields in cut.items() if fields} == {}
