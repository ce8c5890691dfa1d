"""The embedded fleet application and its deep link, through Django's test client."""

from __future__ import annotations

import re

import pytest
import requests
from django.test import Client

from fleet.models import AccessKeyMint, MintOutcome, MintPurpose

pytestmark = pytest.mark.django_db

KEY_URL = re.compile(r"/app/login\?accessKey=([0-9a-f-]{36})")
HTMX = {"HX-Request": "true"}
ENGLISH = {"Accept-Language": "en"}


def frame(client, **headers):
    return client.get("/app/frame", headers=HTMX | ENGLISH | headers)


def test_app_page_mints_nothing_itself(manager_client, emulator):
    response = manager_client.get("/app/")

    assert response.status_code == 200
    assert 'hx-get="/app/frame"' in response.text
    assert "accessKey" not in response.text
    assert emulator.calls("POST /key/generator") == 0
    assert "no-store" in response["Cache-Control"]


def test_app_page_allows_frames_only_from_the_fleet_login_origin(manager_client, emulator):
    response = manager_client.get("/app/")

    frame_src = re.search(r"frame-src ([^;]+)", response["Content-Security-Policy"]).group(1)
    assert frame_src.strip() == emulator.url


def test_frame_embeds_a_fresh_key_that_logs_the_manager_in(manager_client, emulator):
    response = frame(manager_client)

    assert response.status_code == 200
    assert "no-store" in response["Cache-Control"]
    src = re.search(r'<iframe[^>]* src="([^"]+)"', response.text).group(1)
    assert src.startswith(f"{emulator.login_url}/login?accessKey=")
    app = requests.get(src.replace("&amp;", "&"), timeout=10)
    assert app.status_code == 200
    assert 'data-fleet-user="manager@example.com"' in app.text


def test_frame_is_sandboxed_titled_and_sends_no_referrer(manager_client):
    iframe = re.search(r"<iframe[^>]*>", frame(manager_client).text, re.S).group(0)

    assert 'referrerpolicy="no-referrer"' in iframe
    assert 'title="Fleet application"' in iframe
    sandbox = set(re.search(r'sandbox="([^"]+)"', iframe).group(1).split())
    assert sandbox == {
        "allow-scripts",
        "allow-same-origin",
        "allow-forms",
        "allow-popups",
        "allow-downloads",
    }


def test_every_load_of_the_frame_mints_a_new_key(manager_client, emulator):
    keys = {KEY_URL.search(frame(manager_client).text).group(1) for _ in range(3)}

    assert len(keys) == 3
    assert emulator.calls("POST /key/generator") == 3


def test_a_direct_visit_of_the_frame_mints_nothing(manager_client, emulator):
    response = manager_client.get("/app/frame")

    assert response.status_code == 302
    assert response["Location"] == "/app/"
    assert emulator.calls("POST /key/generator") == 0


def test_a_prefetch_of_the_frame_mints_nothing(manager_client, emulator):
    response = frame(manager_client, **{"Sec-Purpose": "prefetch"})

    assert response.status_code == 302
    assert emulator.calls("POST /key/generator") == 0


def test_deep_link_redirects_into_the_fleet_app_with_a_fresh_key(manager_client, emulator):
    response = manager_client.get("/app/open", headers={"Sec-Fetch-Site": "same-origin"})

    assert response.status_code == 302
    assert KEY_URL.search(response["Location"])
    assert response["Location"].startswith(emulator.login_url)
    assert "no-store" in response["Cache-Control"]
    app = requests.get(response["Location"], timeout=10)
    assert 'data-fleet-user="manager@example.com"' in app.text


def test_deep_link_from_another_site_asks_before_minting(manager_client, emulator):
    response = manager_client.get("/app/open", headers={"Sec-Fetch-Site": "cross-site"} | ENGLISH)

    assert response.status_code == 200
    assert "Open it logged in as you?" in response.text
    assert emulator.calls("POST /key/generator") == 0
    confirmed = manager_client.post("/app/open")
    assert confirmed.status_code == 302
    assert KEY_URL.search(confirmed["Location"])


