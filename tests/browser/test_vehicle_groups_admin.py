"""An administrator fills vehicle groups in the admin, in Chromium: a CSV through the
import button, then a member chosen in the user search and plates typed on a group's page."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from fleet.models import VehicleGroup, VehicleGroupMember

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def admin_page(browser, live_server, fleet_settings, admin_user):
    context = browser.new_context(base_url=live_server.url, locale="en-US")
    context.set_default_timeout(10_000)
    page = context.new_page()
    page.goto("/accounts/login/?next=/admin/fleet/vehiclegroup/")
    page.get_by_label("Username").fill(admin_user.username)
    page.get_by_label("Password").fill("password")
    page.get_by_role("button", name="Log in", exact=True).click()
    page.wait_for_url("**/admin/fleet/vehiclegroup/")
    yield page
    context.close()


def test_an_administrator_imports_a_csv_then_adds_a_member_and_plates(
    admin_page, django_user_model
):
    page = admin_page
    django_user_model.objects.create_user("marcos", first_name="Marcos")
    csv = "plate,group\nABC-1234,Frota Sul\nnot-a-plate,Frota Sul\nBRA2E19,Frota Norte\n"

    page.get_by_role("link", name="Import plates from CSV").click()
    page.get_by_label("CSV file").set_input_files(
        {"name": "plates.csv", "mimeType": "text/csv", "buffer": csv.encode()}
    )
    page.get_by_role("button", name="Import").click()

    report = page.get_by_test_id("vehicle-groups-import-report")
    expect(report).to_contain_text("2 groups created: Frota Norte, Frota Sul")
    expect(report).to_contain_text("2 vehicles added")
    refused = page.get_by_test_id("vehicle-groups-import-refused").locator("tbody tr")
    expect(refused).to_have_count(1)
    expect(refused.first).to_contain_text("3")
    expect(refused.first).to_contain_text("“not-a-plate” is not a plate")

    page.get_by_label("Breadcrumbs").get_by_role("link", name="Vehicle groups").click()
    page.get_by_role("link", name="Frota Sul").click()
    plates = page.get_by_test_id("vehicle-group-plates")
    expect(plates).to_contain_text("1 vehicle in this group")
    expect(plates.locator("tbody tr")).to_have_text(["ABC1C34ABC-1234"])
    page.get_by_text("Add another Member given by hand").click()
    page.locator("#members-group .select2-selection").first.click()
    page.locator(".select2-search__field").fill("marc")
    page.get_by_role("option", name="marcos").click()
    page.get_by_label("Add plates").fill("qwe-5678\nKLM3F45\n")
    page.get_by_role("button", name="Save and continue editing").click()

    expect(page.locator(".messagelist")).to_contain_text("2 vehicles added to Frota Sul.")
    expect(plates).to_contain_text("3 vehicles in this group")
    expect(page.locator("#members-group")).to_contain_text("marcos")
    member = VehicleGroupMember.objects.get()
    assert (member.user.username, member.group.name, member.provider) == ("marcos", "Frota Sul", "")
    assert VehicleGroup.objects.get(name="Frota Sul").revision == 2
