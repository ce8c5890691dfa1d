from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest
from django.urls import reverse

pytestmark = pytest.mark.django_db


def test_dashboard_requires_login(client):
    response = client.get("/")

    assert response.status_code == 302
    assert response["Location"] == f"{reverse('login')}?next=/"


def test_dashboard_greets_the_manager_in_portuguese(client, django_user_model):
    user = django_user_model.objects.create_user(
        "marcos", password="pw-123456", first_name="Marcos"
    )
    client.force_login(user)

    response = client.get("/")

    assert response.status_code == 200
    assert "Olá, Marcos" in response.text
    assert 'lang="pt-br"' in response.text


def test_dashboard_writes_the_date_as_brazilians_do(client, django_user_model, time_machine):
    # Django's Portuguese catalogue capitalises month names: "23 de Novembro de 2026".
    time_machine.move_to(datetime(2026, 3, 23, 15, 0, tzinfo=UTC))
    client.force_login(django_user_model.objects.create_user("marcos", password="pw-123456"))

    response = client.get("/")

    today = re.search(r'data-testid="today">([^<]*)<', response.text)
    assert today is not None
    assert today[1] == "Hoje é 23 de março de 2026."


def test_dashboard_speaks_english_to_an_english_browser(client, django_user_model):
    user = django_user_model.objects.create_user(
        "marcos", password="pw-123456", first_name="Marcos"
    )
    client.force_login(user)

    response = client.get("/", headers={"accept-language": "en"})

    assert "Hello, Marcos" in response.text


def test_dashboard_rejects_post(client, django_user_model):
    client.force_login(django_user_model.objects.create_user("m", password="pw-123456"))

    assert client.post("/").status_code == 405


@pytest.mark.parametrize(
    ("environment", "banner"),
    [("emulator", "Emulador"), ("sandbox", "Sandbox"), ("production", None)],
)
def test_environment_banner_shows_unless_production(
    client, django_user_model, settings, environment, banner
):
    settings.FLEET_ENVIRONMENT = environment
    client.force_login(django_user_model.objects.create_user("m", password="pw-123456"))

    response = client.get("/")

    if banner is None:
        assert 'data-testid="env-banner"' not in response.text
    else:
        assert 'data-testid="env-banner"' in response.text
        assert banner in response.text


def test_staff_see_the_admin_link_and_managers_do_not(client, django_user_model):
    manager = django_user_model.objects.create_user("m", password="pw-123456")
    admin = django_user_model.objects.create_user("a", password="pw-123456", is_staff=True)

    client.force_login(manager)
    assert reverse("admin:index") not in client.get("/").text
    client.force_login(admin)
    assert reverse("admin:index") in client.get("/").text
