"""`manage.py scim_token PROVIDER_ID [--days N]`: a new bearer token for that provider's
SCIM client, working N days (365)."""

from __future__ import annotations

import getpass
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from signin.scim.tokens import (
    LIVE_TOKENS,
    TOKEN_DAYS,
    TooManyTokens,
    UnknownProvider,
    scim_provider_ids,
    scim_token_mint,
)


class Command(BaseCommand):
    help = (
        "Print a new SCIM bearer token for the identity provider PROVIDER_ID (a social "
        "application's provider id, or OIDC_PROVIDER_ID for the provider of the "
        "environment), working --days days. It is shown once: only its SHA-256 is kept. "
        f"A provider has {LIVE_TOKENS} live tokens at most: make the new one, set it in the "
        "provider, then revoke the old one in the admin."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("provider_id", metavar="PROVIDER_ID")
        parser.add_argument(
            "--days", type=int, default=TOKEN_DAYS, help=f"days it works ({TOKEN_DAYS})"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        provider = str(options["provider_id"])
        days = int(options["days"])
        if days < 1:
            raise CommandError("--days: a token works one day at least.")
        try:
            token = scim_token_mint(
                provider=provider, created_by=f"manage.py ({_who()})", days=days
            )
        except TooManyTokens:
            raise CommandError(
                f"{provider!r} has {LIVE_TOKENS} live SCIM tokens already: revoke the one no "
                "longer in use (admin, SCIM tokens), then make the new one."
            ) from None
        except UnknownProvider:
            known = ", ".join(sorted(scim_provider_ids())) or "none"
            raise CommandError(
                f"No identity provider has the id {provider!r} (configured: {known})."
            ) from None
        self.stdout.write(token)


def _who() -> str:
    try:
        return getpass.getuser()
    except OSError:
        return "unknown"
