from __future__ import annotations

import pytest
from cryptography.fernet import Fernet
from django.core.exceptions import ImproperlyConfigured

from fleet.models import FleetAccount
from portal.lib import encryption
from tests.conftest import stored_password

PASSWORD = "Fleet-pw-7d1c-in-clear"


def new_key() -> str:
    return Fernet.generate_key().decode()


@pytest.fixture
def account(django_user_model) -> FleetAccount:
    user = django_user_model.objects.create_user("marcos", password="pw-123456")
    account = FleetAccount(user=user, email="manager@example.com")
    account.set_password(PASSWORD)
    account.save()
    return account


@pytest.mark.django_db
def test_the_password_is_stored_encrypted_in_the_database(account):
    stored = stored_password(account)

    assert stored
    assert stored != PASSWORD
    assert PASSWORD not in stored
    assert encryption.decrypt(stored) == PASSWORD
    assert FleetAccount.objects.get(pk=account.pk).password() == PASSWORD


@pytest.mark.django_db
def test_two_saves_of_the_same_password_give_different_ciphertexts(account):
    first = stored_password(account)

    account.set_password(PASSWORD)
    account.save()
    second = stored_password(account)

    assert first != second
    assert encryption.decrypt(first) == encryption.decrypt(second) == PASSWORD


def test_a_value_under_an_old_key_still_decrypts_while_that_key_is_kept(settings):
    old, new = new_key(), new_key()
    settings.FLEET_FIELD_KEYS = [old]
    token = encryption.encrypt(PASSWORD)

    settings.FLEET_FIELD_KEYS = [new, old]

    assert encryption.decrypt(token) == PASSWORD


def test_the_first_key_encrypts(settings):
    first, second = new_key(), new_key()
    settings.FLEET_FIELD_KEYS = [first, second]

    token = encryption.encrypt(PASSWORD)

    assert Fernet(first.encode()).decrypt(token.encode()).decode() == PASSWORD


def test_reencrypt_moves_a_value_to_the_newest_key(settings):
    old, new = new_key(), new_key()
    settings.FLEET_FIELD_KEYS = [old]
    token = encryption.encrypt(PASSWORD)
    settings.FLEET_FIELD_KEYS = [new, old]

    rotated = encryption.reencrypt(token)

    settings.FLEET_FIELD_KEYS = [new]
    assert rotated != token
    assert encryption.decrypt(rotated) == PASSWORD


def test_a_value_no_key_opens_is_undecryptable_and_the_error_shows_no_key(settings):
    encrypted_with = new_key()
    settings.FLEET_FIELD_KEYS = [encrypted_with]
    token = encryption.encrypt(PASSWORD)
    unrelated = new_key()
    settings.FLEET_FIELD_KEYS = [unrelated]

    with pytest.raises(encryption.UndecryptableSecret) as decrypting:
        encryption.decrypt(token)
    with pytest.raises(encryption.UndecryptableSecret) as reencrypting:
        encryption.reencrypt(token)

    for raised in (decrypting.value, reencrypting.value):
        message = f"{raised} {raised!r}"
        assert encrypted_with not in message
        assert unrelated not in message
        assert token not in message
        # No chained InvalidToken in a traceback either.
        assert raised.__cause__ is None
        assert raised.__suppress_context__


def test_a_malformed_key_is_a_configuration_error_that_does_not_show_it(settings):
    settings.FLEET_FIELD_KEYS = ["not-a-fernet-key-but-secret-all-the-same"]

    with pytest.raises(ImproperlyConfigured, match="FLEET_FIELD_KEYS") as raised:
        encryption.encrypt(PASSWORD)

    assert "not-a-fernet-key" not in str(raised.value)
