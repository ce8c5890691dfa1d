"""The rows of the fines and notifications lists, each rendered once per version of its
record and kept in the process's `rows` cache: a page of fifty rows reads them in one
call, and renders only the records that changed since.

A row's key says all it shows: the record and its version (`shown_version`: when it
last changed, its history of `treated`, a fine's driver), what its caller adds (the
licence of the queue's driver), the day (a deadline passed
is a fine's state by the clock, `Fine.indication_missed`), and the row's template as
deployed (`portal.lib.caches` adds the language and time zone); it is the same for
whoever sees the record. A row is rendered without the request (no context
processors): the list's own address, which its deep-link button returns to, is in the
page once (`_record_parts.html#app_link`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

from django.template.base import Origin
from django.template.loader import get_template
from django.utils import timezone
from django.utils.safestring import SafeString, mark_safe

from fleet.models import WebhookRecord
from portal.lib.caches import KeptValues

# The same for whoever sees the record: a row shows the record alone. In each process's
# memory (the `rows` cache), apart from the shared cache's vehicle list.
_rows = KeptValues("rows", timeout=3600, for_everyone=True, alias="rows")


def rows_rendered(
    template_name: str,
    records: Sequence[WebhookRecord],
    *,
    contexts: Sequence[dict[str, Any]] | None = None,
    keys: Sequence[str] | None = None,
) -> list[SafeString]:
    """Each of `records` rendered by the partial `template_name` (as `record`, with
    `in_list`, and its own of `contexts`: what the record and the day decide alone, or
    what its own of `keys` says besides, such as the licence of the fine's driver), in
    order."""
    version = _template_version(template_name)
    template = get_template(template_name)
    today = timezone.localdate().isoformat()
    extra = keys or [""] * len(records)
    rows = _rows.each(
        [
            (version, today, record.pk, record.shown_version(), key)
            for record, key in zip(records, extra, strict=True)
        ],
        lambda index: template.render(
            {"record": records[index], "in_list": True, **(contexts[index] if contexts else {})}
        ),
    )
    return [mark_safe(row) for row in rows]  # noqa: S308 (the template escaped it)


def _template_version(template_name: str) -> str:
    """The template's name and a digest of the files beside it (its parts), read at each
    page (a few stat calls): a deployment, or an edit while developing, renders the rows
    again."""
    origin: Origin = cast(Any, get_template(template_name)).origin
    folder = Path(origin.name).parent
    files = sorted((path.name, path.stat()) for path in folder.glob("*.html"))
    stamps = ";".join(f"{name}:{stat.st_mtime_ns}:{stat.st_size}" for name, stat in files)
    return f"{template_name}:{hashlib.sha256(stamps.encode()).hexdigest()[:16]}"
