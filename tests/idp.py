"""A real OpenID Connect provider for the tests: idp/server.mjs (panva's oidc-provider) on loopback.

`start_identity_provider(config)` starts one with its test controls; `sign_in_at_provider` and
`sign_out_at_provider` do what a person does on its own pages, without a browser.
`identity_provider_or_skip(config)` is the same start for fixtures: it skips loudly when node or
idp/node_modules are missing (`make idp` installs them), and fails instead under CI=true.
"""

from __future__ import annotations

import json
import os
import queue
import re
import shutil
import subprocess
import tempfile
import threading
import time
from collections import deque
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urljoin, urlsplit

import pytest
import requests

from bench.servers import stop

ROOT = Path(__file__).resolve().parent.parent
IDP_DIR = ROOT / "idp"
SERVER = IDP_DIR / "server.mjs"
START_TIMEOUT = 20.0
HTTP_TIMEOUT = 10.0
_LISTENING = re.compile(r"^listening on (http://\S+)$")
_MAX_STEPS = 20  # redirects and forms within the provider before we call it a loop


class SignInRefused(Exception):
    """The provider's login form came back with its error (a wrong username or password)."""

    def __init__(self, page_text: str) -> None:
        super().__init__(f"the provider refused the sign-in: {page_text}")
        self.page_text = page_text


class ProviderPageError(Exception):
    """The provider answered something a person could not go on from (an error page, a loop)."""


def node_available() -> str | None:
    """The path of `node`, or None when it is not on PATH."""
    return shutil.which("node")


def provider_installed() -> bool:
    """Whether idp/node_modules holds oidc-provider (`make idp` installs it)."""
    return (IDP_DIR / "node_modules" / "oidc-provider" / "package.json").is_file()


def missing_requirement() -> str | None:
    """Why the identity provider cannot run here, or None when it can."""
    if node_available() is None:
        return "node is not on PATH"
    if not provider_installed():
        return "idp/node_modules/oidc-provider is missing (run `make idp`)"
    return None


def skip_unless_identity_provider_can_run() -> None:
    """Skip, loudly, when the identity provider cannot run; fail instead under CI=true."""
    missing = missing_requirement()
    if missing is None:
        return
    message = f"!!! {missing}: the identity-provider tests cannot run"
    if os.environ.get("CI") == "true":
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


