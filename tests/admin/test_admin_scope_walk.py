"""The scope walk of the admin, as staff of disjoint vehicle groups.

Viewing: two staff members, each given every permission to view, walk every change list
of the admin, its search by the other side's plate, and every record's page and history:
nothing of the other group shows (its plates in both formats, its amounts, its driver's
name, its records' texts).

Changing: staff of group A given every right (to add, change, delete and view anything,
not the whole fleet) walk group B's records and what is the whole organisation's: every
change list and search, every record's change, history and delete pages (read and
posted), every action of every admin run on those records through its change list, every
view an admin adds (`get_urls`), and the choices and searches of every form. Nothing of
B shows, nothing of B can be chosen, and the database is as it was. Every admin, action
and added view is found in `admin.site` and walked: an added view the walk cannot call
on its own (no record in its path) fails the walk until `ADDED_VIEWS` says how.
"""

from __future__ import annotations

import copy
import json
from collections import Counter
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import pytest
from allauth.account.models import EmailAddress
from allauth.socialaccount.models import SocialAccount, SocialApp
from allauth.usersessions.models import UserSession
from axes.models import AccessAttempt, AccessFailureLog
from django.apps import apps
from django.contrib import admin
from django.contrib.admin import helpers
from django.contrib.auth.models import Group, Permission, User
from django.contrib.contenttypes.models import ContentType
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import transaction
from django.db.models import Model
from django.forms import ModelChoiceField
from django.http import HttpRequest
from django.test import Client, RequestFactory
from django.urls import URLPattern, reverse
from django.utils import timezone

from alerts.models import (
    Alert,
    AlertDefaults,
    AlertPause,
    AlertPreferences,
    WebhookAttempt,
    WebhookSubscription,
)
from fleet import plates
from fleet.models import (
    AccessKeyMint,
    CnhLookup,
    CpfDisclosure,
    DirectoryGroup,
    Driver,
    DriverBasis,
    DriverIndication,
    DriverObservation,
    DriverSpan,
    Fine,
    FineDriverCorrection,
    FineIndicationChange,
    FleetAccount,
    IndicationReceipt,
    Notification,
    UnknownWebhookKey,
    VehicleGroup,
    VehicleGroupMember,
)
from fleet.services.attribution import fine_driver_correct
from fleet.services.indications import fine_indication_need_set, seen_value
from fleet.services.scopes import scope_of
from fleet.webhooks.processing import deliveries_process_received
from signin.models import ScimCall, ScimGroup, ScimMinute, ScimToken, ScimUser, SsoAttempt
from tests.conftest import RUN_SUMMARY
from tests.scopes import grant_whole_fleet

pytestmark = [pytest.mark.django_db, pytest.mark.scoped]

WEBHOOK = "/webhooks/fleet/dev-webhook-token/"
ENGLISH = {"Accept-Language": "en"}
HOUR = timedelta(hours=1)


@dataclass
class Side:
    """A region: its plate, the staff member who sees it, what must not show to the other."""

    name: str
    plate: str
    amount: str
    driver: int
    driver_name: str
    secret: str
    staff: User | None = None
    words: list[str] = field(default_factory=list)
    group: VehicleGroup | None = None
    manager: User | None = None
    fine: Fine | None = None
    # Every row made for the side, by model label: (label, pk).
    rows: set[tuple[str, str]] = field(default_factory=set)

    def own(self, *rows: Model) -> None:
        self.rows |= {(row._meta.label, str(row.pk)) for row in rows}

    def forbidden(self) -> list[str]:
        found = [self.secret, self.driver_name, self.amount, self.amount.replace(".", ",")]
        found += {self.plate, plates.display(self.plate), plates.registration(self.plate)}
        if (old := plates.old_plate(self.plate)) is not None:
            found += {old, plates.display(old)}
        return found


