"""Where scim2-server reads and writes the users and groups of one identity provider: the
portal's own models (`signin.models.ScimUser`, `ScimGroup`, Django's User and allauth's
SocialAccount).

A SCIM user is the person who signs in through that provider: found by their
`externalId`, the subject the provider signs them in with (their SocialAccount's uid),
never by e-mail; created with that identity when new. Their e-mail is kept as pushed
(`ScimUser.email`) where the sign-in would keep it (`signin.admission.email_vouched_for`),
and becomes their account's only when they sign in with it. Each provider sees and
changes only its own users and groups: another's are not found.
"""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Iterable
from typing import Any

from allauth.socialaccount.models import SocialAccount
from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Model, Prefetch, QuerySet
from django.http import HttpRequest
from django.utils import timezone
from scim2_models import (
    Email,
    InvalidValueException,
    NotFoundException,
    NotImplementedException,
    Resource,
    ResourceType,
    ResponseParameters,
    ScimProvider,
    SearchRequest,
    UnauthorizedException,
    UniquenessException,
)
from scim2_server.storage import ScimStorage, SearchPage

from signin.admission import email_vouched_for
from signin.blocks import access_reopen
from signin.models import ScimGroup, ScimUser
from signin.scim.filters import GROUP, USER, scim_filter_query
from signin.scim.provisioning import scim_memberships_apply, scim_user_deactivate

# The members of groups a list reads, all at once (`_live_members`).
_LIVE_MEMBERS = Prefetch(
    "members", queryset=ScimUser.objects.filter(deleted_at__isnull=True), to_attr="live_members"
)
_DEFAULT_COUNT = 100