def _origin(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    return parts.scheme, parts.netloc


class IdentityProvider:
    """A running `node idp/server.mjs` and the calls of its test controls."""

    def __init__(
        self, config: dict[str, Any], *, test_controls: bool = True, host: str = "127.0.0.1"
    ) -> None:
        self.config = config
        self.test_controls = test_controls
        self.host = host
        self.port = 0  # the real port once started; kept for start() after stop()
        self.issuer = ""
        self.process: subprocess.Popen[str] | None = None
        self.http = requests.Session()
        self._directory = tempfile.TemporaryDirectory(prefix="idp-")
        self.config_path = Path(self._directory.name) / "config.json"
        self.config_path.write_text(json.dumps(config), encoding="utf-8")
        self._output: deque[str] = deque(maxlen=200)

    # -- the process -------------------------------------------------------------------------

    def start(self) -> None:
        """Start the provider; after stop(), again on the same port (and so the same issuer)."""
        if self.process is not None and self.process.poll() is None:
            return
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            error = self._start_once(deadline)
            if error is None:
                return
            # The same port may still be held for a moment by what just let it go.
            if self.port and "EADDRINUSE" in error and time.monotonic() < deadline - 1:
                time.sleep(0.2)
                continue
            raise RuntimeError(f"the identity provider did not start: {error}")

    def _start_once(self, deadline: float) -> str | None:
        node = node_available()
        if node is None:
            return "node is not on PATH"
        command = [
            node,
            str(SERVER),
            "--config",
            str(self.config_path),
            "--host",
            self.host,
            "--port",
            str(self.port),
        ]
        if self.test_controls:
            command.append("--test-controls")
        self._output.clear()
        process = subprocess.Popen(
            command,
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert process.stdout is not None
        assert process.stderr is not None
        first_lines: queue.Queue[str | None] = queue.Queue()
        # Both pipes are drained for the life of the process, so it never blocks on a full one.
        threading.Thread(
            target=self._drain, args=(process.stdout, first_lines), daemon=True
        ).start()
        threading.Thread(target=self._drain, args=(process.stderr, None), daemon=True).start()
        try:
            first = first_lines.get(timeout=max(0.1, deadline - time.monotonic()))
        except queue.Empty:
            first = None
        match = _LISTENING.match(first.strip()) if first else None
        if match is None:
            process.kill()
            process.wait(timeout=10)
            time.sleep(0.1)  # let the drains catch the last words
            printed = "\n".join(self._output) or "(nothing)"
            return f"its first line was {first!r}; it printed:\n{printed}"
        self.process = process
        self.issuer = match.group(1)
        self.port = urlsplit(self.issuer).port or 0
        return None

    def _drain(self, stream: Any, first_lines: queue.Queue[str | None] | None) -> None:
        for line in stream:
            if first_lines is not None:
                first_lines.put(line)
                first_lines = None
            else:
                self._output.append(line.rstrip("\n"))
        if first_lines is not None:
            first_lines.put(None)

    def output(self) -> str:
        """What the provider printed lately, besides its first line."""
        return "\n".join(self._output)

    def stop(self) -> None:
        """Stop the provider (SIGTERM, then SIGKILL after 10 s); start() brings it back."""
        process, self.process = self.process, None
        if process is None:
            return
        stop(process)

    def close(self) -> None:
        """Stop for good and remove the configuration file."""
        self.stop()
        self.http.close()
        self._directory.cleanup()

    def is_up(self) -> bool:
        """Whether the provider answers its discovery document now."""
        if not self.issuer:
            return False
        try:
            response = self.http.get(self.url("/.well-known/openid-configuration"), timeout=2)
        except requests.RequestException:
            return False
        return response.status_code == 200

    # -- its endpoints -----------------------------------------------------------------------

    def url(self, path: str) -> str:
        return f"{self.issuer}{path}"

    def metadata(self) -> dict[str, Any]:
        """The discovery document."""
        response = self.http.get(
            self.url("/.well-known/openid-configuration"), timeout=HTTP_TIMEOUT
        )
        response.raise_for_status()
        return response.json()

    def jwks(self) -> dict[str, Any]:
        """The published signing keys."""
        response = self.http.get(self.metadata()["jwks_uri"], timeout=HTTP_TIMEOUT)
        response.raise_for_status()
        return response.json()

    # -- its test controls -------------------------------------------------------------------

    def control(self, method: str, path: str, /, **json: Any) -> Any:
        """Call /_test/<path> with `json` as the body; the JSON answer."""
        response = self.http.request(
            method, self.url(f"/_test/{path}"), json=json or None, timeout=HTTP_TIMEOUT
        )
        response.raise_for_status()
        return response.json()

    def rotate_keys(self) -> list[str]:
        """New signing keys, published alone from now on; their kids."""
        kids: list[str] = self.control("POST", "rotate-keys")["kids"]
        return kids

    def next_id_token(
        self,
        claims: dict[str, Any] | None = None,
        sign_with: Literal["provider", "foreign"] = "provider",
    ) -> None:
        """The next ID token from the token endpoint gets `claims` merged over its own and is
        signed again with the provider's key (or a key it never published, same kid)."""
        self.control("POST", "next-id-token", claims=claims or {}, sign_with=sign_with)

    def update_user(self, username: str, /, **fields: Any) -> dict[str, Any]:
        """Change a user's claims for the tokens to come; the user as it is now (no password)."""
        user: dict[str, Any] = self.control("PUT", f"users/{username}", **fields)
        return user

    def reset(self) -> None:
        """The users from the configuration again, and no pending ID-token change (the keys
        stay as rotated)."""
        self.control("POST", "reset")


def start_identity_provider(
    config: dict[str, Any], *, test_controls: bool = True
) -> IdentityProvider:
    """Start `node idp/server.mjs` on a free loopback port with `config`; raise when it does not
    say it listens within 20 s (with what it printed)."""
    provider = IdentityProvider(config, test_controls=test_controls)
    try:
        provider.start()
    except BaseException:
        provider.close()
        raise
    return provider


def identity_provider_or_skip(
    config: dict[str, Any], *, test_controls: bool = True
) -> IdentityProvider:
    """start_identity_provider for a fixture: skipped loudly (failed under CI=true) when node or
    idp/node_modules are missing."""
    skip_unless_identity_provider_can_run()
    return start_identity_provider(config, test_controls=test_controls)


# -- a person on the provider's pages, without a browser ---------------------------------------


class _Form:
    def __init__(self, attributes: dict[str, str]) -> None:
        self.attributes = attributes
        self.action = attributes.get("action", "")
        self.method = attributes.get("method", "get").lower()
        self.inputs: list[dict[str, str]] = []

    def field_names(self) -> set[str]:
        return {field.get("name", "") for field in self.inputs}

    def hidden_values(self) -> dict[str, str]:
        return {
            field["name"]: field.get("value", "")
            for field in self.inputs
            if field.get("type", "text").lower() == "hidden" and field.get("name")
        }


class _Page(HTMLParser):
    """A page's forms (with their inputs) and its visible text."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.forms: list[_Form] = []
        self._form: _Form | None = None
        self._skipping = 0
        self._text: list[str] = []
        self.feed(html)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = {name: value or "" for name, value in attrs}
        if tag in {"script", "style", "title"}:
            self._skipping += 1
        elif tag == "form":
            self._form = _Form(attributes)
            self.forms.append(self._form)
        elif tag == "input" and self._form is not None:
            self._form.inputs.append(attributes)

    def handle_endtag(self, tag: str) -> None:
        if tag in {"script", "style", "title"}:
            self._skipping = max(0, self._skipping - 1)
        elif tag == "form":
            self._form = None

    def handle_data(self, data: str) -> None:
        if not self._skipping and data.strip():
            self._text.append(data.strip())

    @property
    def text(self) -> str:
        return " ".join(self._text)

    def login_form(self) -> _Form | None:
        for form in self.forms:
            if {"username", "password"} <= form.field_names():
                return form
        return None


def _follow(
    http: requests.Session, response: requests.Response, origin: tuple[str, str]
) -> tuple[str | None, requests.Response]:
    """Follow redirects within `origin`: (the first Location that leaves it, None) or
    (None, the first response that is not a redirect)."""
    for _ in range(_MAX_STEPS):
        if not response.is_redirect:
            return None, response
        location = urljoin(response.url, response.headers["Location"])
        if _origin(location) != origin:
            return location, response
        response = http.get(location, allow_redirects=False, timeout=HTTP_TIMEOUT)
    raise ProviderPageError(f"more than {_MAX_STEPS} redirects within the provider")


def _submit_automatic_form(
    http: requests.Session, response: requests.Response, page: _Page
) -> requests.Response | None:
    """Post a page's only form when it is one a script submits by itself (nothing to type)."""
    forms = [form for form in page.forms if form.method == "post"]
    if response.status_code != 200 or len(forms) != 1:
        return None
    (form,) = forms
    if form.field_names() - set(form.hidden_values()):
        return None
    return http.post(
        urljoin(response.url, form.action),
        data=form.hidden_values(),
        allow_redirects=False,
        timeout=HTTP_TIMEOUT,
    )


def _unexpected(response: requests.Response, page: _Page) -> ProviderPageError:
    return ProviderPageError(
        f"{response.request.method} {response.url} answered {response.status_code}: {page.text}"
    )


def sign_in_at_provider(
    authorization_url: str,
    username: str,
    password: str,
    *,
    session: requests.Session | None = None,
) -> str:
    """Open `authorization_url`, sign in on the provider's page when it asks, and return the
    URL it sends the browser back to (the client's callback, not requested here).

    With the same `session` again, the provider's session cookie makes it single sign-on: the
    callback comes back without a form. Raises SignInRefused when the form comes back with its
    error, ProviderPageError on any other page.
    """
    http = session if session is not None else requests.Session()
    origin = _origin(authorization_url)
    response = http.get(authorization_url, allow_redirects=False, timeout=HTTP_TIMEOUT)
    posted = False
    for _ in range(_MAX_STEPS):
        leaving, response = _follow(http, response, origin)
        if leaving is not None:
            return leaving
        page = _Page(response.text)
        form = page.login_form()
        if form is None and (submitted := _submit_automatic_form(http, response, page)):
            response = submitted  # what a browser's script does (switching accounts logs out)
            continue
        if form is None or response.status_code not in {200, 401}:
            raise _unexpected(response, page)
        if posted:
            raise SignInRefused(page.text)
        data = {**form.hidden_values(), "username": username, "password": password}
        response = http.post(
            urljoin(response.url, form.action),
            data=data,
            allow_redirects=False,
            timeout=HTTP_TIMEOUT,
        )
        posted = True
    raise ProviderPageError(f"more than {_MAX_STEPS} pages at the provider")


def sign_out_at_provider(end_session_url: str, *, session: requests.Session) -> str:
    """Open `end_session_url` (id_token_hint and post_logout_redirect_uri already in it), submit
    the page's form as the browser (or a person) would, and return where the provider sends
    the browser: the post-logout redirect URI, or the provider's own last page when it stays."""
    origin = _origin(end_session_url)
    response = session.get(end_session_url, allow_redirects=False, timeout=HTTP_TIMEOUT)
    submitted = False
    for _ in range(_MAX_STEPS):
        leaving, response = _follow(session, response, origin)
        if leaving is not None:
            return leaving
        page = _Page(response.text)
        if response.status_code != 200:
            raise _unexpected(response, page)
        if not any(form.method == "post" for form in page.forms):
            return response.url
        posted = None if submitted else _submit_automatic_form(session, response, page)
        if posted is None:
            raise _unexpected(response, page)
        response = posted
        submitted = True
    raise ProviderPageError(f"more than {_MAX_STEPS} pages at the provider")
