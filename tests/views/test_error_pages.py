"""The portal's own 404, 403 and 500 pages with DEBUG off: styled like every page, in
the user's language, and the 500 page without the database."""

from __future__ import annotations

import logging
import re

import pytest
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.urls import path

from portal import urls as portal_urls

ENGLISH = {"Accept-Language": "en"}
PORTUGUESE = {"Accept-Language": "pt-BR"}


def _forbidden(request: HttpRequest) -> HttpResponse:
    raise PermissionDenied


def _broken(request: HttpRequest) -> HttpResponse:
    raise ValueError("a bug in a view")


# The portal's URLs and two that fail; `pytest.mark.urls` points at this module.
urlpatterns = [path("forbidden/", _forbidden), path("broken/", _broken), *portal_urls.urlpatterns]
handler500 = portal_urls.handler500

pytestmark = [pytest.mark.django_db, pytest.mark.urls(__name__)]


@pytest.fixture(autouse=True)
def _production(settings):
    settings.DEBUG = False


def heading(response) -> str:
    return re.search(r"<h1>(.*?)</h1>", response.content.decode()).group(1)


@pytest.mark.parametrize(
    ("headers", "lang", "title"),
    [(PORTUGUESE, "pt-br", "Página não encontrada"), (ENGLISH, "en", "Page not found")],
)
def test_an_unknown_address_is_the_portals_404_in_the_users_language(client, headers, lang, title):
    response = client.get("/no/such/page/", headers=headers)

    assert response.status_code == 404
    page = response.content.decode()
    assert f'<html lang="{lang}">' in page
    assert heading(response) == title
    assert "/static/css/portal.css" in page  # styled like the other pages
    assert '<main class="main" id="main">' in page
    assert 'href="/"' in page  # a way back


def test_the_404_page_keeps_the_navigation_of_a_signed_in_user(client, django_user_model):
    client.force_login(django_user_model.objects.create_user(username="ana", first_name="Ana"))

    response = client.get("/no/such/page/", headers=ENGLISH)

    assert response.status_code == 404
    assert '<nav class="nav" aria-label="Main">' in response.content.decode()
    assert "Ana" in response.content.decode()


@pytest.mark.parametrize(
    ("headers", "title"), [(PORTUGUESE, "Acesso negado"), (ENGLISH, "Access denied")]
)
def test_a_refused_page_is_the_portals_403_in_the_users_language(client, headers, title):
    response = client.get("/forbidden/", headers=headers)

    assert response.status_code == 403
    assert heading(response) == title
    assert "/static/css/portal.css" in response.content.decode()


@pytest.mark.parametrize(
    ("headers", "title"),
    [(PORTUGUESE, "O formulário não pôde ser enviado"), (ENGLISH, "The form could not be sent")],
)
def test_a_form_without_its_csrf_token_is_explained_in_the_users_language(headers, title):
    from django.test import Client

    client = Client(enforce_csrf_checks=True)

    response = client.post("/accounts/login/", {"username": "a", "password": "b"}, headers=headers)

    assert response.status_code == 403
    assert heading(response) == title
    assert "/static/css/portal.css" in response.content.decode()


@pytest.mark.parametrize(
    ("headers", "lang", "title"),
    [(PORTUGUESE, "pt-br", "Algo deu errado"), (ENGLISH, "en", "Something went wrong")],
)
def test_an_error_in_a_view_is_the_portals_500_in_the_users_language(
    client, django_user_model, headers, lang, title
):
    client.force_login(django_user_model.objects.create_user(username="ana", first_name="Ana"))
    client.raise_request_exception = False

    response = client.get("/broken/", headers=headers)

    assert response.status_code == 500
    page = response.content.decode()
    assert f'<html lang="{lang}">' in page
    assert heading(response) == title
    assert "/static/css/portal.css" in page
    assert "a bug in a view" not in page
    assert "Ana" not in page  # rendered without the user: the session may be what failed
    assert 'data-testid="env-banner"' in page  # the emulator's banner, from the settings


def test_the_500_page_gives_the_request_code_that_its_log_lines_carry(client, log_records):
    client.raise_request_exception = False

    response = client.get("/broken/", headers=ENGLISH)

    code = response["X-Request-Id"]
    assert f"Request code: <code>{code}</code>" in response.content.decode()
    (error,) = log_records.of("django.request")
    assert error.getMessage() == "Internal Server Error: /broken/"
    # The portal's handlers wrote the error's line while the request ran: with its code.
    handlers = [h for h in logging.getLogger().handlers if type(h) is logging.StreamHandler]
    assert handlers
    for handler in handlers:
        assert f"[{code}] Internal Server Error" in handler.format(error)