@pytest.mark.parametrize(
    "fetch_site",
    [None, "none", "same-site", "cross-site"],
    ids=["no Sec-Fetch-Site", "typed or bookmarked", "same-site", "cross-site"],
)
def test_a_get_that_is_not_from_a_portal_page_mints_nothing_and_offers_a_button(
    manager_client, emulator, fetch_site
):
    headers = ENGLISH | ({"Sec-Fetch-Site": fetch_site} if fetch_site else {})

    response = manager_client.get("/app/open?next=/fines/", headers=headers)

    assert response.status_code == 200
    assert "Location" not in response
    assert "accessKey" not in response.text
    form = re.search(r'<form method="post" action="/app/open">(.*?)</form>', response.text, re.S)
    assert 'name="csrfmiddlewaretoken"' in form.group(1)
    assert '<input type="hidden" name="next" value="/fines/">' in form.group(1)
    assert emulator.calls("POST /key/generator") == 0
    assert not AccessKeyMint.objects.exists()


def test_a_same_origin_prefetch_mints_nothing(manager_client, emulator):
    headers = {"Sec-Fetch-Site": "same-origin", "Sec-Purpose": "prefetch"}

    response = manager_client.get("/app/open", headers=headers)

    assert response.status_code == 200
    assert emulator.calls("POST /key/generator") == 0


def test_the_deep_link_post_needs_the_pages_csrf_token_and_its_origin(manager, emulator):
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(manager)
    page = browser.get("/fines/")
    token = re.search(
        r'<form id="app-open" method="post" action="/app/open" target="_blank" rel="noopener" '
        r'hidden><input type="hidden" name="csrfmiddlewaretoken" value="([^"]+)"></form>',
        page.text,
    ).group(1)

    forged = browser.post("/app/open", {"next": "/fines/"})
    other_origin = browser.post(
        "/app/open", {"csrfmiddlewaretoken": token}, headers={"Origin": "https://evil.example"}
    )
    assert (forged.status_code, other_origin.status_code) == (403, 403)
    assert emulator.calls("POST /key/generator") == 0

    opened = browser.post(
        "/app/open",
        {"csrfmiddlewaretoken": token, "next": "/fines/"},
        headers={"Origin": "http://testserver"},
    )
    assert opened.status_code == 302
    assert KEY_URL.search(opened["Location"])


def test_deep_link_ignores_a_next_that_leaves_the_site(manager_client, client):
    client.logout()
    response = manager_client.get("/app/open?next=https://evil.example/")

    assert "evil.example" not in response.text


def test_anonymous_visitors_are_sent_to_log_in_and_nothing_is_minted(client, emulator):
    for path in ("/app/", "/app/frame", "/app/open", "/app/account"):
        response = client.get(path, headers=HTMX)
        assert response.status_code == 302
        assert response["Location"].startswith("/accounts/login/")
    assert emulator.calls("POST /key/generator") == 0


def test_a_successful_mint_is_audited_without_the_key(manager_client, manager):
    key = KEY_URL.search(frame(manager_client).text).group(1)

    mint = AccessKeyMint.objects.get()
    assert (mint.user, mint.purpose, mint.outcome) == (manager, MintPurpose.EMBED, "minted")
    assert mint.fleet_email == "manager@example.com"
    assert key not in str(AccessKeyMint.objects.values().get())


def test_the_account_notes_its_last_success(manager_client, manager):
    frame(manager_client)

    manager.fleet_account.refresh_from_db()
    assert manager.fleet_account.last_success_at is not None


# --- Failures: what the user sees, and that nothing was minted -------------------------


def assert_failure(client, outcome, message, *, status):
    """The iframe slot and the deep link both say `message`; nothing was minted."""
    framed = frame(client)
    opened = client.post("/app/open", headers=ENGLISH)  # a deep-link button of the portal

    assert framed.status_code == 200
    assert f'data-outcome="{outcome}"' in framed.text
    assert message in framed.text
    assert "<iframe" not in framed.text
    assert opened.status_code == status
    assert message in opened.text
    assert "no-store" in opened["Cache-Control"]
    assert set(AccessKeyMint.objects.values_list("outcome", flat=True)) == {outcome}
    return framed, opened


def test_no_fleet_login_linked_says_where_to_link_one(client, django_user_model, fleet_settings):
    client.force_login(django_user_model.objects.create_user("newcomer"))

    framed, _ = assert_failure(
        client, MintOutcome.NO_ACCOUNT, "You have not linked your fleet login yet.", status=409
    )
    assert 'href="/app/account?next=/app/"' in framed.text


def test_rejected_fleet_login_asks_to_update_the_password(manager_client, manager):
    account = manager.fleet_account
    account.set_password("an-old-password")
    account.save()

    framed, _ = assert_failure(
        manager_client,
        MintOutcome.LOGIN_REJECTED,
        "The fleet application refused your fleet e-mail or password.",
        status=409,
    )
    assert "Update your fleet password" in framed.text
    account.refresh_from_db()
    assert account.last_failure_at is not None


