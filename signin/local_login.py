"""The modes of LOCAL_LOGIN, which `providers` explains.

Apart from `providers`, which needs Django's apps, so that the settings can
check the variable against these same modes.
"""

from __future__ import annotations

import enum


class LocalLogin(enum.StrEnum):
    ON = "on"
    STAFF = "staff"
    OFF = "off"
