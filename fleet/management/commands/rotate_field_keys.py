"""`manage.py rotate_field_keys`: re-encrypt stored secrets (fleet passwords, drivers'
CPFs) under the newest key."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import models, transaction

from fleet.models import Driver, FleetAccount
from portal.lib import encryption


@dataclass(frozen=True)
class _Secrets:
    """A column of encrypted values, and how the command names them."""

    model: type[models.Model]
    field: str
    plural: str  # "fleet password(s)"
    row: str  # "fleet account"
    ids: str  # "account ids"
    again: str  # what to do with one no key decrypts


_SECRETS = (
    _Secrets(
        FleetAccount,
        "password_encrypted",
        "fleet password(s)",
        "fleet account",
        "account ids",
        "set these passwords again in the admin",
    ),
    _Secrets(
        Driver,
        "cpf_encrypted",
        "driver CPF(s)",
        "driver",
        "driver row ids",
        "type these drivers' CPFs again",
    ),
)


class Command(BaseCommand):
    help = (
        "Re-encrypt every stored fleet password and driver's CPF under the newest (first) "
        "key of FLEET_FIELD_KEYS. To rotate the keys: 1. make a new key and put it first in "
        "FLEET_FIELD_KEYS, keeping the old keys after it; 2. restart every portal "
        "process, so that new values are encrypted under the new key while the old ones "
        "still decrypt; 3. run this command; 4. once it has exited with status 0, remove "
        "the old keys from FLEET_FIELD_KEYS. A value that no key decrypts is reported by "
        "its row's id, left as it is, and makes the command fail after processing the rest."
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
            help="Values re-encrypted per transaction (default 200).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        dry_run: bool = options["dry_run"]
        batch_size: int = options["batch_size"]
        if batch_size < 1:
            raise CommandError("--batch-size must be at least 1")
        failures = []
        for secrets in _SECRETS:
            reencrypted, undecryptable = self._rotate(secrets, dry_run, batch_size)
            if dry_run:
                self.stdout.write(
                    f"Dry run: {reencrypted} {secrets.plural} would be re-encrypted; "
                    "nothing written."
                )
            else:
                self.stdout.write(
                    self.style.SUCCESS(
                        f"Re-encrypted {reencrypted} {secrets.plural} under the newest key."
                    )
                )
            if undecryptable:
                ids = ", ".join(str(pk) for pk in undecryptable)
                failures.append(
                    f"{len(undecryptable)} {secrets.plural} cannot be decrypted by any key of "
                    f"FLEET_FIELD_KEYS ({secrets.ids}: {ids}): put back the key they were "
                    f"encrypted with and run again, or {secrets.again}."
                )
        if failures:
            raise CommandError(" ".join([*failures, "Keep the old keys until then."]))

    def _rotate(self, secrets: _Secrets, dry_run: bool, batch_size: int) -> tuple[int, list[int]]:
        """Walk the rows holding a value by id, a transaction per batch; how many were
        re-encrypted, and the ids of those no key decrypts."""
        manager = secrets.model._default_manager
        holding = manager.exclude(**{f"{secrets.field}__isnull": True}).exclude(
            **{secrets.field: ""}
        )
        reencrypted = 0
        undecryptable: list[int] = []
        last_pk = 0
        while batch := list(
            holding.filter(pk__gt=last_pk)
            .order_by("pk")
            .values_list("pk", secrets.field)[:batch_size]
        ):
            last_pk = batch[-1][0]
            with transaction.atomic():
                for pk, token in batch:
                    try:
                        new_token = encryption.reencrypt(token)
                    except encryption.UndecryptableSecret:
                        undecryptable.append(pk)
                        self.stderr.write(
                            f"{secrets.row} {pk}: no key of FLEET_FIELD_KEYS decrypts its value"
                        )
                        continue
                    if dry_run:
                        reencrypted += 1
                        continue
                    # Only if unchanged since read: a value set meanwhile (admin, link page,
                    # driver page) is already under the newest key and must not be overwritten.
                    reencrypted += manager.filter(pk=pk, **{secrets.field: token}).update(
                        **{secrets.field: new_token}
                    )
        return reencrypted, undecryptable
