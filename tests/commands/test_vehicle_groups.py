"""`manage.py vehicle_groups`: what import, grant and revoke do, and what they say."""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import pytest
from django.contrib.auth.models import Permission, User
from django.core.management import CommandError, call_command

from fleet.models import WHOLE_FLEET_PERMISSION, VehicleGroup, VehicleGroupMember
from fleet.services.scopes import scope_of

pytestmark = [pytest.mark.django_db, pytest.mark.scoped]


def run(*args: str) -> str:
    out = StringIO()
    call_command("vehicle_groups", *args, stdout=out)
    return out.getvalue()


@pytest.fixture
def marcos(django_user_model) -> User:
    return django_user_model.objects.create_user("marcos", password="pw-123456")


def fresh(user: User) -> User:
    return User.objects.get(pk=user.pk)


def test_import_says_what_it_created_added_found_and_refused(tmp_path: Path):
    VehicleGroup.objects.create(name="Frota Sul").plates.create(registration="ABC1C34")
    csv = tmp_path / "plates.csv"
    csv.write_text("plate,group\nABC-1234,Frota Sul\nBRA2E19,Frota Norte\nXX1,Frota Norte\n")

    output = run("import", str(csv))

    assert "Groups created: 1 (Frota Norte)" in output
    assert "Plates added: 1\n" in output
    assert "Plates already in their group: 1\n" in output
    assert "Lines refused: 1\n" in output
    assert "  line 4: 'XX1,Frota Norte': “XX1” is not a plate" in output


def test_import_with_a_group_reads_one_plate_per_line(tmp_path: Path):
    VehicleGroup.objects.create(name="Diretoria")
    listed = tmp_path / "plates.txt"
    listed.write_text("abc-1234\nBRA 2E19\n")

    output = run("import", str(listed), "--group", "diretoria")

    assert "Plates added: 2" in output
    assert "Lines refused: 0" in output
    assert VehicleGroup.objects.get(name="Diretoria").plates.count() == 2


def test_import_of_a_file_that_cannot_be_read_fails(tmp_path: Path):
    with pytest.raises(CommandError, match=r"Cannot read .*missing\.csv: No such file"):
        run("import", str(tmp_path / "missing.csv"))


def test_import_into_an_unknown_group_fails_before_reading(tmp_path: Path):
    listed = tmp_path / "plates.txt"
    listed.write_text("ABC1234\n")

    with pytest.raises(CommandError, match="There is no vehicle group named “Nowhere”"):
        run("import", str(listed), "--group", "Nowhere")


def test_grant_puts_a_user_in_groups_by_hand_and_the_scope_follows(marcos):
    VehicleGroup.objects.create(name="Frota Sul")
    VehicleGroup.objects.create(name="Frota Norte")

    output = run("grant", "marcos", "Frota Sul", "frota norte")

    assert "marcos is now in Frota Sul." in output
    assert "marcos is now in Frota Norte." in output
    assert set(VehicleGroupMember.objects.values_list("group__name", "provider")) == {
        ("Frota Sul", ""),
        ("Frota Norte", ""),
    }
    assert scope_of(fresh(marcos)).group_names == ("Frota Norte", "Frota Sul")
    assert "marcos is already in Frota Sul." in run("grant", "marcos", "Frota Sul")


def test_grant_and_revoke_the_whole_fleet(marcos):
    output = run("grant", "marcos", "--whole-fleet")

    assert "marcos sees the whole fleet." in output
    assert fresh(marcos).has_perm(WHOLE_FLEET_PERMISSION)
    assert scope_of(fresh(marcos)).whole_fleet

    output = run("revoke", "marcos", "--whole-fleet")

    assert "marcos no longer has the permission to see the whole fleet." in output
    assert "still sees" not in output
    assert not fresh(marcos).has_perm(WHOLE_FLEET_PERMISSION)
    assert scope_of(fresh(marcos)).empty


def test_revoke_says_when_a_group_of_users_still_gives_the_whole_fleet(marcos):
    from django.contrib.auth.models import Group

    managers = Group.objects.create(name="managers")
    managers.permissions.add(Permission.objects.get(codename="view_whole_fleet"))
    marcos.groups.add(managers)

    output = run("revoke", "marcos", "--whole-fleet")

    assert "marcos did not have the permission to see the whole fleet." in output
    assert "marcos still sees the whole fleet" in output


def test_revoke_takes_away_what_was_given_by_hand_only(marcos):
    sul = VehicleGroup.objects.create(name="Frota Sul")
    norte = VehicleGroup.objects.create(name="Frota Norte")
    VehicleGroupMember.objects.create(user=marcos, group=sul, provider="")
    VehicleGroupMember.objects.create(user=marcos, group=sul, provider="sso")
    VehicleGroupMember.objects.create(user=marcos, group=norte, provider="")

    output = run("revoke", "marcos", "Frota Sul")

    assert "marcos is no longer in Frota Sul by hand." in output
    assert "marcos stays in Frota Sul through the groups of the identity provider sso" in output
    assert set(VehicleGroupMember.objects.values_list("group__name", "provider")) == {
        ("Frota Sul", "sso"),
        ("Frota Norte", ""),
    }
    assert "marcos was not in Frota Sul by hand." in run("revoke", "marcos", "Frota Sul")


def test_an_unknown_user_is_a_clear_error():
    VehicleGroup.objects.create(name="Frota Sul")

    with pytest.raises(CommandError, match="There is no user named 'nobody'"):
        run("grant", "nobody", "Frota Sul")


def test_unknown_groups_are_named_and_nothing_is_given(marcos):
    VehicleGroup.objects.create(name="Frota Sul")

    with pytest.raises(CommandError, match="no vehicle groups named “Norte”, “Leste”"):
        run("grant", "marcos", "Frota Sul", "Norte", "Leste")

    assert not VehicleGroupMember.objects.exists()


def test_grant_without_a_group_or_the_whole_fleet_is_an_error(marcos):
    with pytest.raises(CommandError, match="Name one or more vehicle groups, or give --whole"):
        run("grant", "marcos")
