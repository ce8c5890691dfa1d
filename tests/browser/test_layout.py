"""On a phone's screen the pages fit its width: a list's rows are cards, each label beside
its value, its filters fold behind one control, a wide table scrolls inside its own box, and
nothing makes the whole page scroll sideways; on a laptop the lists' filters are open and
their rows fit, and so do the vehicle page's fines with every fact a fine carries."""

from __future__ import annotations

import re
import time
from datetime import timedelta
from typing import Any

import pytest
import requests
from django.utils import timezone
from playwright.sync_api import expect

from fleet.models import (
    CnhItemStatus,
    CnhLookup,
    CnhLookupItem,
    CnhLookupStatus,
    Fine,
    Notification,
)
from fleet.webhooks.processing import deliveries_process_received
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
            # Each row a card as wide as the phone: nothing to scroll.
            assert (
                shown.evaluate("t => t.parentElement.scrollWidth - t.parentElement.clientWidth")
                == 0
            )
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


def _signed_in(context: Any) -> Any:
    """A page of `context` signed in as the demo manager, in the context's language."""
    context.set_default_timeout(10_000)
    page = context.new_page()
    page.goto("/accounts/login/")
    page.locator("#id_username").fill("manager")
    page.locator("#id_password").fill("manager-demo-password")
    page.locator("form button[type=submit]").first.click()
    page.wait_for_url("**/")
    return page


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
    page = _signed_in(context)
    cut = {}
    for path in ("/vehicles/", "/fines/", "/notifications/", "/drivers/cnh/"):
        page.goto(path)
        cut[path] = page.evaluate(_PLACEHOLDERS_CUT)
    context.close()
    assert {path: fields for path, fields in cut.items() if fields} == {}


# Elements of a list's rows that reach past the screen's edges, or past their own cell.
_OUTSIDE = """table => {
  const width = document.documentElement.clientWidth;
  return [...table.querySelectorAll("tbody td *")]
    .filter(element => element.getClientRects().length > 0)
    .map(element => [
      element, element.getBoundingClientRect(), element.closest("td").getBoundingClientRect(),
    ])
    .filter(([, box, cell]) =>
      box.left < -0.5 || box.right > width + 0.5 || box.right > cell.right + 0.5)
    .map(([element]) => element.outerHTML.slice(0, 120));
}"""


def _fines_and_notifications(live_server: Any) -> None:
    """Fines with everything a row shows (an opened handling history among them), and
    notifications, as the fleet platform sends them."""
    webhook = f"{live_server.url}/webhooks/fleet/dev-webhook-token/"
    events: list[dict[str, Any]] = [
        {
            "frame": {
                "id": 700 + number,
                "treated": False,
                "description": "Transitar em velocidade superior à máxima permitida em mais de 20%",
                "autoInfracao": f"E0100{number:05d}",
                "carPlate": "ABC1D23" if number % 2 else "ABC-1234",
                "amount": "1293.47",
                "occurredAt": "2026-06-08T12:49:00-03:00",
            },
            "linkFrame": f"https://autoridade.example/{number}.pdf" if number % 2 else None,
            "link": f"https://boletos.example/{number}" if number % 3 else None,
        }
        for number in range(8)
    ]
    # The first fine treated since: a history of two changes.
    events.append({**events[0], "frame": {**events[0]["frame"], "treated": True}})
    events += [
        {"notification": {"id": 800 + n, "title": "Recall do airbag", "treated": False}}
        for n in range(3)
    ]
    # The first notification treated since: its history too.
    events.append({"notification": {"id": 800, "title": "Recall do airbag", "treated": True}})
    for event in events:
        assert requests.post(webhook, json=event, timeout=10).status_code == 202
    deliveries_process_received()


