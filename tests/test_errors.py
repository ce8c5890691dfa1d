"""The answer to an unhandled error: 503 and a clear page when the database is unreachable."""

from __future__ import annotations

from django.db import OperationalError
from django.test import RequestFactory
from django.utils import translation

from portal.errors import server_error
from portal.lib import request_ids


def test_a_database_outage_is_a_503_that_says_to_try_again():
    try:
        raise OperationalError("terminating connection due to administrator command")
    except OperationalError:
        with translation.override("pt-br"):
            response = server_error(RequestFactory().get("/fines/"))

    assert response.status_code == 503
    assert response["Retry-After"] == "10"
    page = response.content.decode()
    assert "Tente novamente em 10 segundos" in page
    assert "administrator command" not in page  # nothing of the error itself


def test_any_other_error_is_the_portals_500_without_the_database_or_the_session():
    # No django_db mark: a query would fail the test. No `user`, no `session` either.
    try:
        raise ValueError("a bug")
    except ValueError:
        with translation.override("en"):
            response = server_error(RequestFactory().get("/fines/"))

    assert response.status_code == 500
    page = response.content.decode()
    assert "<h1>Something went wrong</h1>" in page
    assert "a bug" not in page


def test_both_pages_give_the_request_code():
    for error in (OperationalError("connection lost"), ValueError("a bug")):
        try:
            raise error
        except Exception:
            with translation.override("en"), request_ids.bound("req-error-1"):
                response = server_error(RequestFactory().get("/fines/"))

        assert "Request code: <code>req-error-1</code>" in response.content.decode()


def test_the_portal_uses_it():
    from portal import urls

    assert urls.handler500 == "portal.errors.server_error"
