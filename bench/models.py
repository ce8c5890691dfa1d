"""The benchmarks' one model: what `bench/stored-post` writes (`bench.settings` only).

The portal never installs this app; `bench.settings` adds it to `INSTALLED_APPS`
and `manage.py migrate` under those settings makes its table (`bench_storedpost`)
from `bench/migrations/`.
"""

from __future__ import annotations

from typing import ClassVar

from django.db import models
from django.utils import timezone


class StoredPost(models.Model):
    """One POST body, as any receiver that stores before it answers must keep it."""

    body = models.BinaryField()
    received_at = models.DateTimeField(default=timezone.now)

    # Spelled out for mypy, whose Django settings (tests.settings) do not install this app.
    objects: ClassVar[models.Manager[StoredPost]] = models.Manager()

    def __str__(self) -> str:
        return f"stored post {self.pk} ({len(self.body)} bytes)"
