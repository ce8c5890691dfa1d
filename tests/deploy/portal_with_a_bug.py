"""The portal's settings, with one page more that fails as a bug in a view would.

tests/deploy/test_request_ids.py starts gunicorn with these settings to get a real
500 page from a real process; the page is in the tests only, never in the portal.
"""

from __future__ import annotations

from portal.settings import *  # noqa: F403

ROOT_URLCONF = "tests.deploy.urls_with_a_bug"