def side(client: Client, django_user_model, number: int, data: Side, rights: str = "view") -> Side:
    """The side's group, records, people and staff member, who has every permission to
    view (`rights="view"`), or every right there is (`"every"`), but the whole fleet."""
    group = VehicleGroup.objects.create(name=f"Region {number}")
    group.plates.create(registration=plates.registration(data.plate))
    payload = {
        "frame": {
            "id": number,
            "treated": False,
            "carPlate": data.plate,
            "amount": data.amount,
            "description": f"Infraction {data.secret}",
        },
        "linkFrame": None,
    }
    note = {
        "notification": {
            "id": 100 + number,
            "treated": False,
            "carPlate": data.plate,
            "title": data.secret,
        }
    }
    for body in (payload, note):
        answer = client.post(WEBHOOK, data=json.dumps(body), content_type="application/json")
        assert answer.status_code == 202
    deliveries_process_received()
    fine = Fine.objects.get(external_id=str(number))
    Fine.objects.filter(pk=fine.pk).update(driver_id=data.driver, driver_basis=DriverBasis.LIST)
    Driver.objects.create(driver_id=data.driver, name=data.driver_name)

    manager = django_user_model.objects.create_user(f"manager-{number}")
    VehicleGroupMember.objects.create(group=group, user=manager)
    event = {"plate": data.plate, "amount": data.amount, "text": data.secret}
    alert = Alert.objects.create(
        user=manager,
        channel="email",
        event="new_fine",
        event_key=f"new_fine:{fine.pk}",
        fine=fine,
        data=event,
    )
    subscription = WebhookSubscription(user=manager, url=f"https://hooks.example/{number}")
    subscription.set_secret("s" * 32)
    subscription.save()
    hooked = Alert.objects.create(
        user=manager,
        channel="webhook",
        subscription=subscription,
        event="new_notification",
        event_key=f"new_notification:{number}",
        notification=Notification.objects.get(external_id=str(100 + number)),
        data=event,
    )
    WebhookAttempt.objects.create(
        alert=hooked, subscription=subscription, ok=False, error=f"refused {data.plate}"
    )
    assert alert.pk
    AlertPreferences.objects.create(user=manager, all_vehicles=False, plates=[data.plate])

    staff = django_user_model.objects.create_user(f"staff-{number}", is_staff=True)
    if rights == "view":
        given = Permission.objects.filter(codename__startswith="view_").exclude(
            codename__in=["view_whole_fleet", "view_full_cpf"]
        )
    else:
        given = Permission.objects.exclude(codename="view_whole_fleet")
    staff.user_permissions.add(*given)
    member = VehicleGroupMember.objects.create(group=group, user=staff)
    data.staff, data.group, data.manager, data.fine = staff, group, manager, fine
    data.own(group, fine, manager, staff, member)
    data.own(*Notification.objects.filter(external_id=str(100 + number)))
    data.own(*Driver.objects.filter(driver_id=data.driver), alert, hooked, subscription)
    data.own(*WebhookAttempt.objects.filter(alert=hooked))
    data.own(*AlertPreferences.objects.filter(user=manager))
    return data


@pytest.fixture
def sides(client, django_user_model) -> tuple[Side, Side]:
    north = side(
        client,
        django_user_model,
        1,
        Side("north", "ABC1234", "987.65", 7001, "Norberto Nortista", "quasar"),
    )
    south = side(
        client,
        django_user_model,
        2,
        Side("south", "XYZ9K87", "123.45", 7002, "Suzana Sulista", "pulsar"),
    )
    return north, south


def admin_url(model: type[Model], page: str, *args: object) -> str:
    return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_{page}", args=args)


def pages(model: type[Model], pk: object) -> list[str]:
    return [admin_url(model, "change", pk), admin_url(model, "history", pk)]


def test_scoped_staff_see_nothing_of_another_group_anywhere_in_the_admin(sides):
    for viewer, other in (sides, sides[::-1]):
        client = Client()
        client.force_login(viewer.staff)
        forbidden = other.forbidden()
        walked = []
        for model in admin.site._registry:
            changelist = admin_url(model, "changelist")
            # Searched in lower case: the box echoes the term, a row would show it upper.
            urls = [changelist, f"{changelist}?q={other.plate.lower()}"]
            for pk in model._default_manager.values_list("pk", flat=True):
                urls += pages(model, pk)
            for url in urls:
                answer = client.get(url, headers=ENGLISH)
                assert answer.status_code in (200, 302, 403, 404), (url, answer.status_code)
                text = answer.content.decode()
                leaked = [word for word in forbidden if word in text]
                assert not leaked, f"{viewer.name} sees {leaked} of {other.name} at {url}"
                walked.append(url)
        assert walked

    # What each may see of their own: the walk is not vacuous.
    north, _south = sides
    client = Client()
    client.force_login(north.staff)
    fines = client.get(reverse("admin:fleet_fine_changelist")).content.decode()
    assert plates.registration(north.plate) in fines
    alerts = client.get(reverse("admin:alerts_alert_changelist"), headers=ENGLISH).content.decode()
    assert "manager-1" in alerts
    drivers = client.get(reverse("admin:fleet_driver_changelist")).content.decode()
    assert north.driver_name in drivers
    groups = client.get(reverse("admin:fleet_vehiclegroup_changelist")).content.decode()
    assert "Region 1" in groups
    attempt = WebhookAttempt.objects.get(error=f"refused {north.plate}")
    page = client.get(reverse("admin:alerts_webhookattempt_change", args=[attempt.pk]))
    assert f"refused {north.plate}" in page.content.decode()