@pytest.mark.parametrize("locale", ["pt-BR", "en-GB"])
def test_on_a_phone_the_lists_fold_their_filters_and_show_each_row_as_a_card(
    browser, live_server, manager, emulator, fleet_settings, locale
):
    _fines_and_notifications(live_server)
    context = browser.new_context(base_url=live_server.url, locale=locale, viewport=PHONE)
    page = _signed_in(context)

    for path, row, table in [
        ("/fines/?treated=0", "fine", "fine-table"),
        ("/vehicles/?active=1", "vehicle", "vehicle-table"),
        ("/notifications/", "notification", "notification-table"),
    ]:
        page.goto(path)
        fold = page.get_by_test_id("filters-fold")
        expect(fold.locator("form.filters")).to_be_hidden()
        first = (
            page.get_by_test_id(table).locator("tbody tr").first
            if row == "vehicle"
            else page.get_by_test_id(row).first
        )
        expect(first).to_be_visible()
        top = first.evaluate("row => row.getBoundingClientRect().top + window.scrollY")
        assert top < 600, f"{path}: the first row starts {top:.0f} px down"
        # The filters applied, as removable chips; the control says how many.
        if "?" in path:
            expect(page.get_by_test_id("filter-chip")).to_have_count(1)
            expect(page.get_by_test_id("filters-toggle")).to_contain_text("(1)")
        assert page.get_by_test_id(table).evaluate(_OUTSIDE) == [], path
        overflow = page.evaluate(
            "document.documentElement.scrollWidth - document.documentElement.clientWidth"
        )
        assert overflow == 0, f"{path} scrolls sideways by {overflow} px"
        # Unfolded, the filters are there to change.
        page.get_by_test_id("filters-toggle").click()
        expect(fold.locator("form.filters")).to_be_visible()

    # A chip's remove link shows the list without its filter.
    page.goto("/fines/?treated=0&q=velocidade")
    expect(page.get_by_test_id("filter-chip")).to_have_count(2)
    page.get_by_test_id("filter-chip").first.get_by_role("link").click()
    expect(page).to_have_url(re.compile(r"/fines/\?treated=0$"))
    expect(page.get_by_test_id("filter-chip")).to_have_count(1)
    expect(page.get_by_test_id("filters-toggle")).to_contain_text("(1)")

    # Every cell of a fine's card says what it holds, in the page's language.
    page.goto("/fines/")
    labels = (
        page.get_by_test_id("fine")
        .first.locator("td[data-label]")
        .evaluate_all("cells => cells.map(cell => getComputedStyle(cell, '::before').content)")
    )
    assert len(labels) == 6, labels
    assert all(label not in ("none", '""') for label in labels), labels
    context.close()


@pytest.mark.parametrize("locale", ["pt-BR", "en-GB"])
@pytest.mark.parametrize("width", [PHONE["width"], 1024, LAPTOP["width"]])
def test_an_opened_handling_history_fits_its_column_and_on_a_laptop_the_filters_are_open(
    browser, live_server, manager, emulator, fleet_settings, width, locale
):
    _fines_and_notifications(live_server)
    context = browser.new_context(
        base_url=live_server.url, locale=locale, viewport={"width": width, "height": 800}
    )
    page = _signed_in(context)
    for path, table in (("/fines/", "fine-table"), ("/notifications/", "notification-table")):
        page.goto(path)
        if width >= 1024:
            expect(page.locator("form.filters")).to_be_visible()
            expect(page.get_by_test_id("filters-toggle")).to_be_hidden()
        history = page.get_by_test_id("treated-history")
        expect(history).to_have_count(1)
        history.locator("summary").click()
        expect(history.locator("ol li")).to_have_count(2)
        past = history.evaluate(
            "h => { const cell = h.closest('td').getBoundingClientRect();"
            " return [...h.querySelectorAll('*')]"
            ".map(e => e.getBoundingClientRect().right - cell.right).filter(over => over > 0.5); }"
        )
        assert past == [], f"{path}: the history reaches {max(past):.0f} px past its column"
        if width == LAPTOP["width"]:
            # The whole row fits: no scrolling, every cell's content within it.
            assert page.get_by_test_id(table).evaluate(_OUTSIDE) == []
            box = page.get_by_test_id(table).locator("xpath=..")
            assert box.evaluate("b => b.scrollWidth - b.clientWidth") == 0
    context.close()


def _fines_with_every_fact(live_server: Any, plate: str) -> None:
    """Fines of `plate` as the platform's full mode sends them (code, tier, points, place,
    authority, deadlines sent or left to estimate), one of them treated and untreated
    again several times, and notifications of the same vehicle."""
    webhook = f"{live_server.url}/webhooks/fleet/dev-webhook-token/"
    notice = timezone.localdate() - timedelta(days=3)
    events: list[dict[str, Any]] = []
    for number in range(6):
        frame: dict[str, Any] = {
            "id": 900 + number,
            "treated": False,
            "description": "Transitar em velocidade superior à máxima permitida em mais de 50%",
            "autoInfracao": f"E0100{number:05d}",
            "infractionCode": "745-50",
            "severity": "gravíssima",
            "points": 7,
            "city": "São José dos Campos",
            "state": "SP",
            "authority": "Prefeitura de São José dos Campos",
            "indicationRequired": True,
            "noticeDate": notice.isoformat(),
            "carPlate": plate,
            "amount": "880.41",
            "occurredAt": "2026-06-08T12:49:00-03:00",
        }
        if number % 2:  # the others' deadlines are estimated: a badge says so
            frame["indicationDeadline"] = (notice + timedelta(days=30)).isoformat()
            frame["paymentDueDate"] = (notice + timedelta(days=40)).isoformat()
        events.append(
            {
                "frame": frame,
                "linkFrame": f"https://autoridade.example/{number}.pdf",
                "link": f"https://boletos.example/{number}",
            }
        )
    # The first fine's handling history: treated, untreated again, treated.
    for hour, treated in enumerate((True, False, True)):
        changed = {"treated": treated, "updatedAt": f"2026-06-1{hour}T09:30:00-03:00"}
        events.append({**events[0], "frame": events[0]["frame"] | changed})
    events += [
        {
            "notification": {
                "id": 950 + n,
                "title": "Recall do airbag",
                "message": f"O veículo {plate} deve ir à concessionária.",
                "carPlate": plate,
                "treated": False,
            }
        }
        for n in range(3)
    ]
    for event in events:
        assert requests.post(webhook, json=event, timeout=10).status_code == 202
    deliveries_process_received()


