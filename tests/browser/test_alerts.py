"""A manager chooses their alerts on the page, the emulator sends a
fine (its control surface), a real `manage.py db_worker` processes it and e-mails the
alert to a real SMTP server on loopback, and the e-mail's link opens that fine."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from fleet.models import Fine
from tests.browser.conftest import log_in
from tests.conftest import start_db_worker, stop_db_worker
from tests.mail import subject, text_of
from tests.scopes import grant_whole_fleet

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def mailing_worker(live_server, emulator, smtp_server):
    """The worker of `make run`, sending through the test SMTP server, linking to the
    live portal."""
    process = start_db_worker(
        emulator,
        EMAIL_URL=smtp_server.url,
        PORTAL_BASE_URL=live_server.url,
        FLEET_WEBHOOK_BATCH_SECONDS="0",
    )
    yield process
    stop_db_worker(process)


def test_a_manager_chooses_alerts_and_the_emailed_link_opens_the_fine(
    page, manager, emulator, live_server, smtp_server, mailing_worker, settings
):
    settings.FLEET_WEBHOOK_BATCH_SECONDS = 0
    manager.email = "marcos@example.com"
    manager.save()
    grant_whole_fleet(manager)  # alerted of every vehicle's fines (those chosen)
    log_in(page, "manager", "manager-demo-password")

    page.get_by_role("navigation").get_by_role("link", name="Alertas").click()
    form = page.get_by_test_id("alert-preferences")
    form.get_by_label("Chega uma multa nova").check()
    form.get_by_label("Na hora, um e-mail por evento").check()
    form.get_by_label("Só estas placas").check()
    form.get_by_label("Placas", exact=True).fill("abc-1234")
    form.get_by_role("button", name="Salvar preferências de alertas").click()
    expect(page.get_by_text("Suas preferências de alertas foram salvas.")).to_be_visible()
    expect(form.get_by_label("Placas", exact=True)).to_have_value("ABC-1234")

    # Two fines: one of another vehicle, one of this vehicle under its Mercosul plate.
    webhook = f"{live_server.url}/webhooks/fleet/dev-webhook-token/"
    events = [
        {"frame": {"id": 4241, "carPlate": "XYZ9K88", "description": "Outra", "treated": False}},
        {
            "frame": {
                "id": 4242,
                "carPlate": "ABC1C34",
                "description": "Estacionar em local proibido",
                "treated": False,
            },
            "linkFrame": None,
            "link": "https://boletos.example/4242",
        },
    ]
    emulator.control("POST", "webhooks", url=webhook, events=events)

    (message,) = smtp_server.mailbox.wait_for(1, timeout=20)
    assert message["To"] == "marcos@example.com"
    assert subject(message) == "Nova multa: ABC1C34 · Estacionar em local proibido"
    link = re.search(r"Veja no portal: (\S+)", text_of(message)).group(1)
    fine = Fine.objects.get(external_id="4242")
    assert link == f"{live_server.url}/fines/{fine.pk}/"

    page.goto(link)
    expect(page.get_by_test_id("record-title")).to_have_text("Estacionar em local proibido")
    record = page.get_by_test_id("fine")
    expect(record).to_have_attribute("data-key", "4242")
    expect(record).to_contain_text("ABC1C34")
    expect(record.get_by_test_id("untreated")).to_be_visible()
