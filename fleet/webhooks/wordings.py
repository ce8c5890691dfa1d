"""A record's wording: a fine's infraction or a notification's title, one `Wording` row
per text however many records share it (the lists' searches read those few rows).

Processing links each record of a batch to its wording before the records are written;
the texts `Wording` lacks are added then, never changed after.
"""

from __future__ import annotations

import hashlib

from fleet.models import Fine, WebhookRecord, Wording
from fleet.webhooks import payloads
from fleet.webhooks.records import RecordsHeld


def wordings_link(records: RecordsHeld) -> None:
    """Give each record of `records` its wording, as its payload says it now (a change is
    among the fields to write)."""
    texts = {
        key: payloads.payload_wording(
            record.payload,
            kind=payloads.FINE if isinstance(record, Fine) else payloads.NOTIFICATION,
        )
        for key, record in records.by_key.items()
    }
    ids = _wording_ids({text for text in texts.values() if text})
    for key, record in records.by_key.items():
        field = "infraction" if isinstance(record, Fine) else "heading"
        wording_id = ids.get(texts[key])
        if getattr(record, f"{field}_id") != wording_id:
            setattr(record, f"{field}_id", wording_id)
            records.touch(key, [field])


def _kind(record: WebhookRecord) -> str:
    return payloads.FINE if isinstance(record, Fine) else payloads.NOTIFICATION


def _wording_ids(texts: set[str]) -> dict[str, int]:
    """`Wording`'s id of each text, those it lacked added (in digest order: two batches
    adding the same ones wait for each other, never in a circle)."""
    if not texts:
        return {}
    by_digest = {hashlib.sha256(text.encode()).hexdigest(): text for text in texts}
    found = dict(Wording.objects.filter(digest__in=by_digest).values_list("digest", "pk"))
    if missing := sorted(by_digest.keys() - found.keys()):
        Wording.objects.bulk_create(
            [Wording(text=by_digest[digest], digest=digest) for digest in missing],
            ignore_conflicts=True,  # added meanwhile by another batch: that one is read
        )
        found |= dict(Wording.objects.filter(digest__in=missing).values_list("digest", "pk"))
    return {by_digest[digest]: pk for digest, pk in found.items()}
