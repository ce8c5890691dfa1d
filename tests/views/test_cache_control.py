"""Pages, fragments and exports are `private, no-store`; static files keep their caching."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from fleet.models import CnhLookup, Fine, Notification, SavedFineView

pytestmark = pytest.mark.django_db

# Not pages of fleet data: the webhook receiver (POST from the fleet platform) and the
# load balancers' health check.
NOT_PAGES = {"webhook", "healthz"}


def fleet_url_names() -> Iterator[tuple[str, tuple[str, ...]]]:
    """Every URL of the fleet app in the URLconf, with the names of its parameters."""

    def walk(patterns: list[URLPattern | URLResolver], namespace: str) -> Iterator[URLPattern]:
        for entry in patterns:
            if isinstance(entry, URLResolver):
                yield from walk(entry.url_patterns, entry.namespace or namespace)
            elif namespace == "fleet":
                yield entry

    for pattern in walk(get_resolver().url_patterns, ""):
        if pattern.name and pattern.name not in NOT_PAGES:
            yield pattern.name, tuple(getattr(pattern.pattern, "converters", {}))


FLEET_URLS = sorted(set(fleet_url_names()))


def directives(response) -> set[str]:
    return {part.split("=")[0].strip().lower() for part in response["Cache-Control"].split(",")}


@pytest.fixture
def sample_kwargs(manager_client, emulator) -> dict[str, object]:
    """A value for each parameter a fleet URL takes: real records, so that pages render."""
    completed = next(
        r for r in emulator.control("GET", "crlv/requests") if r["status"] == "completed"
    )
    manager_client.post("/drivers/cnh/lookup", {"cpf": "529.982.247-25", "purpose": "periodic"})
    return {
        "plate": completed["carPlate"],
        "request_id": completed["requestId"],
        "lookup_id": CnhLookup.objects.get().public_id,
        "fine_id": Fine.objects.create(key="id:1", treated=False).pk,
        "notification_id": Notification.objects.create(key="id:2", treated=False).pk,
        "driver_id": 101,
        "indication_id": 1,
        "view_id": SavedFineView.objects.create(
            user=CnhLookup.objects.get().owner, name="Mine", query="treated=0"
        ).pk,
    }


def test_the_list_of_fleet_urls_has_the_pages_it_should():
    names = {name for name, _ in FLEET_URLS}

    assert {"dashboard", "vehicles", "vehicles_export", "fines_export", "vehicle"} <= names
    assert {"cnh_lookup", "crlv_request_download", "app_open", "app_frame"} <= names
    assert names.isdisjoint(NOT_PAGES)


@pytest.mark.parametrize("htmx", [False, True], ids=["page", "htmx"])
@pytest.mark.parametrize(("name", "parameters"), FLEET_URLS, ids=[n for n, _ in FLEET_URLS])
def test_every_fleet_url_a_manager_gets_is_private_and_not_stored(
    manager_client, sample_kwargs, name, parameters, htmx
):
    missing = set(parameters) - set(sample_kwargs)
    assert not missing, f"give sample_kwargs a value for {missing} (URL {name!r})"
    url = reverse(f"fleet:{name}", kwargs={p: sample_kwargs[p] for p in parameters})

    response = manager_client.get(url, headers={"HX-Request": "true"} if htmx else {})

    assert not response.get("Location", "").startswith("/accounts/login/")  # signed in
    assert {"private", "no-store"} <= directives(response), (url, response["Cache-Control"])
    assert "public" not in directives(response)


def test_pages_for_visitors_who_are_not_signed_in_are_not_stored_either(client):
    for response in (client.get("/accounts/login/"), client.get("/vehicles/")):
        assert {"private", "no-store"} <= directives(response)


@pytest.fixture
def collected_static(settings, tmp_path) -> dict[str, str]:
    """`collectstatic` with the production storage (hashed, compressed names) into a
    folder of this test; its manifest's names."""
    settings.STATIC_ROOT = tmp_path
    settings.STORAGES = settings.STORAGES | {
        "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"}
    }
    settings.WHITENOISE_USE_FINDERS = False
    call_command("collectstatic", interactive=False, verbosity=0)
    paths: dict[str, str] = json.loads((tmp_path / "staticfiles.json").read_text())["paths"]
    return paths


def test_hashed_static_files_keep_their_long_public_caching(collected_static, admin_user):
    browser = Client()  # a new handler: WhiteNoise reads the collected folder when it starts
    browser.force_login(admin_user)  # a signed-in person's requests too

    for name in ("css/portal.css", "js/embed.js", "django_htmx/htmx-2.min.js"):
        response = browser.get(f"/static/{collected_static[name]}")

        assert response.status_code == 200
        assert directives(response) == {"max-age", "public", "immutable"}
        assert "max-age=315360000" in response["Cache-Control"]  # WhiteNoise's ten years
