"""What `bench.dashboard` runs inside the portal's own Django processes: the writer of
`--writer`, and the final check of the figures.

`python -m bench.dashboard_writer RATE STOP_FILE FIRST_ID` (the portal's environment):
from `FIRST_ID`, a new fine every 1/RATE s, and with every fifth one a change to one
written before (treated, a new amount, its document), each stored as the receiver
stores a delivery (`delivery_receive`) and processed at once by the function the
worker runs (`deliveries_process_received`): the tallies are kept as in production.
It prints one line when it starts, and what it wrote as JSON once `STOP_FILE` exists.

`figures_check()` (through `portal_call`): where the dashboard's figures, as it reads
them, differ from the sums computed from scratch over the fines.
"""

from __future__ import annotations

import json
import random
import sys
import time
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

AMOUNTS = ["88.38", "130.16", "195.23", "293.47", "880.41", "1467.35"]


def bench_plate(number: int) -> str:
    """One of the 2,000 vehicles the fill writes fines for (old and Mercosul plates)."""
    n = number % 2000
    letters = f"{chr(65 + n % 26)}{chr(65 + n // 26 % 26)}{chr(65 + n // 676 % 26)}"
    return letters + (f"{n % 10}{chr(65 + n % 7)}{n % 100:02d}" if n % 2 else f"{n % 10000:04d}")


def write(rate: float, stop: Path, first_id: int) -> dict[str, int]:
    """Write until `stop` exists; how many new fines and changes were written."""
    from fleet.webhooks.processing import deliveries_process_received
    from fleet.webhooks.receive import delivery_receive

    rng = random.Random(first_id)
    sent: dict[int, dict[str, Any]] = {}
    written = changed = late = 0
    print("writing", flush=True)
    due = time.monotonic()
    while not stop.exists():
        now = datetime.now(UTC)
        number = first_id + written
        sent[number] = {
            "id": number,
            "treated": False,
            "carPlate": bench_plate(rng.randrange(2000)),
            "amount": rng.choice(AMOUNTS),
            "occurredAt": _iso(now - timedelta(days=rng.randrange(430))),
            "updatedAt": _iso(now),
        }
        payloads: list[dict[str, Any]] = [{"frame": sent[number], "linkFrame": None}]
        if written % 5 == 4:
            earlier = sent[first_id + rng.randrange(written)]
            earlier |= {"treated": not earlier["treated"], "updatedAt": _iso(now)}
            earlier["amount"] = rng.choice(AMOUNTS)
            payloads.append({"frame": earlier, "linkFrame": "https://detran.example/auto.pdf"})
            changed += 1
        for payload in payloads:
            delivery_receive(
                body=json.dumps(payload).encode(),
                content_type="application/json",
                headers={},
                source_address="127.0.0.1",
            )
        deliveries_process_received()
        written += 1
        due += 1 / rate
        if (wait := due - time.monotonic()) > 0:
            time.sleep(wait)
        else:
            late += 1
    return {"written": written, "changed": changed, "late": late}


def figures_check() -> list[str]:
    """The figures (`fine_figures`) that differ from plain aggregates over the fines, and
    the tallies that differ from their sums from scratch; empty when all agree."""
    from django.db.models import Count, Sum
    from django.utils import timezone

    from fleet.models import Fine
    from fleet.services.dashboard import fine_figures, local_midnight, month_start
    from fleet.services.tallies import fine_tallies_differences

    figures = fine_figures()
    today = timezone.localdate()
    fines = Fine.objects.order_by()
    untreated = fines.filter(treated=False)
    amount = Sum("amount", default=Decimal(0))

    def total(selected: Any) -> tuple[int, Decimal]:
        found = selected.aggregate(count=Count("pk"), amount=amount)
        return found["count"], _cent(found["amount"])

    expected: dict[str, Any] = {
        "untreated": total(untreated),
        "without document": fines.filter(link_frame="").count(),
        "recent": total(fines.filter(received_at__gte=local_midnight(figures.recent_since))),
        "months": [
            total(
                fines.filter(
                    occurred_at__gte=local_midnight(month_start(today, back=back)),
                    occurred_at__lt=local_midnight(month_start(today, back=back - 1)),
                )
            )
            for back in range(11, -1, -1)
        ],
        "top vehicles": list(
            untreated.exclude(registration="")
            .values("registration")
            .annotate(count=Count("pk"), amount=amount)
            .order_by("-amount", "-count", "registration")
            .values_list("registration", "count", "amount")[:5]
        ),
        "top drivers": list(
            untreated.filter(driver_id__isnull=False)
            .values("driver_id")
            .annotate(count=Count("pk"), amount=amount)
            .order_by("-amount", "-count", "driver_id")
            .values_list("driver_id", "count", "amount")[:5]
        ),
    }
    shown: dict[str, Any] = {
        "untreated": (figures.untreated.count, figures.untreated.amount),
        "without document": figures.without_document,
        "recent": (figures.recent.count, figures.recent.amount),
        "months": [(month.count, month.amount) for month in figures.months],
        "top vehicles": [(v.registration, v.count, v.amount) for v in figures.top_vehicles],
        "top drivers": [(d.driver_id, d.count, d.amount) for d in figures.top_drivers],
    }
    for name in ("top vehicles", "top drivers"):
        expected[name] = [(key, count, _cent(value)) for key, count, value in expected[name]]
    problems = [
        f"{name}: the dashboard shows {shown[name]}, the fines sum up to {value}"
        for name, value in expected.items()
        if shown[name] != value
    ]
    problems += [
        f"tally {dimension} {key}: {stored} stored, {counted} from scratch"
        for (dimension, key), (stored, counted) in fine_tallies_differences().items()
    ]
    return problems


def untreated_total() -> list[str | int]:
    """The untreated fines' count and R$ (as text), summed over the fines."""
    from django.db.models import Count, Sum

    from fleet.models import Fine

    found = Fine.objects.filter(treated=False).aggregate(
        count=Count("pk"), amount=Sum("amount", default=Decimal(0))
    )
    return [found["count"], str(_cent(found["amount"]))]


def tallies_version() -> int:
    from fleet.services.tallies import fine_tallies_version

    return fine_tallies_version()


def _cent(amount: Decimal) -> Decimal:
    """A sum to the cent (SQLite adds decimals as floating point numbers)."""
    return amount.quantize(Decimal("0.01"))


def _iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def main(argv: list[str]) -> int:
    import django

    django.setup()
    rate, stop, first_id = float(argv[0]), Path(argv[1]), int(argv[2])
    print(json.dumps(write(rate, stop, first_id)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