# --- Changing: every right, on group B's records and on the organisation's ---------------

# Rows that change while the walk reads, and why they say nothing of what it changed.
VOLATILE = {
    "sessions.Session": "the walker's session, which carries the admin's messages",
    "usersessions.UserSession": "the walker's session, seen again at each request",
    "django_tasks_database.DBTaskResult": (
        "work asked for: an action asks for its run even with nothing selected; what the run "
        "would change is what the walk compares"
    ),
}
STANDARD_VIEWS = {"changelist", "add", "history", "delete", "change"}
NEW_PASSWORD = "Walk-new-passw0rd!"


def csv_file(text: str) -> SimpleUploadedFile:
    return SimpleUploadedFile("plates.csv", text.encode(), content_type="text/csv")


def import_into_other_groups(walk: Walk, name: str, url: str, other: Side) -> None:
    """The import of plates, as it would reach another group: rows naming it (in another
    case, as the report shows the line typed again), a group to make, and a list into it."""
    walk.choices(walk.request(name, "GET", url), name)
    rows = f"plate,group\nKLM3F45,{str(other.group).upper()}\nKLM3F46,Region 9\n"
    walk.request(name, "POST", url, {"file": csv_file(rows)})
    listed = {"file": csv_file("KLM3F47\n"), "group": str(other.group.pk)}
    walk.request(name, "POST", url, listed)


# The views admins add (`get_urls`) that take no record in their path, and how the walk
# calls each one on the other group; a view with a record in its path is walked on every
# record of the other group and of the organisation without being named here.
ADDED_VIEWS = {
    "fleet_vehiclegroup_import": import_into_other_groups,
}


def database() -> dict[str, list[dict[str, Any]]]:
    """Every row of every table the walk compares."""
    return {
        model._meta.label: list(model._default_manager.order_by("pk").values())
        for model in apps.get_models()
        if model._meta.label not in VOLATILE
    }


def differences(before: dict[str, list[Any]], after: dict[str, list[Any]]) -> list[str]:
    changed = []
    for label, rows in after.items():
        if rows != before.get(label):
            gone = [row for row in before.get(label, []) if row not in rows]
            new = [row for row in rows if row not in before.get(label, [])]
            changed.append(f"{label} (gone {gone[:2]}, new or changed {new[:2]})")
    return changed


def refused(answer: Any) -> bool:
    """Forbidden, not found (or not so asked), or sent to the index as a record that does
    not exist."""
    if answer.status_code in (403, 404, 405):
        return True
    return answer.status_code == 302 and answer["Location"] == reverse("admin:index")


def posted(row: Model) -> dict[str, Any]:
    """What the change form of `row` sends as it is shown: a page that took it would save."""
    data: dict[str, Any] = {}
    for model_field in row._meta.concrete_fields:
        value = model_field.value_from_object(row)
        if not model_field.editable or model_field.primary_key or value is None:
            continue
        if isinstance(value, bool):
            data |= {model_field.name: "on"} if value else {}
        elif isinstance(value, dict | list):
            data[model_field.name] = json.dumps(value)
        else:
            data[model_field.name] = str(value)
    for many in row._meta.many_to_many:
        data[many.name] = [str(related.pk) for related in many.value_from_object(row)]
    return data


