"""What the emulator tests share: their own signing code, the demo credentials, a client.

Deliberately independent of `fleet.api`: these tests check the emulator
against the spec, and a shared helper would let one mistake pass on both
sides.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import requests

DEMO_TOKEN, DEMO_SECRET = "demo-access-token", "demo-secret-key"
OTHER_ENV_TOKEN, OTHER_ENV_SECRET = "other-env-access-token", "other-env-secret-key"
NO_PERMISSION_TOKEN, NO_PERMISSION_SECRET = "no-permission-access-token", "no-permission-secret-key"
MANAGER, DRIVER, WEB_PASSWORD = "manager@example.com", "driver@example.com", "demo-password"

V2_ERROR = "urn:fleet-api-v2:error:"
UUID_PATTERN = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
OLD_PLATE = r"[A-Z]{3}[0-9]{4}"
MERCOSUL_PLATE = r"[A-Z]{3}[0-9][A-Z][0-9]{2}"

# shared/ stands beside the checkout, here and in CI.
VECTORS_FILE = Path(__file__).resolve().parents[3] / "shared" / "vectors" / "hmac.json"

# One route of each kind: (method, path, version). Paths with an id use a
# value that exists after reset or not at all; auth is checked before that.
V1_ROUTES = [("GET", "/key/list-cars"), ("POST", "/key/generator")]
V2_ROUTES = [
    ("GET", "/v2/crlv/requests/00000000-0000-4000-8000-000000000000"),
    ("GET", "/v2/crlv/vehicles/ABC1234"),
]


def sign(access_token: str, secret_key: str, digest: Callable[..., Any] = hashlib.sha256) -> str:
    """Lowercase hex HMAC, key = secret key, message = access token (spec 5.3)."""
    return hmac.new(secret_key.encode(), access_token.encode(), digest).hexdigest()


def auth_headers(
    token: str = DEMO_TOKEN, secret: str = DEMO_SECRET, /, **replace: str | None
) -> dict[str, str]:
    """The three required headers; `replace` overrides one (None leaves it out)."""
    headers: dict[str, str | None] = {
        "Authorization": f"Basic {token}",
        "Key": sign(token, secret),
        "cache-control": "no-cache",
    }
    for name, value in replace.items():
        headers[name.replace("_", "-")] = value
    return {name: value for name, value in headers.items() if value is not None}


def list_cars(url: str) -> requests.Response:
    response = requests.get(f"{url}/key/list-cars", headers=auth_headers(), timeout=30)
    response.raise_for_status()
    return response


def load_vectors() -> list[dict[str, Any]]:
    vectors: list[dict[str, Any]] = json.loads(VECTORS_FILE.read_text())["vectors"]
    return vectors


class Api:
    """A plain HTTP client of the emulator's API routes."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.http = requests.Session()

    def call(
        self,
        method: str,
        path: str,
        *,
        headers: Mapping[str, str] | None = None,
        **kwargs: Any,
    ) -> requests.Response:
        """Call with the demo credentials unless `headers` says otherwise.

        A POST without a body sends the demo web-app login, so that the same
        loop can call every route.
        """
        if headers is None:
            headers = auth_headers()
        if method == "POST" and "json" not in kwargs and "data" not in kwargs:
            kwargs["json"] = {"email": MANAGER, "password": WEB_PASSWORD}
        return self.http.request(method, self.url + path, headers=headers, timeout=10, **kwargs)

    def get(self, path: str, **kwargs: Any) -> requests.Response:
        return self.call("GET", path, **kwargs)

    def post(self, path: str, **kwargs: Any) -> requests.Response:
        return self.call("POST", path, **kwargs)

    def access_key(self, email: str = MANAGER) -> str:
        response = self.post("/key/generator", json={"email": email, "password": WEB_PASSWORD})
        assert response.status_code == 200, response.text
        key: str = response.json()["accessKey"]
        return key
