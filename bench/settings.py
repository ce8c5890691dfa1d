"""The portal's settings with the benchmarks' URLs: `DJANGO_SETTINGS_MODULE=bench.settings`.

Only for benchmark runs: the portal itself never serves `bench/` URLs.
"""

from __future__ import annotations

from portal.settings import *  # noqa: F403

ROOT_URLCONF = "bench.urls"