@dataclass
class Walk:
    """The walker's requests, each checked: nothing of the other side shows (its words,
    its rows in a list), nothing of it can be chosen, and the database is as it was."""

    client: Client
    words: list[str]
    foreign: dict[type[Model], set[str]]
    checked: set[str] = field(default_factory=set)
    problems: list[str] = field(default_factory=list)
    before: dict[str, list[Any]] = field(default_factory=database)

    def request(
        self,
        what: str,
        method: str,
        url: str,
        data: dict[str, Any] | None = None,
        *,
        must_refuse: bool = False,
    ) -> Any:
        answer, changed = self.sent(method, url, data)
        self.checked.add(what)
        found = []
        text = answer.content.decode(errors="replace")
        if leaked := [word for word in self.words if word in text]:
            found.append(f"{method} {url} shows {leaked}")
        if answer.status_code >= 500:
            found.append(f"{method} {url} fails ({answer.status_code})")
        elif must_refuse and not refused(answer):
            found.append(f"{method} {url} answers {answer.status_code}, not refused")
        listed = answer.context.get("cl") if answer.context else None
        if listed is not None:
            shown = {str(row.pk) for row in listed.result_list}
            if rows := shown & self.foreign.get(listed.model, set()):
                found.append(f"{method} {url} lists {listed.model._meta.label} {sorted(rows)}")
        if changed:
            found.append(f"{method} {url} changed {changed}")
        self.problems.extend(found)
        return answer

    def sent(
        self, method: str, url: str, data: dict[str, Any] | None = None
    ) -> tuple[Any, list[str]]:
        """The answer, and what the request changed in the database, undone (its cookies
        too: one that ended the session), so that a request that reached a row does not
        take it from the steps after it."""
        send = self.client.post if method == "POST" else self.client.get
        cookies = copy.deepcopy(self.client.cookies)
        with transaction.atomic():
            answer = send(url, data or {}, headers=ENGLISH)
            changed = differences(self.before, database())
            transaction.set_rollback(True)
        self.client.cookies = cookies
        return answer, changed

    def choices(self, answer: Any, what: str) -> None:
        """No field of the page's forms offers a row of the other side or the organisation."""
        context = answer.context
        if not context:
            return
        forms = [context[name] for name in ("form",) if name in context]
        if "adminform" in context:
            forms.append(context["adminform"].form)
        for inline in context.get("inline_admin_formsets", []):
            forms += [inline.formset.empty_form, *inline.formset.forms]
        for form in forms:
            # An inline row's own id is looked up among its parent's rows, not chosen.
            own_id = form._meta.model._meta.pk.name if hasattr(form, "_meta") else None
            for name, offered in form.fields.items():
                if not isinstance(offered, ModelChoiceField) or name == own_id:
                    continue
                pks = {str(pk) for pk in offered.queryset.values_list("pk", flat=True)}
                if rows := pks & self.foreign.get(offered.queryset.model, set()):
                    self.problems.append(f"{what}: the field {name} offers {sorted(rows)}")


@dataclass
class World:
    a: Side
    b: Side
    root: User


def organisation(django_user_model) -> User:
    """What is the whole organisation's: its administrators, its provider and provisioning,
    its groups of users, its audits and settings (the other side's words among them)."""
    root = django_user_model.objects.create_superuser("root", "root@example.com", "x")
    grant_whole_fleet(django_user_model.objects.create_user("whole", is_staff=True))
    # The group of users a migration makes, with the whole-fleet permission.
    assert Group.objects.filter(name="Whole fleet", permissions__codename="view_whole_fleet")
    SocialApp.objects.create(provider="openid_connect", provider_id="sso", name="SSO")
    token = ScimToken.objects.create(
        provider="sso", prefix="walk0001", digest="0" * 64, expires_at=timezone.now() + HOUR
    )
    ScimCall.objects.create(provider="sso", token=token, method="GET", path="/Users", status=200)
    ScimMinute.objects.create(who="sso", minute=timezone.now(), count=1)
    ScimGroup.objects.create(provider="sso", display_name="Region 2 staff", external_id="g2")
    AlertDefaults.objects.create(all_vehicles=False, plates=["XYZ9K87"])
    DriverObservation.objects.create(
        seq=1, at=timezone.now(), version="v1", vehicles=2, opened=2, closed=0, took_ms=1
    )
    UnknownWebhookKey.objects.create(path="frame.pulsar", sample="XYZ9K87")
    AccessAttempt.objects.create(
        username="staff-2", ip_address="10.0.0.2", user_agent="walk", failures_since_start=1
    )
    AccessFailureLog.objects.create(username="staff-2", ip_address="10.0.0.2", user_agent="walk")
    return root


