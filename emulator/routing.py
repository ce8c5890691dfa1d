"""Route templates matched against the raw path.

The path is split on `/` *before* each segment is percent-decoded, so an
encoded slash (`..%2Fkey%2Fgenerator`) stays inside its segment: it can be an
odd plate, never a way into another route. Query strings play no part.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import unquote

from emulator.messages import Call, Response

if TYPE_CHECKING:
    from emulator.state import Emulator

Handler = Callable[["Emulator", Call], Response]


def split_path(path: str) -> tuple[str, ...]:
    return tuple(unquote(segment) for segment in path.removeprefix("/").split("/"))


@dataclass(frozen=True, slots=True)
class Route:
    method: str
    template: str  # "/v2/crlv/requests/{requestId}": a `{name}` is one whole segment
    handler: Handler

    def match(self, segments: Sequence[str]) -> dict[str, str] | None:
        pattern = split_path(self.template)
        if len(pattern) != len(segments):
            return None
        params = {}
        for expected, actual in zip(pattern, segments, strict=True):
            if expected.startswith("{") and expected.endswith("}"):
                if not actual:
                    return None
                params[expected[1:-1]] = actual
            elif expected != actual:
                return None
        return params


@dataclass(frozen=True, slots=True)
class Match:
    template: str
    params: dict[str, str]
    handler: Handler | None  # None: the path exists, not for this method
    allowed: tuple[str, ...]


class Router:
    def __init__(self, routes: Sequence[Route]) -> None:
        self.routes = tuple(routes)

    @property
    def templates(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(route.template for route in self.routes))

    def resolve(self, method: str, path: str) -> Match | None:
        """The route for this path, or None when no template fits it."""
        segments = split_path(path)
        candidates = [
            (route, params)
            for route in self.routes
            if (params := route.match(segments)) is not None
        ]
        if not candidates:
            return None
        allowed = tuple(route.method for route, _ in candidates)
        for route, params in candidates:
            if route.method == method:
                return Match(route.template, params, route.handler, allowed)
        route, params = candidates[0]
        return Match(route.template, params, None, allowed)
