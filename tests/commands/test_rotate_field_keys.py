from __future__ import annotations

import io

import pytest
from cryptography.fernet import Fernet
from django.core.management import CommandError, call_command

from fleet.management.commands.rotate_field_keys import Command
from fleet.models import FleetAccount
from portal.lib import encryption
from tests.conftest import stored_password

pytestmark = pytest.mark.django_db

PASSWORD = "Fleet-pw-2b9e-in-clear"
KEY_A = Fernet.generate_key().decode()
KEY_B = Fernet.generate_key().decode()
KEY_C = Fernet.generate_key().decode()


@pytest.fixture
def make_account(django_user_model):
    def make(username: str, password: str = PASSWORD) -> FleetAccount:
        user = django_user_model.objects.create_user(username, password="pw-123456")
        account = FleetAccount(user=user, email=f"{username}@example.com")
        account.set_password(password)
        account.save()
        return account

    return make


def rotate(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("rotate_field_keys", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_rotation_reencrypts_under_the_new_key_so_the_old_one_can_be_removed(
    settings, make_account
):
    settings.FLEET_FIELD_KEYS = [KEY_A]
    account = make_account("marcos")
    before = stored_password(account)
    settings.FLEET_FIELD_KEYS = [KEY_B, KEY_A]
    assert FleetAccount.objects.get(pk=account.pk).password() == PASSWORD

    out, err = rotate()

    assert "Re-encrypted 1 fleet password" in out
    assert err == ""
    settings.FLEET_FIELD_KEYS = [KEY_B]
    after = stored_password(account)
    assert after != before
    assert FleetAccount.objects.get(pk=account.pk).password() == PASSWORD


def test_every_account_is_reencrypted_across_batches(settings, make_account):
    settings.FLEET_FIELD_KEYS = [KEY_A]
    accounts = [make_account(f"user{number}", f"{PASSWORD}-{number}") for number in range(5)]
    settings.FLEET_FIELD_KEYS = [KEY_B, KEY_A]

    out, _ = rotate("--batch-size", "2")

    assert "Re-encrypted 5 fleet password" in out
    settings.FLEET_FIELD_KEYS = [KEY_B]
    for number, account in enumerate(accounts):
        assert FleetAccount.objects.get(pk=account.pk).password() == f"{PASSWORD}-{number}"


def test_dry_run_reports_and_writes_nothing(settings, make_account):
    settings.FLEET_FIELD_KEYS = [KEY_A]
    account = make_account("marcos")
    before = stored_password(account)
    settings.FLEET_FIELD_KEYS = [KEY_B, KEY_A]

    out, _ = rotate("--dry-run")

    assert "1 fleet password(s) would be re-encrypted" in out
    assert stored_password(account) == before
    settings.FLEET_FIELD_KEYS = [KEY_B]
    with pytest.raises(encryption.UndecryptableSecret):
        FleetAccount.objects.get(pk=account.pk).password()


def test_undecryptable_accounts_are_reported_by_id_and_fail_the_command_after_the_rest(
    settings, make_account
):
    settings.FLEET_FIELD_KEYS = [KEY_C]
    lost = make_account("lost")
    lost_token = stored_password(lost)
    settings.FLEET_FIELD_KEYS = [KEY_A]
    kept = make_account("kept")
    settings.FLEET_FIELD_KEYS = [KEY_B, KEY_A]
    out, err = io.StringIO(), io.StringIO()

    with pytest.raises(CommandError) as failed:
        call_command("rotate_field_keys", stdout=out, stderr=err)

    assert failed.value.returncode != 0
    assert f"account ids: {lost.pk}" in str(failed.value)
    assert f"fleet account {lost.pk}:" in err.getvalue()
    assert f"fleet account {kept.pk}" not in err.getvalue()
    assert "Re-encrypted 1 fleet password" in out.getvalue()
    everything_printed = f"{out.getvalue()} {err.getvalue()} {failed.value}"
    assert lost_token not in everything_printed
    assert PASSWORD not in everything_printed
    # The lost value is left as it was; the other one moved to the newest key.
    assert stored_password(lost) == lost_token
    settings.FLEET_FIELD_KEYS = [KEY_B]
    assert FleetAccount.objects.get(pk=kept.pk).password() == PASSWORD


def test_dry_run_also_fails_on_undecryptable_accounts(settings, make_account):
    settings.FLEET_FIELD_KEYS = [KEY_C]
    lost = make_account("lost")
    settings.FLEET_FIELD_KEYS = [KEY_B, KEY_A]

    with pytest.raises(CommandError, match=f"account ids: {lost.pk}"):
        rotate("--dry-run")


def test_help_explains_the_rotation_procedure():
    help_text = Command().create_parser("manage.py", "rotate_field_keys").format_help()
    flat = " ".join(help_text.split())

    assert "put it first in FLEET_FIELD_KEYS, keeping the old keys" in flat
    assert "remove the old keys" in flat
    assert "--dry-run" in flat


def test_drivers_cpfs_are_reencrypted_too_and_one_lost_is_reported(settings) -> None:
    from fleet.models import Driver
    from fleet.services.driver_cpfs import driver_cpf, driver_cpf_set

    settings.FLEET_FIELD_KEYS = [KEY_A]
    kept = Driver.objects.create(driver_id=154, name="Felipe Rocha")
    driver_cpf_set(driver=kept, value="422.422.422-45")
    Driver.objects.create(driver_id=155, name="Sem CPF")
    settings.FLEET_FIELD_KEYS = [KEY_C]
    lost = Driver.objects.create(driver_id=156, name="Ana Souza")
    driver_cpf_set(driver=lost, value="529.982.247-25")
    before = Driver.objects.get(pk=kept.pk).cpf_encrypted
    settings.FLEET_FIELD_KEYS = [KEY_B, KEY_A]

    out, err = io.StringIO(), io.StringIO()
    with pytest.raises(CommandError, match=f"driver row ids: {lost.pk}") as failed:
        call_command("rotate_field_keys", stdout=out, stderr=err)

    assert "Re-encrypted 1 driver CPF(s) under the newest key." in out.getvalue()
    assert f"driver {lost.pk}: no key" in err.getvalue()
    assert "529" not in f"{out.getvalue()} {err.getvalue()} {failed.value}"
    settings.FLEET_FIELD_KEYS = [KEY_B]
    after = Driver.objects.get(pk=kept.pk)
    assert after.cpf_encrypted != before
    assert driver_cpf(after) == "42242242245"