def people_rows(number: int, data: Side, cpf: str) -> None:
    """What the admin keeps about a side's people: their fleet login and its audit, their
    CNH lookup, their sign-in (identity, e-mail, attempt, provisioning, session), their
    alerts' pause, and the mapping of a provider's group onto their vehicle group."""
    manager, group, staff = data.manager, data.group, data.staff
    assert manager is not None
    assert group is not None
    assert staff is not None
    account = FleetAccount(user=manager, email=f"fleet-{number}@example.com")
    account.set_password("fleet-password")
    account.save()
    mint = AccessKeyMint.objects.create(
        user=manager, fleet_email=account.email, purpose="embed", outcome="minted"
    )
    lookup = CnhLookup.objects.create(owner=manager, kind="single", purpose="hiring")
    lookup.items.create(position=1, cpf=cpf)
    disclosure = CpfDisclosure.objects.create(
        user=manager,
        username=manager.username,
        lookup=lookup,
        lookup_public_id=lookup.public_id,
        place="page",
        cpf_count=1,
    )
    data.own(
        account,
        mint,
        lookup,
        disclosure,
        DirectoryGroup.objects.create(provider="sso", value=f"frota-{number}", group=group),
        AlertPause.objects.create(user=manager, reason="inactive", detail="walk"),
        SocialAccount.objects.create(user=manager, provider="sso", uid=f"subject-{number}"),
        EmailAddress.objects.create(user=manager, email=f"manager-{number}@example.com"),
        SsoAttempt.objects.create(provider="sso", user=manager, outcome="signed_in"),
        ScimUser.objects.create(provider="sso", user=manager, user_name=f"scim-{number}"),
        UserSession.objects.create(user=manager, ip="10.0.0.9", session_key=f"s{number}"),
        DriverSpan.objects.create(
            registration=plates.registration(data.plate),
            driver_id=data.driver,
            first_seen=timezone.now() - HOUR,
            last_seen=timezone.now(),
        ),
    )
    data.words += [
        str(group),
        manager.username,
        staff.username,
        account.email,
        f"frota-{number}",
        f"subject-{number}",
        f"scim-{number}",
        f"hooks.example/{number}",
        cpf,
        f"{cpf[3:6]}.{cpf[6:9]}",  # what a masked CPF shows
    ]


@pytest.fixture
def world(client, django_user_model) -> World:
    root = organisation(django_user_model)
    a = side(
        client,
        django_user_model,
        1,
        Side("north", "ABC1234", "987.65", 7001, "Norberto Nortista", "quasar"),
        rights="every",
    )
    b = side(
        client,
        django_user_model,
        2,
        Side("south", "XYZ9K87", "123.45", 7002, "Suzana Sulista", "pulsar"),
        rights="every",
    )
    people_rows(1, a, "52998224725")
    people_rows(2, b, "11144477735")
    b.words += b.forbidden()
    # A fine of A set by hand to B's driver (by someone who sees the whole fleet): B's
    # driver is not A's for it.
    a.own(fine_driver_correct(fine_id=a.fine.pk, driver_id=b.driver, reason="walk", user=root))
    a.own(*FineDriverCorrection.objects.filter(fine=a.fine))
    fine_driver_correct(fine_id=b.fine.pk, driver_id=b.driver, reason="walk", user=root)
    # Each side's fine marked as needing no indication, by hand: a change of each.
    for fine in (a.fine, b.fine):
        fine.refresh_from_db()
        seen = seen_value(fine.indication, fine.indication_basis or "")
        fine_indication_need_set(fine_id=fine.pk, needed=False, seen=seen, reason="walk", user=root)
    a.own(*FineIndicationChange.objects.filter(fine=a.fine))
    # An indication of each side's fine, B's with its receipt (named by B's word).
    for own in (a, b):
        assert own.fine is not None
        indication = DriverIndication.objects.create(
            fine=own.fine,
            driver_id=own.driver,
            channel="post",
            indicated_on=own.fine.received_at.date(),
            user=root,
            user_name="root",
        )
        if own is a:
            a.own(indication)
        else:
            IndicationReceipt.objects.create(
                indication=indication,
                name=f"{b.secret}.pdf",
                content_type="application/pdf",
                size=9,
                sha256="0" * 64,
                content=b"%PDF-1.7\n",
                uploaded_by=root,
            )
    return World(a=a, b=b, root=root)


