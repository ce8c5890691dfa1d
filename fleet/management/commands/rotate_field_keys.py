"""`manage.py rotate_field_keys`: re-encrypt stored secrets under the newest key."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from fleet.models import FleetAccount
from portal.lib import encryption


class Command(BaseCommand):
    help = (
        "Re-encrypt every stored fleet password under the newest (first) key of "
        "FLEET_FIELD_KEYS. To rotate the keys: 1. make a new key and put it first in "
        "FLEET_FIELD_KEYS, keeping the old keys after it; 2. restart every portal "
        "process, so that new values are encrypted under the new key while the old ones "
        "still decrypt; 3. run this command; 4. once it has exited with status 0, remove "
        "the old keys from FLEET_FIELD_KEYS. A value that no key decrypts is reported by "
        "account id, left as it is, and makes the command fail after processing the rest."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--dry-run",
            action="store_true",
            help="Report what would be re-encrypted and what cannot be decrypted; write nothing.",
        )
        parser.add_argument(
            "--batch-size",
            type=int,
            default=200,
            help="Accounts re-encrypted per transaction (default 200).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        dry_run: bool = options["dry_run"]
        batch_size: int = options["batch_size"]
        if batch_size < 1:
            raise CommandError("--batch-size must be at least 1")
        reencrypted = 0
        undecryptable: list[int] = []
        last_pk = 0
        while batch := list(
            FleetAccount.objects.filter(pk__gt=last_pk)
            .order_by("pk")
            .values_list("pk", "password_encrypted")[:batch_size]
        ):
            last_pk = batch[-1][0]
            with transaction.atomic():
                for pk, token in batch:
                    try:
                        new_token = encryption.reencrypt(token)
                    except encryption.UndecryptableSecret:
                        undecryptable.append(pk)
                        self.stderr.write(
                            f"fleet account {pk}: no key of FLEET_FIELD_KEYS decrypts its password"
                        )
                        continue
                    if dry_run:
                        reencrypted += 1
                        continue
                    # Only if unchanged since read: a password set meanwhile (admin, link
                    # page) is already under the newest key and must not be overwritten.
                    reencrypted += FleetAccount.objects.filter(
                        pk=pk, password_encrypted=token
                    ).update(password_encrypted=new_token)

        if dry_run:
            self.stdout.write(
                f"Dry run: {reencrypted} fleet password(s) would be re-encrypted; nothing written."
            )
        else:
            self.stdout.write(
                self.style.SUCCESS(
                    f"Re-encrypted {reencrypted} fleet password(s) under the newest key."
                )
            )
        if undecryptable:
            ids = ", ".join(str(pk) for pk in undecryptable)
            raise CommandError(
                f"{len(undecryptable)} fleet password(s) cannot be decrypted by any key of "
                f"FLEET_FIELD_KEYS (account ids: {ids}): put back the key they were encrypted "
                "with and run again, or set these passwords again in the admin. "
                "Keep the old keys until then."
            )