def test_rejected_api_credentials_point_the_administrator_to_fleet_doctor(
    manager_client, fleet_settings
):
    fleet_settings.FLEET_ACCESS_TOKEN = "other-env-access-token"
    fleet_settings.FLEET_SECRET_KEY = "other-env-secret-key"

    assert_failure(
        manager_client,
        MintOutcome.CREDENTIALS_REJECTED,
        "an administrator should run <code>manage.py fleet_doctor</code>",
        status=502,
    )


def test_no_permission_for_the_company_says_so(manager_client, fleet_settings):
    fleet_settings.FLEET_ACCESS_TOKEN = "no-permission-access-token"
    fleet_settings.FLEET_SECRET_KEY = "no-permission-secret-key"

    assert_failure(
        manager_client,
        MintOutcome.PERMISSION_DENIED,
        "has no permission for your company",
        status=403,
    )


def test_rate_limited_says_when_and_retries_by_itself(manager_client, emulator, held_clock):
    # The clock held: the 30 s still 30 s on a slow day.
    emulator.fault("/key/generator", status=429, retry_after=30, count=1)

    framed = frame(manager_client)

    assert "The fleet service is busy and asked us to wait. Retrying in 30 s" in framed.text
    assert 'hx-trigger="load delay:30s"' in framed.text
    # The route now cools down: the deep link says so without calling the API again.
    opened = manager_client.post("/app/open", headers=ENGLISH)
    assert opened.status_code == 429
    assert opened["Retry-After"] == "30"
    assert emulator.calls("POST /key/generator") == 1


@pytest.mark.parametrize(
    "fault",
    [{"drop": True, "count": 2}, {"status": 503, "count": 2}, {"delay": 1.5, "count": 2}],
    ids=["connection dropped", "503", "slow"],
)
def test_fleet_service_down_or_slow_says_try_again(manager_client, emulator, fleet_settings, fault):
    fleet_settings.FLEET_READ_TIMEOUT = 0.5
    emulator.fault("/key/generator", **fault)

    framed, _ = assert_failure(
        manager_client,
        MintOutcome.UNAVAILABLE,
        "The fleet service did not answer in time. Nothing was opened",
        status=503,
    )
    assert "Try again" in framed.text


def test_a_broken_answer_is_reported_not_a_500(manager_client, emulator):
    emulator.fault("/key/generator", malformed=True, count=2)

    assert_failure(
        manager_client,
        MintOutcome.ERROR,
        "The fleet service answered something unexpected.",
        status=502,
    )


def test_an_unknown_refusal_is_shown_as_the_vendor_said_it_and_audited_as_other_error(
    manager_client, emulator, manager
):
    # A v1 code the spec does not document: not "wrong password", not the portal's credentials.
    body = {"error": True, "code": "fbk_042", "message": "Conta suspensa", "traceId": "tr-42"}
    emulator.fault("/key/generator", status=401, body=body, count=2)

    framed, opened = assert_failure(
        manager_client,
        MintOutcome.ERROR,
        "The fleet service refused to open the application:",
        status=502,
    )

    for page in (framed, opened):
        assert '<code data-testid="mint-refusal-code">fbk_042</code>' in page.text
        assert '<dd data-testid="mint-refusal-message">Conta suspensa</dd>' in page.text
        assert '<code data-testid="mint-refusal-trace">tr-42</code>' in page.text
        assert "refused your fleet e-mail or password" not in page.text
        assert "fleet_doctor" not in page.text
    audit = AccessKeyMint.objects.first()
    assert audit.get_outcome_display() == "other error"
    assert "fbk_042" in audit.detail
    assert "tr-42" in audit.trace_id


def test_wrong_password_is_only_the_configured_code(manager_client, manager, fleet_settings):
    # Against a vendor whose wrong-login code was not configured, the emulator's
    # fbk_003 is an unknown refusal: shown with its code, not guessed at.
    fleet_settings.FLEET_WRONG_LOGIN_CODES = []
    account = manager.fleet_account
    account.set_password("an-old-password")
    account.save()

    framed, _ = assert_failure(
        manager_client,
        MintOutcome.ERROR,
        "The fleet service refused to open the application:",
        status=502,
    )

    assert '<code data-testid="mint-refusal-code">fbk_003</code>' in framed.text
    assert "E-mail ou senha inv" in framed.text