class PortalStorage(ScimStorage):
    """The users and groups of the identity provider `provider` (its id)."""

    def __init__(self, *, provider: str, scim: ScimProvider, request: HttpRequest) -> None:
        self.provider = provider
        self.scim = scim
        self.request = request

    def operation(self) -> Any:
        return transaction.atomic()

    # -- Reading -------------------------------------------------------------------

    def get(
        self,
        resource_type: ResourceType,
        resource_id: str,
        *,
        response_parameters: ResponseParameters[Any] | None = None,
    ) -> Resource[Any]:
        if resource_type.id == USER:
            return self._user_resource(resource_type, self._scim_user(resource_id))
        return self._group_resource(resource_type, self._group(resource_id))

    def search(
        self,
        resource_types: list[ResourceType],
        search_request: SearchRequest[Any],
        *,
        position: Any = None,
    ) -> SearchPage:
        if len(resource_types) != 1:
            raise NotImplementedException(detail="Search one resource type at a time")
        (resource_type,) = resource_types
        node = None if search_request.filter is None else search_request.filter.ast
        query = scim_filter_query(str(resource_type.id), node)
        rows: QuerySet[Any]
        if resource_type.id == USER:
            # A filter through groups joins them: the users it selects, each once.
            users = self._users().filter(pk__in=self._users().filter(query).values("pk"))
            rows = users.select_related("user").prefetch_related("groups")
        else:
            groups = self._groups().filter(pk__in=self._groups().filter(query).values("pk"))
            rows = groups.prefetch_related(_LIVE_MEMBERS)
        start = search_request.start_index_0 or 0
        count = _DEFAULT_COUNT if search_request.count is None else search_request.count
        total = rows.count()
        resources = [self._resource(resource_type, row) for row in rows[start : start + count]]
        return SearchPage(total=total, resources=resources)

    # -- Writing -------------------------------------------------------------------

    def create(self, resource_type: ResourceType, resource: Resource[Any]) -> Resource[Any]:
        if resource_type.id == USER:
            return self._user_resource(resource_type, self._user_create(resource))
        return self._group_resource(resource_type, self._group_create(resource))

    def update(
        self,
        resource_type: ResourceType,
        resource: Resource[Any],
        *,
        expected_version: str | None = None,
    ) -> Resource[Any]:
        if resource_type.id == USER:
            scim_user = self._scim_user(str(resource.id))
            self._user_write(scim_user, resource)
            return self._user_resource(resource_type, scim_user)
        group = self._group(str(resource.id))
        self._group_write(group, resource)
        return self._group_resource(resource_type, group)

    def delete(
        self, resource_type: ResourceType, resource_id: str, *, expected_version: str | None = None
    ) -> None:
        if resource_type.id == USER:
            scim_user = self._scim_user(resource_id)
            scim_user.deleted_at = timezone.now()
            scim_user.save(update_fields=["deleted_at", "updated_at"])
            scim_user.groups.clear()
            scim_user_deactivate(user=scim_user.user, provider=self.provider)
            scim_memberships_apply(scim_users=[scim_user], request=self.request)
            return
        group = self._group(resource_id)
        members = list(group.members.select_related("user"))
        group.delete()
        scim_memberships_apply(scim_users=members, request=self.request)

    # -- Users ---------------------------------------------------------------------

    def _users(self) -> QuerySet[ScimUser]:
        return ScimUser.objects.filter(provider=self.provider, deleted_at__isnull=True)

    def _scim_user(self, resource_id: str) -> ScimUser:
        found = _by_id(self._users().select_related("user"), resource_id)
        if found is None:
            self._not_anothers(ScimUser.objects.filter(deleted_at__isnull=True), resource_id)
            raise NotFoundException(detail=f"No user {resource_id}")
        return found

    def _not_anothers(self, rows: QuerySet[Any], resource_id: str) -> None:
        """401 for a user or group another provider provisions: this token may not touch
        it (and learns no more than that it is not its provider's)."""
        if _by_id(rows.exclude(provider=self.provider), resource_id) is not None:
            raise UnauthorizedException(
                detail="This token's identity provider does not provision this resource"
            )

    def _user_create(self, resource: Any) -> ScimUser:
        user_name = str(resource.user_name or "").strip()
        external_id = str(resource.external_id or "")
        self._user_name_free(user_name)
        identity = (
            SocialAccount.objects.filter(provider=self.provider, uid=external_id)
            .select_related("user")
            .first()
            if external_id
            else None
        )
        if identity is not None:
            if self._users().filter(user=identity.user).exists():
                raise UniquenessException(detail="This externalId is provisioned already")
            user = identity.user
        else:
            user = User.objects.create_user(username=_free_username(user_name))
            if external_id:
                SocialAccount.objects.create(user=user, provider=self.provider, uid=external_id)
        scim_user = ScimUser.objects.create(
            provider=self.provider, user=user, user_name=user_name, external_id=external_id
        )
        self._user_write(scim_user, resource, created=True)
        return scim_user

    def _user_write(self, scim_user: ScimUser, resource: Any, *, created: bool = False) -> None:
        user_name = str(resource.user_name or "").strip()
        if user_name.casefold() != scim_user.user_name.casefold():
            self._user_name_free(user_name)
        external_id = str(resource.external_id or "")
        if external_id != scim_user.external_id:
            self._identity_move(scim_user, external_id)
        scim_user.user_name, scim_user.external_id = user_name, external_id
        scim_user.save()
        user = scim_user.user
        # As RFC 7644 has it: what a replacement leaves out, or a PATCH removes, is no more
        # (a name; the pushed e-mail, never the address a sign-in confirmed; `active`,
        # then not said: active).
        name = resource.name
        user.first_name = str(name.given_name or "")[:150] if name is not None else ""
        user.last_name = str(name.family_name or "")[:150] if name is not None else ""
        # Kept as pushed, pending: alerts go to the address the person's sign-in confirmed
        # (`admission`), never to one a push alone gives (a leaked token would point a
        # manager's fines at any mailbox).
        chosen = _primary_email(resource.emails or [])
        email = str(chosen.value or "") if chosen is not None else ""
        if (
            chosen is not None
            and email
            and email_vouched_for(email=email, provider_id=self.provider, request=self.request)
        ):
            scim_user.email = email
            scim_user.email_type = str(chosen.type or "")[:20]
            scim_user.email_primary = chosen.primary
        elif chosen is None:
            scim_user.email, scim_user.email_type, scim_user.email_primary = "", "", None
        scim_user.save(update_fields=["email", "email_type", "email_primary", "updated_at"])
        # The names only: whether the account is active may have changed since it was read
        # (a block), and is written apart.
        user.save(update_fields=["first_name", "last_name"])
        # What the provider says is kept as its own; the account follows it unless an
        # administrator blocked the person (`signin.blocks`), which no push lifts.
        if resource.active != scim_user.active:
            scim_user.active = resource.active
            scim_user.save(update_fields=["active", "updated_at"])
        if resource.active is False:
            scim_user_deactivate(user=user, provider=self.provider)
        elif access_reopen(user=user):
            scim_memberships_apply(scim_users=[scim_user], request=self.request)

    def _user_name_free(self, user_name: str) -> None:
        if not user_name:
            raise InvalidValueException(detail="userName is required")
        if self._users().filter(user_name__iexact=user_name).exists():
            raise UniquenessException(detail="This userName is taken")

    def _identity_move(self, scim_user: ScimUser, external_id: str) -> None:
        """The person's subject at the provider changed: their identity follows, unless
        it is another person's."""
        taken = SocialAccount.objects.filter(provider=self.provider, uid=external_id)
        if external_id and taken.exclude(user=scim_user.user).exists():
            raise UniquenessException(detail="This externalId is another user's")
        theirs = SocialAccount.objects.filter(provider=self.provider, user=scim_user.user)
        if not external_id:
            return
        if not theirs.update(uid=external_id):
            SocialAccount.objects.create(
                user=scim_user.user, provider=self.provider, uid=external_id
            )

    def _user_resource(self, resource_type: ResourceType, scim_user: ScimUser) -> Resource[Any]:
        user = scim_user.user
        groups = [(group.pk, group.display_name) for group in scim_user.groups.all()]
        values: dict[str, Any] = {
            "id": str(scim_user.id),
            "userName": scim_user.user_name,
            "externalId": scim_user.external_id or None,
            # As the provider said: a block in the portal is the portal's own (admin).
            "active": scim_user.active,
            "name": {"givenName": user.first_name or None, "familyName": user.last_name or None},
            # The one e-mail kept, as Entra and Okta send and address it (`emails[type
            # eq "work"].value`).
            "emails": [
                {
                    "value": scim_user.email,
                    "type": scim_user.email_type or None,
                    "primary": scim_user.email_primary,
                }
            ]
            if scim_user.email
            else None,
            "groups": [{"value": str(pk), "display": name} for pk, name in groups] or None,
            "meta": _meta(USER, scim_user),
        }
        return self._validated(resource_type, values)

    def _validated(self, resource_type: ResourceType, values: dict[str, Any]) -> Resource[Any]:
        model: Any = self.scim.model_for(resource_type)
        resource: Resource[Any] = model.model_validate(
            {name: value for name, value in values.items() if value is not None}
        )
        return resource

    # -- Groups --------------------------------------------------------------------

    def _groups(self) -> QuerySet[ScimGroup]:
        return ScimGroup.objects.filter(provider=self.provider)

    def _group(self, resource_id: str) -> ScimGroup:
        found = _by_id(self._groups(), resource_id)
        if found is None:
            self._not_anothers(ScimGroup.objects.all(), resource_id)
            raise NotFoundException(detail=f"No group {resource_id}")
        return found

    def _group_create(self, resource: Any) -> ScimGroup:
        group = ScimGroup(provider=self.provider)
        self._group_write(group, resource)
        return group

    def _group_write(self, group: ScimGroup, resource: Any) -> None:
        name = str(resource.display_name or "").strip()
        if not name:
            raise InvalidValueException(detail="displayName is required")
        if self._groups().filter(display_name__iexact=name).exclude(pk=group.pk).exists():
            raise UniquenessException(detail="This displayName is taken")
        renamed = (name, str(resource.external_id or "")) != (group.display_name, group.external_id)
        group.display_name, group.external_id = name, str(resource.external_id or "")
        group.save()
        before = set(group.members.all())
        after = set(self._members(resource.members or []))
        group.members.remove(*(before - after))
        group.members.add(*(after - before))
        changed = (before | after) if renamed else (before ^ after)
        scim_memberships_apply(
            scim_users=sorted(changed, key=lambda member: member.pk), request=self.request
        )

    def _members(self, members: Iterable[Any]) -> list[ScimUser]:
        wanted = {str(member.value or "") for member in members}
        found = [user for value in wanted if (user := _by_id(self._users(), value)) is not None]
        if len(found) != len(wanted):
            for value in wanted:
                self._not_anothers(ScimUser.objects.filter(deleted_at__isnull=True), value)
            raise InvalidValueException(detail="A member is not a user of this provider")
        return found

    def _group_resource(self, resource_type: ResourceType, group: ScimGroup) -> Resource[Any]:
        members = [
            {
                "value": str(member.id),
                "$ref": f"Users/{member.id}",
            }
            for member in _live_members(group)
        ]
        values: dict[str, Any] = {
            "id": str(group.id),
            "displayName": group.display_name,
            "externalId": group.external_id or None,
            "members": members or None,
            "meta": _meta(GROUP, group),
        }
        return self._validated(resource_type, values)

    def _resource(self, resource_type: ResourceType, row: Any) -> Resource[Any]:
        if resource_type.id == USER:
            return self._user_resource(resource_type, row)
        return self._group_resource(resource_type, row)


