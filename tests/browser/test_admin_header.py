"""The admin's top bar (its name, the greeting and the user's links) on one line on a small
laptop's screen (1280 px), in English and in Portuguese, whose words are longer, for an
administrator signed in through the organisation's provider (named by a long e-mail)."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# The boxes of the header's parts, and each text's line height, measured in the page.
MEASURE = """() => {
  const box = (selector) => {
    const element = document.querySelector(selector);
    const rect = element.getBoundingClientRect();
    const line = parseFloat(getComputedStyle(element).lineHeight)
      || 1.2 * parseFloat(getComputedStyle(element).fontSize);
    return {top: rect.top, bottom: rect.bottom, height: rect.height, right: rect.right, line};
  };
  return {
    name: box("#site-name"),
    tools: box("#user-tools"),
    width: document.documentElement.clientWidth,
  };
}"""


@pytest.mark.parametrize(
    ("locale", "log_in"), [("en-US", "Log in"), ("pt-BR", "Entrar")], ids=["en", "pt-BR"]
)
def test_the_admins_top_bar_is_one_line_at_1280_px(
    browser, live_server, fleet_settings, admin_user, locale, log_in
):
    admin_user.username = "maria.aparecida.dos.santos@transportadora-exemplo.com.br"
    admin_user.save()
    context = browser.new_context(
        base_url=live_server.url, locale=locale, viewport={"width": 1280, "height": 800}
    )
    context.set_default_timeout(10_000)
    page = context.new_page()
    page.goto("/accounts/login/?next=/admin/")
    page.locator("#id_username").fill(admin_user.username)
    page.locator("#id_password").fill("password")
    page.get_by_role("button", name=log_in, exact=True).click()
    page.wait_for_url("**/admin/")

    measured = page.evaluate(MEASURE)
    context.close()

    name, tools = measured["name"], measured["tools"]
    # Each part is a single line of its text, the two side by side, within the screen.
    assert tools["height"] < 1.5 * max(tools["line"], 24), measured
    assert name["height"] < 1.5 * name["line"], measured
    assert tools["top"] < name["bottom"], measured
    assert name["top"] < tools["bottom"], measured
    assert tools["right"] <= measured["width"], measured