def foreign_rows(own: Side) -> dict[type[Model], set[str]]:
    """Every row of every admin's model but `own`'s: the other side's, the organisation's."""
    return {
        model: {
            str(pk)
            for pk in model._default_manager.values_list("pk", flat=True)
            if (model._meta.label, str(pk)) not in own.rows
        }
        for model in admin.site._registry
    }


def added_views(model_admin: admin.ModelAdmin[Any]) -> list[URLPattern]:
    prefix = f"{model_admin.opts.app_label}_{model_admin.opts.model_name}_"
    return [
        pattern
        for pattern in model_admin.get_urls()
        if isinstance(pattern, URLPattern)
        and pattern.name
        and pattern.name.removeprefix(prefix) not in STANDARD_VIEWS
    ]


def walk_lists(walk: Walk, model: type[Model], terms: list[str], own: Side) -> None:
    """The change list, its searches, the add page and the pages of `own`'s rows: what
    they list and what their fields offer."""
    label = model._meta.label
    changelist = admin_url(model, "changelist")
    walk.request(f"{label}: change list", "GET", changelist)
    for term in terms:
        walk.request(f"{label}: search", "GET", changelist, {"q": term})
    add = walk.request(f"{label}: add page", "GET", admin_url(model, "add"))
    walk.choices(add, f"{label}: add page")
    for pk in sorted(pk for of, pk in own.rows if of == label):
        page, _changed = walk.sent("GET", admin_url(model, "change", pk))
        walk.choices(page, f"{label}: change page of its own {pk}")


def walk_field_searches(
    walk: Walk, model: type[Model], model_admin: admin.ModelAdmin[Any], terms: list[str]
) -> None:
    """The searches of the fields that look their rows up as one types (the admin's and its
    inlines' `autocomplete_fields`)."""
    for source, names in [(model, model_admin.autocomplete_fields)] + [
        (inline.model, inline.autocomplete_fields) for inline in model_admin.inlines
    ]:
        for name in names:
            remote = source._meta.get_field(name).related_model
            what = f"{model._meta.label}: search of the field {source._meta.model_name}.{name}"
            for term in terms:
                query = {
                    "app_label": source._meta.app_label,
                    "model_name": source._meta.model_name,
                    "field_name": name,
                    "term": term,
                }
                found = walk.request(what, "GET", reverse("admin:autocomplete"), query)
                results = found.json()["results"] if found.status_code == 200 else []
                if ids := {result["id"] for result in results} & walk.foreign[remote]:
                    walk.problems.append(f"{what} finds {sorted(ids)} for {term!r}")


def walk_records(walk: Walk, model: type[Model], rows: dict[str, Model]) -> None:
    """Each of `rows`: its change, history and delete pages, read and posted, and its page
    in the portal, all refused."""
    label = model._meta.label
    for pk, row in sorted(rows.items()):
        for page in ("change", "history", "delete"):
            url = admin_url(model, page, pk)
            walk.request(f"{label}: {page} page", "GET", url, must_refuse=True)
        change, delete = admin_url(model, "change", pk), admin_url(model, "delete", pk)
        walk.request(f"{label}: change page", "POST", change, posted(row), must_refuse=True)
        walk.request(f"{label}: delete page", "POST", delete, {"post": "yes"}, must_refuse=True)
        if hasattr(row, "get_absolute_url"):
            content_type = ContentType.objects.get_for_model(model).pk
            shortcut = reverse("admin:view_on_site", args=[content_type, pk])
            walk.request(f"{label}: view on site", "GET", shortcut)
            url = row.get_absolute_url()
            walk.request(f"{label}: its page in the portal", "GET", url, must_refuse=True)


