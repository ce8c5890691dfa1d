"""The fines and notifications pages and the dashboard's counts, fed through the real receiver."""

from __future__ import annotations

import json
import re

import pytest

from fleet.models import Fine
from fleet.webhooks.processing import deliveries_process_received

pytestmark = pytest.mark.django_db

WEBHOOK = "/webhooks/fleet/dev-webhook-token/"
ENGLISH = {"Accept-Language": "en"}
HTMX = {"HX-Request": "true"}
DOCUMENT = "https://autoridade.example/autos/S1.pdf"
ROW = re.compile(r'<tr data-testid="(fine|notification)" data-key="([^"]*)"')


@pytest.fixture
def manager_client(client, django_user_model):
    client.force_login(django_user_model.objects.create_user("marcos", password="pw-123456"))
    return client


def deliver(client, payload) -> None:
    response = client.post(WEBHOOK, data=json.dumps(payload), content_type="application/json")
    assert response.status_code == 202, response.content
    deliveries_process_received()  # the worker's next run


def a_fine(id, *, treated=False, link_frame=None, link="https://boletos.example/1", **fields):
    return {
        "frame": {"id": id, "treated": treated, "description": f"Infração {id}", **fields},
        "linkFrame": link_frame,
        "link": link,
    }


def keys(response) -> list[str]:
    return [key for _, key in ROW.findall(response.text)]


def test_the_pages_require_login(client):
    for path in ("/fines/", "/notifications/"):
        assert client.get(path).status_code == 302


def test_untreated_fines_come_first_then_the_latest(manager_client, client):
    deliver(client, a_fine(1, treated=True))
    deliver(client, a_fine(2))
    deliver(client, a_fine(3))

    response = manager_client.get("/fines/", headers=ENGLISH)

    assert response.status_code == 200
    assert keys(response) == ["3", "2", "1"]
    assert "3 fines" in response.text


def test_the_treated_and_document_filters(manager_client, client):
    deliver(client, a_fine(1, treated=True, link_frame=DOCUMENT))
    deliver(client, a_fine(2, link_frame=DOCUMENT))
    deliver(client, a_fine(3))

    assert keys(manager_client.get("/fines/", {"treated": "0"})) == ["3", "2"]
    assert keys(manager_client.get("/fines/", {"treated": "1"})) == ["1"]
    assert keys(manager_client.get("/fines/", {"document": "0"})) == ["3"]
    assert keys(manager_client.get("/fines/", {"document": "1", "treated": "0"})) == ["2"]
    # Nonsense falls back to no filter.
    assert keys(manager_client.get("/fines/", {"treated": "maybe"})) == ["3", "2", "1"]


def test_htmx_gets_only_the_results(manager_client, client):
    deliver(client, a_fine(1))

    response = manager_client.get("/fines/", {"treated": "0"}, headers=HTMX)

    assert keys(response) == ["1"]
    assert "<html" not in response.text
    assert 'id="record-results"' not in response.text


def test_links_open_in_a_new_tab_without_opener_or_referrer(manager_client, client):
    deliver(client, a_fine(1, link_frame=DOCUMENT, link="https://boletos.example/1"))

    page = manager_client.get("/fines/", headers=ENGLISH).text

    for url in (DOCUMENT, "https://boletos.example/1"):
        assert f'<a href="{url}" target="_blank" rel="noopener noreferrer"' in page


def test_a_missing_official_document_is_explained(manager_client, client):
    deliver(client, a_fine(1, link_frame=None))

    page = manager_client.get("/fines/", headers=ENGLISH).text

    assert "Not yet available from the issuing authority" in page
    assert "Ainda não disponível" in manager_client.get("/fines/").text


@pytest.mark.parametrize(
    "link",
    [
        "http://autoridade.example/autos/S1.pdf",
        "javascript:alert(1)",
        "/admin/",
        "https:///no-host",
    ],
)
def test_only_https_links_become_links(manager_client, client, link):
    deliver(client, a_fine(1, link_frame=link, link=link))

    page = manager_client.get("/fines/").text

    assert 'target="_blank" rel="noopener noreferrer"' not in page.split('data-testid="fine"')[1]


def test_a_link_cannot_break_out_of_its_attribute(manager_client, client):
    deliver(client, a_fine(1, link_frame='https://x.example/"><script>alert(1)</script>'))

    page = manager_client.get("/fines/").text

    assert "<script>alert(1)" not in page
    assert 'href="https://x.example/&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;"' in page


def test_each_fine_has_a_deep_link_into_the_fleet_app(manager_client, client):
    deliver(client, a_fine(1))

    page = manager_client.get("/fines/", {"treated": "0"}, headers=ENGLISH).text

    # A button posting the page's deep-link form: minting a key is no GET. It returns to
    # the list, which says so once for all its rows.
    assert (
        '<button type="submit" form="app-open" class="icon-button" data-testid="handle-in-app" '
        'title="Handle in the fleet app">'
    ) in page
    assert '<input type="hidden" form="app-open" name="next" value="/fines/?treated=0">' in page


