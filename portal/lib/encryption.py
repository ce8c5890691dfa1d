"""Secrets at rest: Fernet tokens under the keys of `FLEET_FIELD_KEYS`.

The first key encrypts; every key decrypts, so a new key can be put first and
the old ones kept until `manage.py rotate_field_keys` has re-encrypted every
stored value under the new one.
"""

from __future__ import annotations

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured


class UndecryptableSecret(Exception):
    """No key of FLEET_FIELD_KEYS opens this value (a key was removed too early)."""


def _fernet() -> MultiFernet:
    try:
        return MultiFernet([Fernet(key) for key in settings.FLEET_FIELD_KEYS])
    except (ValueError, TypeError) as error:
        # Never show the keys: say which position is wrong.
        raise ImproperlyConfigured(
            "FLEET_FIELD_KEYS must hold Fernet keys (32 url-safe base64-encoded bytes each)"
        ) from error


def encrypt(plaintext: str) -> str:
    return _fernet().encrypt(plaintext.encode()).decode()


def decrypt(token: str) -> str:
    try:
        return _fernet().decrypt(token.encode()).decode()
    except InvalidToken:
        raise UndecryptableSecret(
            "no key of FLEET_FIELD_KEYS decrypts this value; restore the key it was encrypted with"
        ) from None


def reencrypt(token: str) -> str:
    """The same secret encrypted under the newest key."""
    try:
        return _fernet().rotate(token.encode()).decode()
    except InvalidToken:
        raise UndecryptableSecret("no key of FLEET_FIELD_KEYS decrypts this value") from None
