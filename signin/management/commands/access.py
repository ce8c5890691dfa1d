"""`manage.py access block|unblock EMAIL_OR_USERNAME`: an administrator's block of a
person's access, from the command line (`signin.blocks`): the same as the admin's *Users*
actions *Block access* and *Unblock access*."""

from __future__ import annotations

import getpass
from typing import Any

from django.contrib.auth.models import User
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db.models import Q

from signin.blocks import access_block, access_unblock


class Command(BaseCommand):
    help = (
        "Block a person's access (sessions end, alerts pause; no identity provider and no "
        "sign-in undoes it), or lift the block."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("action", choices=["block", "unblock"])
        parser.add_argument("person", help="their e-mail or username")
        parser.add_argument("--reason", default="", help="why, kept with the block")

    def handle(self, *args: Any, action: str, person: str, reason: str, **options: Any) -> None:
        found = list(User.objects.filter(Q(username__iexact=person) | Q(email__iexact=person))[:2])
        if not found:
            raise CommandError(f"No portal user has the username or e-mail {person!r}.")
        if len(found) > 1:
            raise CommandError(
                f"Several portal users have {person!r} as username or e-mail: use the username."
            )
        (user,) = found
        by = f"manage.py access, by {getpass.getuser()}"
        if action == "block":
            done = access_block(user=user, by=by, reason=reason)
            message = "blocked" if done else "was blocked already"
        else:
            done = access_unblock(user=user, by=by)
            message = "unblocked" if done else "was not blocked"
        self.stdout.write(f"{user.get_username()}: {message}.")
