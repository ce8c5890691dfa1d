"""The Fleet API's paths as the client builds them: a route's parameters each one path
segment (`path_segment`), and a route a deployment names (`api_path`) checked."""

from __future__ import annotations

from urllib.parse import quote


def path_segment(value: str) -> str:
    """`value` encoded as exactly one URL path segment.

    `/`, `%`, `?` and `#` are all escaped, so a plate like `../key/generator`
    or `ABC%2F1` stays inside its route. Values that cannot be one segment
    are refused before anything is sent.
    """
    if not isinstance(value, str) or value in ("", ".", ".."):
        raise ValueError("a path parameter must be a non-empty string other than '.' or '..'")
    if any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in value):
        raise ValueError("a path parameter must not contain control characters")
    return quote(value, safe="")


def api_path(value: str) -> str:
    """`value` if it can be a route of its own: absolute, no query, no placeholder."""
    if (
        not isinstance(value, str)
        or not value.startswith("/")
        or any(c in value for c in "?#{}%")
        or any(c.isspace() or ord(c) < 0x20 for c in value)
    ):
        raise ValueError("an API path must start with '/' and hold no query, space or braces")
    return value