def _meta(kind: str, row: ScimUser | ScimGroup) -> dict[str, Any]:
    return {
        "resourceType": kind,
        "created": row.created_at,
        "lastModified": row.updated_at,
        "version": f'W/"{row.updated_at.timestamp():.6f}"',
    }


def _by_id[M: Model](rows: QuerySet[M], resource_id: str) -> M | None:
    try:
        key = uuid.UUID(resource_id)
    except ValueError:
        return None
    return rows.filter(pk=key).first()


def _live_members(group: ScimGroup) -> list[ScimUser]:
    """The group's members the provider has not deleted: as a list read them (prefetched),
    or read now."""
    found: list[ScimUser] | None = getattr(group, "live_members", None)
    if found is None:
        found = list(group.members.filter(deleted_at__isnull=True))
    return found


def _primary_email(emails: list[Email]) -> Email | None:
    """The one e-mail kept of those pushed: the primary one, else the first."""
    return next((email for email in emails if email.primary), emails[0] if emails else None)


def _free_username(user_name: str) -> str:
    """A portal username for a new person: their userName, made unique if another
    (unrelated) account has it; never taken over."""
    username = user_name[:150]
    while User.objects.filter(username__iexact=username).exists():
        username = f"{user_name[:143]}-{secrets.token_hex(3)}"
    return username
