"""A driver's CPF (personal data): kept encrypted, found again by a keyed digest, and the
CNH lookups of that CPF attached to the driver.

The CPF is encrypted like the other secrets at rest (`portal.lib.encryption`); a lookup
cannot decrypt every driver to find whose CPF it looked up, so each driver also keeps an
HMAC of the CPF under the project's `SECRET_KEY` (`cpf_digest`: eleven digits alone,
unkeyed, would be guessed from their billion values). Rotating `SECRET_KEY` leaves the
digests of the old key: the drivers' CPFs are then typed again.

Every lookup that gets an answer for a CPF (a licence, or none found) becomes the
licence of the drivers holding that CPF (`driver_licences_attach`), whoever asked for
it: the newest answer is the driver's licence.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Final

from django.contrib.auth.models import AnonymousUser, User
from django.utils import timezone
from django.utils.crypto import salted_hmac

from fleet import cpf
from fleet.models import CnhItemStatus, CnhLookupItem, Driver
from portal.lib import encryption

logger = logging.getLogger("fleet.cnh")

DRIVER_CPF_PERMISSION: Final = "fleet.change_driver_cpf"
_DIGEST_SALT: Final = "fleet.Driver.cpf"
# An item in error that is still an answer about the licence: nobody holds one.
NO_LICENCE: Final = "not-found"


class InvalidDriverCpf(ValueError):
    """Not a CPF (the form says why before this happens)."""


def driver_cpf_allowed(*, user: User | AnonymousUser) -> bool:
    """Whether `user` may enter or change a driver's CPF (superusers may)."""
    return bool(user.is_active and user.has_perm(DRIVER_CPF_PERMISSION))


def cpf_digest(value: str) -> str:
    """The keyed digest by which a lookup's CPF finds its drivers."""
    return salted_hmac(_DIGEST_SALT, cpf.normalize(value), algorithm="sha256").hexdigest()


def driver_cpf(driver: Driver) -> str:
    """The driver's CPF (eleven digits), "" when none is known. For the driver's licence
    lookups and for the eyes of a user allowed to see full CPFs only."""
    return encryption.decrypt(driver.cpf_encrypted) if driver.cpf_encrypted else ""


def driver_cpf_set(*, driver: Driver, value: str) -> bool:
    """Keep `value` as the driver's CPF ("" forgets it); whether it changed. A new CPF is
    a new licence to look up: the old CPF's licence is forgotten with it."""
    digits = cpf.normalize(value)
    if digits and not cpf.is_valid(digits):
        raise InvalidDriverCpf("not a valid CPF")
    digest = cpf_digest(digits) if digits else None
    if digest == driver.cpf_digest:
        return False
    driver.cpf_encrypted = encryption.encrypt(digits) if digits else None
    driver.cpf_digest = digest
    driver.licence = None
    driver.licence_checked_at = None
    # An update, not a save: the name did not change, nor do its words or the figures.
    Driver.objects.filter(pk=driver.pk).update(
        cpf_encrypted=driver.cpf_encrypted,
        cpf_digest=digest,
        licence=None,
        licence_checked_at=None,
    )
    logger.info("driver %s: CPF %s", driver.driver_id, "entered" if digits else "removed")
    return True


def driver_licences_attach(*, items: Iterable[CnhLookupItem]) -> int:
    """Make each answered item (a licence, or none found) the licence of the drivers
    holding its CPF; how many drivers. Items without an answer change nothing."""
    answered = {
        cpf_digest(item.cpf): item
        for item in items
        if item.status == CnhItemStatus.OK
        or (item.status == CnhItemStatus.ERROR and item.error_code == NO_LICENCE)
    }
    if not answered:
        return 0
    held = {
        digest
        for digest in Driver.objects.filter(cpf_digest__in=answered)
        .values_list("cpf_digest", flat=True)
        .distinct()
        if digest is not None
    }
    now = timezone.now()
    attached = 0
    for digest in held:
        attached += Driver.objects.filter(cpf_digest=digest).update(
            licence=answered[digest], licence_checked_at=now
        )
    return attached
