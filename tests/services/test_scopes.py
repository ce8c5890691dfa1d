"""A user's vehicle scope: the union of their groups, the whole fleet by permission, plates
under either format, and a change of a group seen at the next read."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group

from fleet.api.resources import VehicleColumns
from fleet.models import Fine, VehicleGroup, VehicleGroupMember
from fleet.services.scopes import scope_forget, scope_of, vehicle_groups_changed
from fleet.services.vehicle_index import Snapshot, Within

pytestmark = [pytest.mark.django_db, pytest.mark.scoped]


def group(name: str, *registrations: str) -> VehicleGroup:
    made = VehicleGroup.objects.create(name=name)
    for registration in registrations:
        made.plates.create(registration=registration)
    return made


@pytest.fixture
def user(django_user_model):
    return django_user_model.objects.create_user("regina", password="pw-123456")


def test_a_user_sees_the_union_of_their_groups(user):
    for made in (group("Rio", "RIO1A11"), group("São Paulo", "ABC1C34"), group("Minas", "MGS2B22")):
        if made.name != "Minas":
            VehicleGroupMember.objects.create(group=made, user=user)

    scope = scope_of(user)

    assert scope.group_names == ("Rio", "São Paulo")
    assert scope.registrations() == {"RIO1A11", "ABC1C34"}
    assert scope.covers("ABC-1234")  # the old plate of ABC1C34
    assert scope.covers("abc1c34")
    assert not scope.covers("MGS2B22")
    assert not scope.covers("")  # a record without a plate is the whole fleet's


def test_without_groups_nothing_and_with_the_permission_everything(user, django_user_model):
    assert scope_of(user).empty
    staff = django_user_model.objects.create_user("suporte", is_staff=True)
    assert scope_of(staff).empty  # staff are scoped like managers

    whole = Group.objects.get(name="Whole fleet")  # made by the migration, with the permission
    user.groups.add(whole)
    user = django_user_model.objects.get(pk=user.pk)  # permissions are read once per object

    assert scope_of(user).whole_fleet
    assert scope_of(user).covers("")
    superuser = django_user_model.objects.create_superuser("root", password="pw-123456")
    assert scope_of(superuser).whole_fleet


def test_records_are_those_of_the_scope(user):
    VehicleGroupMember.objects.create(group=group("SP", "ABC1C34"), user=user)
    for key, registration in (("1", "ABC1C34"), ("2", "XYZ9K87"), ("3", "")):
        Fine.objects.create(
            key=key, external_id=key, payload={}, registration=registration, treated=False
        )

    seen = scope_of(user).records(Fine.objects.all())

    assert [fine.external_id for fine in seen] == ["1"]


def test_a_change_of_plates_is_seen_at_the_next_read(user):
    made = group("SP", "ABC1C34")
    VehicleGroupMember.objects.create(group=made, user=user)
    assert scope_of(user).registrations() == {"ABC1C34"}

    made.plates.create(registration="DEF5G67")
    vehicle_groups_changed([made.pk])
    scope_forget(user)

    assert scope_of(user).registrations() == {"ABC1C34", "DEF5G67"}


def test_a_new_group_with_a_deleted_groups_id_is_not_mistaken_for_it(user):
    """SQLite gives a new row the id of the last one deleted: the scope's key tells them
    apart, so the registrations kept for the old group are not read for the new one."""
    old = group("Velho", "OLD1A11")
    VehicleGroupMember.objects.create(group=old, user=user)
    assert scope_of(user).registrations() == {"OLD1A11"}
    old_id = old.pk
    old.delete()

    new = VehicleGroup.objects.create(pk=old_id, name="Novo")
    new.plates.create(registration="NEW2B22")
    VehicleGroupMember.objects.create(group=new, user=user)
    scope_forget(user)

    assert scope_of(user).registrations() == {"NEW2B22"}


def test_the_vehicle_list_is_masked_by_the_scope_in_every_order():
    columns = VehicleColumns.of(
        ids=[1, 2, 3, 4],
        plates=["ZZZ9999", "ABC1234", "BCD1E23", "AAA0A00"],
        models=["Onix", "Gol", "Onix", "Gol"],
        actives=b"\x01\x01\x00\x01",
        driver_ids=[None, 7, 8, None],
        total=4,
    )
    snapshot = Snapshot.from_columns(columns, scope="test", version="v1", fetched_at=0.0)
    # ABC-1234 is in it by its registration, ABC1C34.
    within = Within("g", frozenset({"ABC1C34", "BCD1E23"}))

    for sort in ("plate", "-plate", "model", "-active"):
        rows = snapshot.page(query="", active=None, sort=sort, page=1, per_page=50, within=within)
        assert sorted(row.plate for row in rows.rows) == ["ABC1234", "BCD1E23"]
    found = snapshot.page(
        query="bcd", active=None, sort="plate", page=1, per_page=50, within=within
    )
    assert [row.plate for row in found.rows] == ["BCD1E23"]
    active = snapshot.page(query="", active=True, sort="plate", page=1, per_page=50, within=within)
    assert [row.plate for row in active.rows] == ["ABC1234"]
    outside = Within("n", within.registrations, inside=False)
    rest = snapshot.page(query="", active=None, sort="plate", page=1, per_page=50, within=outside)
    assert [row.plate for row in rest.rows] == ["AAA0A00", "ZZZ9999"]
    nothing = Within("none", frozenset())
    assert (
        snapshot.page(query="", active=None, sort="plate", page=1, per_page=5, within=nothing).total
        == 0
    )


def test_each_change_of_who_sees_what_shows_at_the_next_request(
    client, user, emulator, fleet_settings
):
    """The scopes each process keeps are read again after any such change: a membership
    removed, the whole-fleet permission given through a group of users, then taken."""
    made = group("Sorocaba", "ABC1C34")
    member = VehicleGroupMember.objects.create(group=made, user=user)
    client.force_login(user)
    assert "Sorocaba" in client.get("/vehicles/").text

    member.delete()
    assert "Sorocaba" not in client.get("/vehicles/").text

    whole = Group.objects.get(name="Whole fleet")
    user.groups.add(whole)
    assert 'data-testid="scope-groups"' not in client.get("/vehicles/").text

    whole.user_set.remove(user)
    assert 'data-testid="scope-groups"' in client.get("/vehicles/").text

    made.members.create(user=user)
    made.name = "Sorocaba e Região"
    made.save()
    assert "Sorocaba e Região" in client.get("/vehicles/").text
