"""How many requests SCIM takes in a minute (SCIM_REQUESTS_PER_MINUTE) from one token, or
from one address without a valid token: counted in the database (`ScimMinute`, a row per
token or address and minute), so that the limit holds for the whole deployment whatever
its cache (each process has its own under `make run`).

A request past the limit is answered 429 and writes nothing: a minute's count stops one
past the limit (`limited`). The requests refused to an address are the record of that
address's minute, not a row each; the view logs the first of each minute only. Ten
thousand requests without a token from one address in a minute write one row, and
SCIM_REQUESTS_PER_MINUTE + 1 updates of it.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from signin.models import ScimMinute


@dataclass(frozen=True, slots=True)
class Counted:
    count: int  # this minute's requests, this one included (one past the limit at most)
    within: bool  # whether this request is within the limit
    limited_now: bool = False  # this request is the one that passed the limit


def scim_minute_count(who: str) -> Counted:
    """Count one more request of `who` (`token:<id>`, `address:<ip>`) this minute, unless
    its minute is already past the limit (then nothing is written)."""
    limit = settings.SCIM_REQUESTS_PER_MINUTE
    minute = timezone.now().replace(second=0, microsecond=0)
    rows = ScimMinute.objects.filter(who=who[:60], minute=minute)
    if rows.filter(count__gt=limit).exists():
        return Counted(limit + 1, within=False)  # past it already: read, nothing written
    with transaction.atomic():
        if not rows.filter(count__lte=limit).update(count=F("count") + 1):
            if rows.exists():
                return Counted(limit + 1, within=False)  # past it already: no write
            try:
                with transaction.atomic():
                    ScimMinute.objects.create(who=who[:60], minute=minute, count=1)
            except IntegrityError:  # another process made the row meanwhile
                if not rows.filter(count__lte=limit).update(count=F("count") + 1):
                    return Counted(limit + 1, within=False)
        count: int = rows.values_list("count", flat=True).get()
        if count > limit:
            passed = rows.filter(limited=False).update(limited=True) == 1
            return Counted(count, within=False, limited_now=passed)
    return Counted(count, within=True)