def walk_added_views(
    walk: Walk,
    model: type[Model],
    model_admin: admin.ModelAdmin[Any],
    rows: dict[str, Model],
    other: Side,
) -> list[str]:
    """The views the admin adds, on `rows` (read and posted, refused) or as `ADDED_VIEWS`
    says; the names of those it cannot call."""
    unclassified = []
    for pattern in added_views(model_admin):
        what = f"{model._meta.label}: added view {pattern.name}"
        arguments = list(pattern.pattern.converters)
        if not arguments and pattern.name in ADDED_VIEWS:
            ADDED_VIEWS[pattern.name](walk, what, reverse(f"admin:{pattern.name}"), other)
        elif len(arguments) == 1:
            for pk, row in sorted(rows.items()):
                url = reverse(f"admin:{pattern.name}", args=[pk])
                walk.request(what, "GET", url, must_refuse=True)
                data = posted(row) | {"password1": NEW_PASSWORD, "password2": NEW_PASSWORD}
                walk.request(what, "POST", url, data, must_refuse=True)
        else:
            unclassified.append(str(pattern.name))
    return unclassified


def walk_actions(
    walk: Walk, model: type[Model], model_admin: admin.ModelAdmin[Any], as_root: HttpRequest
) -> None:
    """Every action of the admin (all a superuser is offered), run on the other side's and
    the organisation's rows through the change list, confirmed where it asks."""
    for name in model_admin.get_actions(as_root):
        selected = {
            "action": name,
            helpers.ACTION_CHECKBOX_NAME: sorted(walk.foreign[model]),
            "index": "0",
            "post": "yes",  # a confirmation page's answer (delete_selected's)
        }
        what = f"{model._meta.label}: action {name}"
        walk.request(what, "POST", admin_url(model, "changelist"), selected)


def test_staff_with_every_right_reach_nothing_of_another_group_nor_of_the_organisation(world):
    a, b = world.a, world.b
    # A page that fails is a finding of the walk, which goes on.
    client = Client(raise_request_exception=False)
    client.force_login(a.staff)
    walk = Walk(client, words=b.words, foreign=foreign_rows(a))
    as_root = RequestFactory().get("/admin/")
    as_root.user = world.root
    # In another case than the pages write them: a search box shows its term again.
    terms = [b.plate.lower(), str(b.group).lower(), b.manager.username.upper()]
    unwalked, unclassified = [], []

    walk.request("site: index", "GET", reverse("admin:index"))
    for app_label in sorted({model._meta.app_label for model in admin.site._registry}):
        walk.request(f"site: app {app_label}", "GET", reverse("admin:app_list", args=[app_label]))
    for model, model_admin in admin.site._registry.items():
        rows = {
            str(row.pk): row for row in model._default_manager.filter(pk__in=walk.foreign[model])
        }
        if not rows:
            unwalked.append(model._meta.label)
        walk_lists(walk, model, terms, a)
        walk_field_searches(walk, model, model_admin, terms)
        walk_records(walk, model, rows)
        unclassified += walk_added_views(walk, model, model_admin, rows, b)
        walk_actions(walk, model, model_admin, as_root)

    # The list of what was walked (`pytest -s` shows it).
    print("\nThe admin's views, actions and added views walked with every right:")
    print("\n".join(sorted(walk.checked)))
    RUN_SUMMARY.append(_walked_summary(walk.checked))
    if unclassified:
        walk.problems.append(f"added views the walk cannot call (ADDED_VIEWS): {unclassified}")
    if unwalked:
        walk.problems.append(f"admins with no record of B nor of the organisation: {unwalked}")
    assert not walk.problems, "\n".join(walk.problems)
    assert scope_of(User.objects.get(pk=a.staff.pk)).group_ids == (a.group.pk,)

    # What A's staff do reach: the walk is not vacuous.
    for url in (
        admin_url(VehicleGroup, "change", a.group.pk),
        admin_url(User, "change", a.manager.pk),
        admin_url(FleetAccount, "change", a.manager.fleet_account.pk),
        admin_url(DirectoryGroup, "change", DirectoryGroup.objects.get(value="frota-1").pk),
    ):
        assert client.get(url).status_code == 200, url


def _walked_summary(checked: set[str]) -> str:
    """One line for the run's report: how many admins, and of each kind of page or action
    how many, the walk reached."""
    models = {line.partition(":")[0] for line in checked}
    kinds = Counter(line.partition(": ")[2].split(" ")[0] for line in checked)
    counted = ", ".join(f"{count} {kind}" for kind, count in sorted(kinds.items()))
    return (
        f"admin walk: {len(checked)} views, actions and added views of {len(models)} admins "
        f"walked as staff of one group on another's records ({counted}); "
        "`pytest -s tests/admin/test_admin_scope_walk.py` lists them"
    )
