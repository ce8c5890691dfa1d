"""The rows of the fines and notifications lists, each rendered once per version of its
record and kept in the process's `rows` cache: a page of fifty rows reads them in one
call, and renders only the records that changed since.

A row's key says all it shows: the record and its version (`shown_version`: when it
last changed, its history of `treated`, a fine's driver), the language and time zone,
and the row's template as deployed. A row is rendered without the request (no context
processors): the list's own address, which its deep-link button returns to, is in the
page once (`_record_parts.html#app_link`).
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

from django.conf import settings
from django.core.cache import caches
from django.template.base import Origin
from django.template.loader import get_template
from django.utils import timezone, translation
from django.utils.safestring import SafeString, mark_safe

from fleet.models import WebhookRecord


def rows_rendered(template_name: str, records: Sequence[WebhookRecord]) -> list[SafeString]:
    """Each of `records` rendered by the partial `template_name` (as `record`, with
    `in_list`), in order."""
    version = _template_version(template_name)
    language = translation.get_language()
    zone = timezone.get_current_timezone_name()
    keys = [
        f"{version}:{language}:{zone}:{record.pk}:{record.shown_version()}" for record in records
    ]
    rows = caches["rows"]
    found: dict[str, str] = rows.get_many(keys)
    missing: dict[str, str] = {}
    template = get_template(template_name)
    for key, record in zip(keys, records, strict=True):
        if key not in found:
            missing[key] = found[key] = template.render({"record": record, "in_list": True})
    if missing:
        rows.set_many(missing)
    return [mark_safe(found[key]) for key in keys]  # noqa: S308 (the template escaped it)


def _template_version(template_name: str) -> str:
    """The template's name and a digest of the files beside it (its parts): a deployment
    (new processes), or an edit while developing (`DEBUG`: read at each page), renders
    the rows again."""
    if settings.DEBUG:
        return _template_files_version(template_name)
    return _template_files_kept(template_name)


def _template_files_version(template_name: str) -> str:
    origin: Origin = cast(Any, get_template(template_name)).origin
    folder = Path(origin.name).parent
    files = sorted((path.name, path.stat()) for path in folder.glob("*.html"))
    stamps = ";".join(f"{name}:{stat.st_mtime_ns}:{stat.st_size}" for name, stat in files)
    return f"{template_name}:{hashlib.sha256(stamps.encode()).hexdigest()[:16]}"


# A process's templates do not change without DEBUG: their versions, read once.
_template_files_kept = functools.cache(_template_files_version)
