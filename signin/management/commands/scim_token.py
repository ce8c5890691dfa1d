"""`manage.py scim_token PROVIDER_ID`: a new bearer token for that provider's SCIM client."""

from __future__ import annotations

import getpass
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from signin.scim.tokens import UnknownProvider, scim_provider_ids, scim_token_mint


class Command(BaseCommand):
    help = (
        "Print a new SCIM bearer token for the identity provider PROVIDER_ID (a social "
        "application's provider id, or OIDC_PROVIDER_ID for the provider of the "
        "environment). It is shown once: only its SHA-256 is kept. Revoke it in the admin."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("provider_id", metavar="PROVIDER_ID")

    def handle(self, *args: Any, **options: Any) -> None:
        provider = str(options["provider_id"])
        try:
            token = scim_token_mint(provider=provider, created_by=f"manage.py ({_who()})")
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
