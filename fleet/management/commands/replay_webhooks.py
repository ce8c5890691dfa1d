"""`manage.py replay_webhooks`: process stored webhook deliveries again, once a cause is fixed."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from fleet.models import REPLAYABLE_STATUSES, DeliveryStatus, WebhookDelivery
from fleet.webhooks.processing import BODY_EMPTIED, delivery_replay

_BATCH = 500


class Command(BaseCommand):
    help = (
        "Process stored webhook deliveries again (idempotent: a replayed delivery never "
        "applies twice). By default every delivery kept as invalid, failed or of an unknown "
        "kind, and those received but never processed (a worker that stopped mid-way) "
        "for longer than --older-than seconds. Exits with status 1 while some stay "
        "invalid or failed, so that a script can tell."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "ids",
            nargs="*",
            type=int,
            help="Only these deliveries (any status, but refused ones and those whose body "
            "was emptied after FLEET_WEBHOOK_BODIES_KEEP_DAYS days are left as they are).",
        )
        parser.add_argument(
            "--status",
            action="append",
            choices=[str(status) for status in REPLAYABLE_STATUSES],
            help="Only deliveries in this status (repeat for several). Default: all four.",
        )
        parser.add_argument(
            "--older-than",
            type=float,
            default=60.0,
            help="Seconds a `received` delivery must have waited, so that one still being "
            "processed by the receiver is left alone (default 60).",
        )
        parser.add_argument(
            "--dry-run", action="store_true", help="List what would be replayed; change nothing."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["older_than"] < 0:
            raise CommandError("--older-than must be 0 or more seconds")
        deliveries = WebhookDelivery.objects.order_by("received_at", "pk")
        if options["ids"]:
            deliveries = deliveries.filter(pk__in=options["ids"])
        else:
            statuses = options["status"] or [str(status) for status in REPLAYABLE_STATUSES]
            deliveries = deliveries.filter(status__in=statuses)
            cutoff = timezone.now() - timedelta(seconds=options["older_than"])
            deliveries = deliveries.exclude(status=DeliveryStatus.RECEIVED, received_at__gt=cutoff)
        ids = list(deliveries.values_list("pk", flat=True))
        if options["dry_run"]:
            waiting = Counter(deliveries.values_list("status", flat=True))
            self.stdout.write(
                f"Dry run: {len(ids)} deliveries would be replayed ({_listed(waiting)})."
            )
            return
        outcomes: Counter[str] = Counter()
        for start in range(0, len(ids), _BATCH):
            outcomes.update(delivery_replay(ids=ids[start : start + _BATCH]))
        emptied = outcomes.pop(BODY_EMPTIED, 0)
        self.stdout.write(f"Replayed {outcomes.total()} deliveries ({_listed(outcomes)}).")
        if emptied:
            self.stdout.write(
                f"Not replayed: {emptied} deliveries whose body was emptied after "
                "FLEET_WEBHOOK_BODIES_KEEP_DAYS days; what they made is kept."
            )
        kept = outcomes[DeliveryStatus.INVALID] + outcomes[DeliveryStatus.FAILED]
        if kept:
            raise CommandError(
                f"{kept} deliveries are still invalid or failed: see their error in the admin "
                "(Webhook deliveries); they stay stored for another replay."
            )


def _listed(counts: Counter[str]) -> str:
    return ", ".join(f"{status}: {count}" for status, count in sorted(counts.items())) or "-"
