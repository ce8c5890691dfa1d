"""Driver licence (CNH) lookups: fictitious licences, and a CPF whose lookup times out.

The spec (4.5, 7.3, 8) gives the behaviour, not the shapes: the licensing
service is waited for up to 60 s; then an individual lookup answers 504 with
`Retry-After` and a batch marks that item `status: error`. Here the service
answers at once for every valid CPF with a licence made up from the CPF and
the seed, except for three test CPFs (README): one times out (after a wait that
defaults to the real 60 s and is set short in tests), one has no licence, and one's
licence is suspended.
"""

from __future__ import annotations

import random
import threading
from datetime import date, timedelta
from typing import Any

TIMEOUT_CPF = "50450450406"  # 504.504.504-06: the licensing service never answers in time
NO_LICENCE_CPF = "00000040495"  # 000.000.404-95: nobody holds a licence with this CPF
SUSPENDED_CPF = "42242242245"  # 422.422.422-45: this driver's licence is suspended
DEFAULT_TIMEOUT_WAIT = 60.0  # spec section 8
DEFAULT_RETRY_AFTER = 30
BATCH_LIMIT = 100

_FIRST_NAMES = (
    "Ana", "Bruno", "Carla", "Daniel", "Eduarda", "Felipe", "Gabriela", "Heitor", "Isabela",
    "João", "Larissa", "Marcos", "Natália", "Otávio", "Patrícia", "Rafael", "Sabrina", "Tiago",
    "Vanessa", "Wellington",
)  # fmt: skip
_SURNAMES = (
    "Silva", "Santos", "Oliveira", "Souza", "Rodrigues", "Ferreira", "Alves", "Pereira", "Lima",
    "Gomes", "Costa", "Ribeiro", "Martins", "Carvalho", "Araújo", "Melo", "Barbosa", "Rocha",
)  # fmt: skip
_STATES = ("SP", "RJ", "MG", "PR", "RS", "SC", "BA", "GO", "PE", "DF")
# Weighted as a company's drivers would be: mostly B, professional drivers C to E.
_CATEGORIES = {"B": 40, "AB": 25, "C": 8, "D": 10, "E": 7, "AD": 5, "AE": 5}
_SITUATIONS = {"REGULAR": 85, "VENCIDA": 8, "SUSPENSA": 5, "CASSADA": 2}


def normalize(text: str) -> str:
    return text.strip().replace(".", "").replace("-", "").replace(" ", "")


def is_cpf(text: str) -> bool:
    """Eleven digits, not all the same, with both check digits right."""
    digits = normalize(text)
    if len(digits) != 11 or not digits.isascii() or not digits.isdigit() or len(set(digits)) == 1:
        return False
    numbers = [int(d) for d in digits]
    for position in (9, 10):
        total = sum(n * (position + 1 - i) for i, n in enumerate(numbers[:position]))
        if total * 10 % 11 % 10 != numbers[position]:
            return False
    return True


class CnhService:
    """The licensing service behind the lookups, and how the timeout CPF behaves."""

    def __init__(self, *, seed: int, timeout_wait: float = DEFAULT_TIMEOUT_WAIT) -> None:
        self._seed = seed
        self._default_wait = timeout_wait
        self._lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        with self._lock:
            self._wait = self._default_wait
            self._retry_after = DEFAULT_RETRY_AFTER
            self._recover_after: int | None = None

    @property
    def config(self) -> dict[str, Any]:
        with self._lock:
            return {
                "timeout_wait": self._wait,
                "retry_after": self._retry_after,
                "recover_after": self._recover_after,
            }

    def configure(self, **changes: Any) -> None:
        """Set `timeout_wait`, `retry_after` and/or `recover_after` (already checked)."""
        with self._lock:
            self._wait = changes.get("timeout_wait", self._wait)
            self._retry_after = changes.get("retry_after", self._retry_after)
            if "recover_after" in changes:
                self._recover_after = changes["recover_after"]

    @property
    def timeout_wait(self) -> float:
        with self._lock:
            return self._wait

    @property
    def retry_after(self) -> int:
        with self._lock:
            return self._retry_after

    def times_out(self, cpf: str) -> bool:
        """Whether this lookup of `cpf` times out; counts down `recover_after`."""
        if cpf != TIMEOUT_CPF:
            return False
        with self._lock:
            if self._recover_after is None:
                return True
            if self._recover_after > 0:
                self._recover_after -= 1
                return True
            return False

    def licence(self, cpf: str, today: date) -> dict[str, Any]:
        """The fictitious licence of `cpf`: the same for the same seed and CPF."""
        rng = random.Random(f"cnh:{self._seed}:{cpf}")
        situation = _weighted(rng, _SITUATIONS)
        if cpf == SUSPENDED_CPF:
            situation = "SUSPENSA"
        if situation == "VENCIDA":
            expires = today - timedelta(days=rng.randint(10, 400))
        else:
            expires = today + timedelta(days=rng.randint(30, 3650))
        first = today - timedelta(days=rng.randint(2 * 365, 35 * 365))
        number = str(rng.randint(10**10, 10**11 - 1))
        state = rng.choice(_STATES)
        return {
            "cpf": cpf,
            "status": "ok",
            "name": f"{rng.choice(_FIRST_NAMES)} {rng.choice(_SURNAMES)} {rng.choice(_SURNAMES)}",
            "cnhNumber": number,
            "category": _weighted(rng, _CATEGORIES),
            "situation": situation,
            "expiresAt": expires.isoformat(),
            "firstLicenceAt": first.isoformat(),
            "points": 0 if rng.random() < 0.6 else rng.randint(1, 25),
            # Members the spec does not name, for tolerant readers.
            "issuingState": state,
            "remarks": ["EAR"] if rng.random() < 0.3 else [],
        }


def _weighted(rng: random.Random, weights: dict[str, int]) -> str:
    return rng.choices(list(weights), weights=list(weights.values()))[0]
