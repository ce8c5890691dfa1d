from __future__ import annotations

import logging

from fleet.services.connection import fleet_client
from portal.lib.redaction import RedactingFilter


def portal_handlers() -> list[logging.Handler]:
    """The handlers LOGGING installed (not pytest's capture handlers)."""
    return [h for h in logging.getLogger().handlers if type(h) is logging.StreamHandler]


def test_portal_log_handlers_scrub_the_fleet_secret_whoever_logs_it(settings):
    fleet_client()  # the configured client registers its credentials
    record = logging.LogRecord(
        "some.library",
        logging.ERROR,
        __file__,
        1,
        "sent headers %s",
        ({"Key": "x", "note": settings.FLEET_SECRET_KEY},),
        None,
    )
    handlers = portal_handlers()

    assert handlers
    for handler in handlers:
        assert any(isinstance(f, RedactingFilter) for f in handler.filters)
        handler.filter(record)
        assert settings.FLEET_SECRET_KEY not in handler.format(record)
