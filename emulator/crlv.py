"""e-CRLV issuance requests and their pre-signed PDF links (spec 2.4, 2.5, 4.3, 4.4).

A request's status is not stored: it is computed from the emulator's clock
and the request's schedule (`pending` for a while, `in_progress` for a while,
then its outcome), so moving the clock moves every request.
"""

from __future__ import annotations

import random
import secrets
import threading
import uuid
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from emulator.clock import isoformat
from emulator.fleet import Fleet, Vehicle

DOWNLOAD_VALIDITY = timedelta(hours=1)  # spec section 8
# Minted links are remembered so that an expired one answers 410 rather than
# 404; past this many, the oldest are forgotten.
_DOWNLOADS_KEPT = 10_000

DEFAULT_PENDING_SECONDS = 5.0
DEFAULT_IN_PROGRESS_SECONDS = 10.0

FAILURE = {
    "code": "DETRAN_UNAVAILABLE",
    "message": "O DETRAN não respondeu à emissão do CRLV-e. Tente novamente mais tarde.",
}


class Status(StrEnum):
    PENDING = "pending"
    IN_PROGRESS = "in_progress"
    COMPLETED = "completed"
    FAILED = "failed"


OUTCOMES = (Status.COMPLETED, Status.FAILED)


@dataclass(frozen=True, slots=True)
class CrlvRequest:
    request_id: str
    plate: str
    created_at: datetime
    pending_seconds: float
    in_progress_seconds: float
    outcome: Status

    @property
    def started_at(self) -> datetime:
        return self.created_at + timedelta(seconds=self.pending_seconds)

    @property
    def finished_at(self) -> datetime:
        return self.started_at + timedelta(seconds=self.in_progress_seconds)

    def status_at(self, now: datetime) -> Status:
        if now < self.started_at:
            return Status.PENDING
        if now < self.finished_at:
            return Status.IN_PROGRESS
        return self.outcome

    def updated_at(self, now: datetime) -> datetime:
        """When the status last changed, as of `now`."""
        if now < self.started_at:
            return self.created_at
        if now < self.finished_at:
            return self.started_at
        return self.finished_at


@dataclass(frozen=True, slots=True)
class Download:
    request_id: str
    plate: str
    expires_at: datetime


# Seeded requests, one per state, on the first vehicles. Their schedules put
# them in that state at start-up (or reset) and keep them there for two hours
# of the clock, so a demo or a test can rely on them without waiting.
_STABLE = 2 * 3600.0
_SEEDED = (
    # (created this long before start, pending s, in progress s, outcome)
    (60.0, _STABLE, DEFAULT_IN_PROGRESS_SECONDS, Status.COMPLETED),  # pending
    (120.0, 60.0, _STABLE, Status.COMPLETED),  # in_progress
    (86_400.0, 30.0, 90.0, Status.COMPLETED),  # completed
    (86_400.0, 30.0, 300.0, Status.FAILED),  # failed
)


class CrlvBook:
    """Every e-CRLV request the emulator knows, and the download links minted."""

    def __init__(self, fleet: Fleet, *, seed: int) -> None:
        self._fleet = fleet
        # Seeded ids come from the seed, so they are the same on every run.
        rng = random.Random(f"crlv:{seed}")
        self._seeded_ids = [str(uuid.UUID(int=rng.getrandbits(128), version=4)) for _ in _SEEDED]
        self._lock = threading.Lock()
        self._requests: dict[str, CrlvRequest] = {}
        self._downloads: OrderedDict[str, Download] = OrderedDict()

    def reset(self, now: datetime) -> None:
        """Forget created requests and links; re-anchor the seeded requests at `now`."""
        seeded = [
            CrlvRequest(
                request_id=request_id,
                plate=vehicle.car_plate,
                created_at=now - timedelta(seconds=age),
                pending_seconds=pending,
                in_progress_seconds=in_progress,
                outcome=outcome,
            )
            for request_id, vehicle, (age, pending, in_progress, outcome) in zip(
                self._seeded_ids, self._fleet.vehicles, _SEEDED, strict=False
            )
        ]
        with self._lock:
            self._requests = {request.request_id: request for request in seeded}
            self._downloads.clear()

    def create(
        self,
        vehicle: Vehicle,
        *,
        now: datetime,
        outcome: Status = Status.COMPLETED,
        pending_seconds: float = DEFAULT_PENDING_SECONDS,
        in_progress_seconds: float = DEFAULT_IN_PROGRESS_SECONDS,
    ) -> CrlvRequest:
        request = CrlvRequest(
            request_id=str(uuid.uuid4()),
            plate=vehicle.car_plate,
            created_at=now,
            pending_seconds=pending_seconds,
            in_progress_seconds=in_progress_seconds,
            outcome=outcome,
        )
        with self._lock:
            self._requests[request.request_id] = request
        return request

    def get(self, request_id: str) -> CrlvRequest | None:
        try:
            canonical = str(uuid.UUID(request_id))
        except ValueError:
            return None
        with self._lock:
            return self._requests.get(canonical)

    def all(self) -> list[CrlvRequest]:
        with self._lock:
            return list(self._requests.values())

    def latest_issued(self, plate: str, now: datetime) -> CrlvRequest | None:
        """The vehicle's most recently completed request, if any."""
        done = [
            request
            for request in self._for_plate(plate)
            if request.status_at(now) is Status.COMPLETED
        ]
        return max(done, key=lambda request: request.finished_at, default=None)

    def in_progress(self, plate: str, now: datetime) -> CrlvRequest | None:
        """The vehicle's most recent request not finished yet, if any."""
        open_requests = [
            request
            for request in self._for_plate(plate)
            if request.status_at(now) in (Status.PENDING, Status.IN_PROGRESS)
        ]
        return max(open_requests, key=lambda request: request.created_at, default=None)

    def describe(self, request: CrlvRequest, *, now: datetime, base_url: str) -> dict[str, object]:
        """The request as the API shows it; a completed one gets a new download link."""
        status = request.status_at(now)
        described: dict[str, object] = {
            "requestId": request.request_id,
            "carPlate": request.plate,
            "status": str(status),
            "createdAt": isoformat(request.created_at),
            "updatedAt": isoformat(request.updated_at(now)),
        }
        if status is Status.COMPLETED:
            token, download = self._mint(request, now)
            described["document"] = {
                "downloadUrl": f"{base_url}/files/crlv/{token}.pdf",
                "expiresAt": isoformat(download.expires_at),
            }
        elif status is Status.FAILED:
            described["failure"] = dict(FAILURE)
        return described

    def download(self, token: str) -> Download | None:
        with self._lock:
            return self._downloads.get(token)

    def _mint(self, request: CrlvRequest, now: datetime) -> tuple[str, Download]:
        token = secrets.token_urlsafe(24)
        download = Download(request.request_id, request.plate, now + DOWNLOAD_VALIDITY)
        with self._lock:
            self._downloads[token] = download
            while len(self._downloads) > _DOWNLOADS_KEPT:
                self._downloads.popitem(last=False)
        return token, download

    def _for_plate(self, plate: str) -> list[CrlvRequest]:
        with self._lock:
            return [request for request in self._requests.values() if request.plate == plate]
