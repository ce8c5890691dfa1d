"""Everything a running emulator remembers, and how to go back to the start.

Each part guards its own mutable state with its own lock (the HTTP server
answers on many threads); `reset` brings all of them back to how they were
at start-up, which the tests do before each test.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from emulator.clock import Clock
from emulator.cnh import DEFAULT_TIMEOUT_WAIT, CnhService
from emulator.crlv import CrlvBook
from emulator.faults import FaultQueue
from emulator.fleet import Fleet, generate_vehicles
from emulator.minimal import Mode, random_spelling_seed
from emulator.ratelimit import RateLimiter
from emulator.traffic import Traffic
from emulator.webapp import WebApp


@dataclass(frozen=True, slots=True)
class Settings:
    vehicles: int = 200
    seed: int = 1
    rate_limit: int = 600  # calls per window and access token; 0 turns limiting off
    rate_window: float = 60.0  # seconds
    cnh_timeout_wait: float = DEFAULT_TIMEOUT_WAIT  # seconds before the timeout CPF's 504
    minimal: bool = False  # answer only what the spec promises (minimal.py)
    spelling_seed: int = field(default_factory=random_spelling_seed)  # minimal mode's names
    handovers: bool = False  # vehicles change hands as the clock moves (handovers.py)


class Emulator:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.clock = Clock()
        self.fleet = Fleet(generate_vehicles(settings.vehicles, settings.seed), seed=settings.seed)
        self.crlv = CrlvBook(self.fleet, seed=settings.seed)
        self.webapp = WebApp()
        self.faults = FaultQueue()
        self.rate_limiter = RateLimiter(settings.rate_limit, settings.rate_window)
        self.traffic = Traffic()
        self.cnh = CnhService(seed=settings.seed, timeout_wait=settings.cnh_timeout_wait)
        self.mode = Mode(minimal=settings.minimal, spelling_seed=settings.spelling_seed)
        # Whether answers show the drivers of the clock's hour (on) or each vehicle's own.
        # A bare bool: replacing it is atomic, and a call that read it just before a
        # switch answers the old way, as with any switch.
        self.handovers = settings.handovers
        self.reset()

    def reset(self) -> None:
        self.clock.reset()
        self.crlv.reset(self.clock.now())
        self.webapp.reset()
        self.faults.clear()
        self.rate_limiter.configure(
            limit=self.settings.rate_limit, window=self.settings.rate_window
        )
        self.traffic.clear()
        self.cnh.reset()
        self.mode.set(minimal=self.settings.minimal, spelling_seed=self.settings.spelling_seed)
        self.handovers = self.settings.handovers