def test_received_and_updated_times_and_the_treated_history_are_shown(manager_client, client):
    deliver(client, a_fine(1, updatedAt="2026-11-20T10:00:00Z"))
    deliver(client, a_fine(1, treated=True, updatedAt="2026-11-21T15:30:00Z"))

    page = manager_client.get("/fines/", headers=ENGLISH).text

    assert "Received" in page
    assert 'data-testid="updated-at"' in page
    assert 'data-testid="treated-history"' in page
    assert "2 changes" in page
    # 15:30 UTC is 12:30 in São Paulo, shown the Brazilian way.
    assert "21/11/2026 12:30" in manager_client.get("/fines/").text


def test_fines_page_through(manager_client, client):
    for id in range(1, 53):
        deliver(client, a_fine(id))

    first = manager_client.get("/fines/", headers=ENGLISH)
    second = manager_client.get("/fines/", {"page": 2}, headers=ENGLISH)

    assert len(keys(first)) == 50
    assert keys(second) == ["2", "1"]
    assert "Page 2 of 2" in second.text


def test_empty_lists_say_so(manager_client):
    assert "No fine has been received yet" in manager_client.get("/fines/", headers=ENGLISH).text
    assert "No fine matches these filters" in (
        manager_client.get("/fines/", {"treated": "1"}, headers=ENGLISH).text
    )
    assert "No notification has been received yet" in (
        manager_client.get("/notifications/", headers=ENGLISH).text
    )
    # A search that finds nothing is a filter too: the way back to the whole list.
    searched = manager_client.get("/notifications/", {"q": "airbag"}, headers=ENGLISH).text
    assert "No notification matches this filter." in searched
    assert '<a href="/notifications/">Show all notifications</a>' in searched


def test_notifications_untreated_first_with_their_filter(manager_client, client):
    deliver(client, {"notification": {"id": 1, "treated": True, "title": "Vistoria feita"}})
    deliver(client, {"notification": {"id": 2, "treated": False, "title": "Licenciamento"}})

    everything = manager_client.get("/notifications/")
    treated = manager_client.get("/notifications/", {"treated": "1"})

    assert keys(everything) == ["2", "1"]
    assert "Licenciamento" in everything.text
    assert keys(treated) == ["1"]


def test_the_dashboard_counts_what_needs_attention(manager_client, client):
    deliver(client, a_fine(1))
    deliver(client, a_fine(2, link_frame=DOCUMENT))
    deliver(client, a_fine(3, treated=True))
    deliver(client, {"notification": {"id": 1, "treated": False}})

    page = manager_client.get("/").text

    assert re.search(r'data-testid="count-untreated-fines">2<', page)
    assert re.search(r'data-testid="count-fines-without-document">2<', page)
    assert re.search(r'data-testid="count-untreated-notifications">1<', page)


def test_the_counts_fragment_polls_and_is_what_htmx_gets(manager_client, client, settings):
    settings.FLEET_COUNTS_POLL_SECONDS = 15
    deliver(client, a_fine(1))

    fragment = manager_client.get("/", headers=HTMX).text

    assert fragment.lstrip().startswith('<section id="record-counts"')
    assert 'hx-trigger="every 15s, focus from:window"' in fragment
    assert re.search(r'data-testid="count-untreated-fines">1<', fragment)
    assert "<html" not in fragment


def test_plates_are_shown_as_on_the_vehicle_pages_and_link_to_them(manager_client, client):
    deliver(client, a_fine(1, carPlate="abc1234"))
    deliver(client, {"notification": {"id": 1, "treated": False, "carPlate": "ABC1D23"}})
    deliver(client, a_fine(2, carPlate="not a plate"))

    fines = manager_client.get("/fines/").text

    # A plate links to its vehicle's page, shown as its registration (the Mercosul form),
    # the old plate the fine was issued to muted beside it.
    linked = '<a class="plate" href="/vehicles/ABC1234/">ABC1C34</a>'
    assert f'{linked} <span class="plate plate--other muted"' in fines
    assert ">ABC-1234</span>" in fines
    assert '<span class="plate">not a plate</span>' in fines
    notifications = manager_client.get("/notifications/").text
    assert '<a class="plate" href="/vehicles/ABC1D23/">ABC1D23</a>' in notifications