# Each card's cells whose value reaches under their label (`data-label`, shown by the
# cell's ::before, absolutely placed at the cell's left): the label's right edge from its
# computed left and width, the value's left edge from the rectangles of the cell's content
# (what is one pixel or less is hidden for screen readers only).
_LABELS_OVER_VALUES = """table => [...table.querySelectorAll("tbody tr")].flatMap((row, index) =>
  [...row.querySelectorAll("td[data-label]")].flatMap(cell => {
    const label = getComputedStyle(cell, "::before");
    if (label.content === "none" || label.display === "none") return [];
    const left = cell.getBoundingClientRect().left + cell.clientLeft;
    const labelRight = left + parseFloat(label.left) + parseFloat(label.width);
    const range = document.createRange();
    range.selectNodeContents(cell);
    const lefts = [...range.getClientRects()]
      .filter(rect => rect.width > 1 && rect.height > 1)
      .map(rect => rect.left);
    if (lefts.length === 0) return [];
    const under = labelRight - Math.min(...lefts);
    const where = `row ${index + 1} of ${table.tBodies[0].rows.length}, ${cell.dataset.label}`;
    return under > 0.5 ? [`${where}: ${under.toFixed(0)} px`] : [];
  }))"""


@pytest.mark.parametrize("locale", ["pt-BR", "en-GB"])
def test_the_vehicle_pages_fines_fit_a_laptop_without_scrolling_sideways(
    browser, live_server, manager, emulator, fleet_settings, locale
):
    plate = emulator.vehicles()[0]["car_plate"]
    _fines_with_every_fact(live_server, plate)
    context = browser.new_context(base_url=live_server.url, locale=locale, viewport=LAPTOP)
    page = _signed_in(context)
    page.goto(f"/vehicles/{plate}/")
    table = page.get_by_test_id("vehicle-fine-list").get_by_test_id("fine-table")
    expect(table.get_by_test_id("fine")).to_have_count(6)
    expect(table.get_by_test_id("fine-facts").first).to_be_visible()
    over = table.evaluate("t => t.parentElement.scrollWidth - t.parentElement.clientWidth")
    outside = table.evaluate(_OUTSIDE)
    context.close()
    assert over <= 0, f"the vehicle page's fines scroll sideways by {over} px"
    assert outside == []


@pytest.mark.parametrize("locale", ["pt-BR", "en-GB"])
def test_on_a_phone_every_cards_labels_stand_beside_their_values(
    browser, live_server, manager, emulator, fleet_settings, locale
):
    plate = emulator.vehicles()[0]["car_plate"]
    _fines_with_every_fact(live_server, plate)
    context = browser.new_context(base_url=live_server.url, locale=locale, viewport=PHONE)
    page = _signed_in(context)
    over: dict[str, list[str]] = {}
    for path, tables in [
        (f"/vehicles/{plate}/", ("fine-table", "notification-table")),
        ("/vehicles/", ("vehicle-table",)),
        ("/fines/", ("fine-table",)),
        ("/notifications/", ("notification-table",)),
        ("/fines/indications/", ("queue-table",)),
    ]:
        page.goto(path)
        for table in tables:
            shown = page.get_by_test_id(table)
            expect(shown.locator("tbody tr").first).to_be_visible()
            over[f"{path} {table}"] = shown.evaluate(_LABELS_OVER_VALUES)
    context.close()
    assert {table: cells for table, cells in over.items() if cells} == {}


@pytest.mark.parametrize("width", [1024, LAPTOP["width"]])
def test_a_long_handling_history_stays_in_its_column_in_english(
    browser, live_server, manager, emulator, fleet_settings, width
):
    plate = emulator.vehicles()[0]["car_plate"]
    _fines_with_every_fact(live_server, plate)
    context = browser.new_context(
        base_url=live_server.url, locale="en-GB", viewport={"width": width, "height": 800}
    )
    page = _signed_in(context)
    page.goto("/fines/")
    history = page.get_by_test_id("treated-history")
    expect(history).to_have_count(1)
    history.locator("summary").click()
    expect(history.locator("ol li")).to_have_count(4)
    past = history.evaluate(
        "h => { const cell = h.closest('td').getBoundingClientRect();"
        " return [...h.querySelectorAll('*')]"
        ".map(e => e.getBoundingClientRect().right - cell.right).filter(over => over > 0.5); }"
    )
    context.close()
    assert past == [], f"the history reaches {max(past):.0f} px past its column"
