"""Where an e-CRLV download may send the browser: only to the hosts of FLEET_DOWNLOAD_HOSTS."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db

ENGLISH = {"Accept-Language": "en"}
REQUEST_ROUTE = "/v2/crlv/requests/{requestId}"
VEHICLE_ROUTE = "/v2/crlv/vehicles/{carPlate}"
REFUSED = "sent a download link to a site the portal does not know as the fleet service's"
SIGNATURE = "X-Amz-Signature=s3cr3t-signature-value"


@pytest.fixture
def completed(emulator):
    """A completed request of the emulator's seed: {"requestId", "carPlate", "status"}."""
    return next(r for r in emulator.control("GET", "crlv/requests") if r["status"] == "completed")


def download_with_link(client, emulator, completed, route, url):
    """The download of `route` ("request" or "vehicle") while the API answers with `url`."""
    document = {"downloadUrl": url}
    if route == "request":
        emulator.fault(REQUEST_ROUTE, body={"status": "completed", "document": document})
        path = f"/crlv/requests/{completed['requestId']}/download"
    else:
        body = {"lastIssued": {"status": "completed", "document": document}}
        emulator.fault(VEHICLE_ROUTE, body=body)
        path = f"/vehicles/{completed['carPlate']}/crlv/download"
    return client.get(path, headers=ENGLISH)


@pytest.mark.parametrize("route", ["request", "vehicle"])
def test_a_link_to_another_host_is_refused_with_a_page_and_logged_without_the_link(
    manager_client, emulator, completed, route, log_records
):
    url = f"https://documents.evil.example/crlv/{completed['requestId']}.pdf?{SIGNATURE}"

    response = download_with_link(manager_client, emulator, completed, route, url)

    assert response.status_code == 502
    assert "Location" not in response
    assert REFUSED in response.text
    assert 'data-outcome="untrusted_link"' in response.text
    assert "evil.example" not in response.text
    (refusal,) = [
        r.getMessage() for r in log_records.of("fleet.services.crlv") if "refused" in r.msg
    ]
    assert "'documents.evil.example'" in refusal
    assert "FLEET_DOWNLOAD_HOSTS" in refusal
    logged = "\n".join(log_records.lines)
    assert "s3cr3t-signature-value" not in logged
    assert "/crlv/" not in refusal  # the host only: the path and query open the document


def test_the_default_allows_the_emulators_own_links(manager_client, emulator, completed, settings):
    assert settings.FLEET_DOWNLOAD_HOSTS == []  # the default: the API's and web app's hosts

    response = manager_client.get(f"/crlv/requests/{completed['requestId']}/download")

    assert response.status_code == 302
    assert response["Location"].startswith(f"{emulator.url}/files/crlv/")


def test_hosts_left_out_of_fleet_download_hosts_are_refused_even_the_apis_own(
    manager_client, emulator, completed, settings
):
    settings.FLEET_DOWNLOAD_HOSTS = ["docs.vendor.example"]

    response = manager_client.get(
        f"/crlv/requests/{completed['requestId']}/download", headers=ENGLISH
    )

    assert response.status_code == 502
    assert REFUSED in response.text
    assert "Location" not in response


@pytest.mark.parametrize(
    "url",
    [
        "https://docs.vendor.example/crlv.pdf",
        "https://eu.files.vendor.example/crlv.pdf",
        "https://DOCS.Vendor.Example:8443/crlv.pdf",
    ],
)
def test_listed_hosts_and_domains_are_followed(manager_client, emulator, completed, settings, url):
    settings.FLEET_DOWNLOAD_HOSTS = ["docs.vendor.example", ".files.vendor.example"]

    response = download_with_link(manager_client, emulator, completed, "request", url)

    assert response.status_code == 302
    assert response["Location"] == url


@pytest.mark.parametrize(
    "url",
    [
        "https://evil.example\\@127.0.0.1/crlv.pdf",  # a browser goes to evil.example
        "https://127.0.0.1@evil.example/crlv.pdf",
        "https://user:password@127.0.0.1/crlv.pdf",
        "https://files.vendor.example.evil.example/crlv.pdf",
        "https://vendor.example/crlv.pdf",
    ],
)
def test_links_whose_host_is_not_plainly_an_allowed_one_are_refused(
    manager_client, emulator, completed, settings, url
):
    settings.FLEET_DOWNLOAD_HOSTS = ["127.0.0.1", ".files.vendor.example"]

    response = download_with_link(manager_client, emulator, completed, "request", url)

    assert response.status_code == 502
    assert REFUSED in response.text