def test_fines_are_found_by_notice_number_infraction_or_platform_id(manager_client, client):
    deliver(client, a_fine(1, autoInfracao="E010000014", description="Avançar o sinal vermelho"))
    deliver(client, a_fine(2, autoInfracao="E010000003", description="Cinto de segurança"))
    deliver(client, a_fine(3, treated=True, description="Sinal vermelho, de novo"))

    def found(q: str, **filters: str) -> list[str]:
        return keys(manager_client.get("/fines/", {"q": q, **filters}))

    assert found("e010000014") == ["1"]  # the notice number, in any case
    assert found("SINAL VERMELHO") == ["1", "3"]  # untreated first
    assert found("sinal vermelho", treated="1") == ["3"]  # with the other filters
    assert found("2") == ["2"]  # the platform's id: whole, not a part of another
    assert found("multa que não existe") == []
    page = manager_client.get("/fines/", {"q": "cinto"}, headers=ENGLISH).text
    assert 'name="q" value="cinto"' in page
    assert 'href="/fines/export.csv?q=cinto"' in page


def test_notifications_are_found_by_title_or_id_not_by_their_message(manager_client, client):
    """A title is one of a few the platform sends (`Wording`); a message, one per vehicle
    or event, would be searched only by reading every notification."""
    deliver(client, {"notification": {"id": 1, "treated": False, "title": "Licenciamento anual"}})
    deliver(client, {"notification": {"id": 2, "treated": False, "message": "Vistoria marcada"}})
    deliver(client, {"notification": {"id": 3, "treated": False, "title": "Vistoria agendada"}})

    assert keys(manager_client.get("/notifications/", {"q": "licenciamento"})) == ["1"]
    assert keys(manager_client.get("/notifications/", {"q": "VISTORIA"})) == ["3"]
    assert keys(manager_client.get("/notifications/", {"q": "2"})) == ["2"]  # the id


def test_the_dashboard_lists_the_vehicles_with_the_most_untreated_fines(manager_client, client):
    # ABC-1234 became ABC1C34 with the Mercosul plate: one vehicle, three untreated fines.
    deliver(client, a_fine(1, carPlate="ABC-1234"))
    deliver(client, a_fine(2, carPlate="ABC1C34"))
    deliver(client, a_fine(3, carPlate="abc1234"))
    deliver(client, a_fine(4, carPlate="XYZ9A87"))
    deliver(client, a_fine(5, carPlate="XYZ9A87", treated=True))  # handled: not counted
    deliver(client, a_fine(6, carPlate="DEF5G67", treated=True))
    deliver(client, a_fine(7))  # no plate

    page = manager_client.get("/", headers=ENGLISH).text

    listed = re.findall(
        r'<li><a class="plate" href="([^"]+)">([^<]+)</a>\s*<span class="muted">([^<]+)<', page
    )
    assert listed == [
        ("/fines/?plate=ABC1C34&amp;treated=0", "ABC-1234", "3 fines"),
        ("/fines/?plate=XYZ9A87&amp;treated=0", "XYZ9A87", "1 fine"),
    ]
    # The list's link shows exactly those fines.
    assert keys(manager_client.get("/fines/", {"plate": "ABC1C34", "treated": "0"})) == [
        "3",
        "2",
        "1",
    ]


def test_the_dashboard_lists_no_vehicle_when_every_fine_is_handled(manager_client, client):
    deliver(client, a_fine(1, carPlate="ABC1234", treated=True))

    assert 'data-testid="most-fined"' not in manager_client.get("/").text


def test_each_fine_and_notification_has_its_own_page_that_the_lists_link_to(manager_client, client):
    deliver(client, a_fine(31, link_frame="https://docs.example/31.pdf", description="Farol"))
    deliver(client, {"notification": {"id": 32, "title": "Recall", "treated": False}})
    deliveries_process_received()

    fine_page = manager_client.get("/fines/").text
    path = re.search(r'<a href="(/fines/\d+/)"[^>]*>Farol</a>', fine_page).group(1)
    page = manager_client.get(path)
    assert page.status_code == 200
    assert 'data-key="31"' in page.text
    assert 'href="https://docs.example/31.pdf"' in page.text
    notifications = manager_client.get("/notifications/").text
    path = re.search(r'<a href="(/notifications/\d+/)">Recall</a>', notifications).group(1)
    assert 'data-key="32"' in manager_client.get(path).text
    assert manager_client.get("/fines/999999/").status_code == 404
    manager_client.logout()
    assert manager_client.get(path).status_code == 302  # signed in only


def test_a_fines_infraction_is_shown_as_the_authority_wrote_it_and_says_so_in_english(
    manager_client, client
):
    deliver(client, a_fine(41, description="Estacionar em local proibido"))
    path = Fine.objects.get().get_absolute_url()

    english = manager_client.get(path, headers=ENGLISH).text
    portuguese = manager_client.get(path, headers={"Accept-Language": "pt-BR"}).text

    title = '<h1 data-testid="record-title" lang="pt-BR">Estacionar em local proibido</h1>'
    assert title in english
    assert title in portuguese
    assert "as the issuing authority wrote it, in Portuguese" in english
    assert 'data-testid="as-written"' not in portuguese
