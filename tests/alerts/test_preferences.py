"""The alerts page in a manager's profile, and the defaults administrators set for users
who never saved their own."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest

from alerts.models import AlertDefaults, AlertPreferences
from alerts.services.preferences import alert_preferences_get, digest_due

pytestmark = pytest.mark.django_db

PAGE = "/account/alerts/"


@pytest.fixture
def signed_in(client, django_user_model):
    user = django_user_model.objects.create_user("marcos", email="marcos@example.com")
    client.force_login(user)
    return user


def choices(**changes):
    form = {
        "new_fine": "on",
        "fine_document": "on",
        "new_notification": "on",
        "delivery": "immediate",
        "digest_hour": "8",
        "time_zone": "America/Sao_Paulo",
        "all_vehicles": "True",
        "plates": "",
        "language": "pt-br",
    }
    return {name: value for name, value in (form | changes).items() if value is not None}


def test_a_new_user_sees_the_defaults_the_administrators_set(client, signed_in, admin_client):
    answer = admin_client.post(
        "/admin/alerts/alertdefaults/add/",
        choices(delivery="digest", digest_hour="18", time_zone="America/Manaus", fine_treated="on"),
    )
    assert answer.status_code == 302

    page = client.get(PAGE)

    assert page.status_code == 200
    assert '<option value="18" selected>18:00</option>' in page.text
    assert '<option value="America/Manaus" selected>' in page.text
    assert 'name="fine_treated" id="id_fine_treated" checked' in page.text
    assert not AlertPreferences.objects.filter(user=signed_in).exists()
    assert alert_preferences_get(user=signed_in).digest_hour == 18


def test_saving_keeps_the_plates_normalised_in_either_format(client, signed_in):
    answer = client.post(PAGE, choices(all_vehicles="False", plates="abc-1234, ABC 1D23\nabc1234"))

    assert answer.status_code == 302
    saved = AlertPreferences.objects.get(user=signed_in)
    assert saved.plates == ["ABC1234", "ABC1D23"]
    assert saved.covers("ABC1C34")  # ABC-1234's Mercosul plate
    assert not saved.covers("XYZ9K88")
    page = client.get(PAGE)
    assert "Suas preferências de alertas foram salvas." in page.text
    assert "ABC-1234\nABC1D23</textarea>" in page.text


def test_a_wrong_plate_or_no_plate_is_said_on_the_page(client, signed_in):
    wrong = client.post(PAGE, choices(all_vehicles="False", plates="ABC1234, 12345"))
    assert "Não é uma placa (ABC1234 ou ABC1D23): 12345" in wrong.text

    none = client.post(PAGE, choices(all_vehicles="False"))
    assert "Informe ao menos uma placa, ou escolha todos os veículos." in none.text
    assert not AlertPreferences.objects.exists()


def test_the_page_needs_a_signed_in_user(client):
    assert client.get(PAGE).status_code == 302


def test_the_digest_is_at_the_chosen_hour_in_the_chosen_zone():
    defaults = AlertDefaults(digest_hour=7, time_zone="America/Manaus")
    after = datetime(2026, 11, 22, 10, 59, tzinfo=UTC)  # 06:59 in Manaus

    assert digest_due(choices=defaults, after=after) == datetime(2026, 11, 22, 11, 0, tzinfo=UTC)
    assert digest_due(choices=defaults, after=after.replace(hour=11)) == datetime(
        2026, 11, 23, 11, 0, tzinfo=UTC
    )


def test_the_page_speaks_to_a_manager_and_keeps_the_technical_words_for_it(client, signed_in):
    page = client.get(PAGE, headers={"Accept-Language": "en"}).text

    zone = re.search(r'<select name="time_zone".*?</select>', page, re.S)
    assert zone
    # Brazil's zones first, by the names people use; every other zone still there.
    first = re.findall(r'<option value="([^"]+)"[^>]*>([^<]+)</option>', zone[0])
    assert first[0] == ("America/Sao_Paulo", "Brasília time (São Paulo, Rio de Janeiro, Brasília…)")
    assert [value for value, _label in first[:4]] == [
        "America/Sao_Paulo", "America/Manaus", "America/Rio_Branco", "America/Noronha"
    ]  # fmt: skip
    assert '<optgroup label="Other time zones">' in zone[0]
    assert ("Europe/London", "Europe/London") in first
    assert ("America/Sao_Paulo", "America/Sao Paulo") not in first
    # The signing scheme's header names, folded for the IT team.
    outside = re.sub(r'<details class="technical".*?</details>', "", page, flags=re.S)
    assert "webhook-signature" in page
    assert "webhook-signature" not in outside
    assert "Standard Webhooks" not in outside
    assert "<summary>For your IT team</summary>" in page
