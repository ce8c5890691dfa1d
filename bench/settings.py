"""The portal's settings with the benchmarks' URLs: `DJANGO_SETTINGS_MODULE=bench.settings`.

Only for benchmark runs: the portal itself never serves `bench/` URLs, nor
installs the `bench` app, whose one model (`bench.models.StoredPost`) is the
table the floor of `bench.webhooks` writes to (`bench/migrations/`).
"""

from __future__ import annotations

from portal.settings import *  # noqa: F403
from portal.settings import INSTALLED_APPS

INSTALLED_APPS = [*INSTALLED_APPS, "bench.apps.BenchConfig"]

ROOT_URLCONF = "bench.urls"
