"""The benchmarks' own app, installed by `bench.settings` only: the floor's table."""

from __future__ import annotations

from django.apps import AppConfig


class BenchConfig(AppConfig):
    name = "bench"
    label = "bench"
    verbose_name = "Benchmarks"
    default_auto_field = "django.db.models.BigAutoField"
