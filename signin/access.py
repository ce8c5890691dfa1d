"""Who an identity provider's answer lets in, and as what.

Each provider says which e-mail domains may get an account and which values
of its groups (or roles) claim make a fleet manager or an administrator. The
rules, decided again at every sign-in:

- a value of the administrators' groups makes an administrator (Django admin),
  a value of the managers' groups a fleet manager;
- otherwise a verified e-mail in an allowed domain makes a fleet manager,
  unless the provider names managers' groups: then the groups decide, so that
  removal from the group in the provider removes the access;
- anyone else is refused, with the reason.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

from signin.models import Role, SsoOutcome


@dataclasses.dataclass(frozen=True, slots=True)
class AccessPolicy:
    """One provider's rules, from its settings (the environment's or the admin's)."""

    allowed_domains: frozenset[str] = frozenset()
    groups_claim: str = "groups"
    manager_groups: frozenset[str] = frozenset()
    admin_groups: frozenset[str] = frozenset()

    @classmethod
    def from_settings(cls, app_settings: Mapping[str, Any]) -> AccessPolicy:
        return cls(
            allowed_domains=frozenset(
                domain.strip().lower().lstrip("@")
                for domain in _strings(app_settings.get("allowed_domains"))
            ),
            groups_claim=str(app_settings.get("groups_claim") or "groups"),
            manager_groups=frozenset(_strings(app_settings.get("manager_groups"))),
            admin_groups=frozenset(_strings(app_settings.get("admin_groups"))),
        )

    @property
    def lets_anyone_in(self) -> bool:
        return bool(self.allowed_domains or self.manager_groups or self.admin_groups)

    def allows_domain_of(self, email: str) -> bool:
        """Whether `email` is in one of the allowed domains (the provider's own)."""
        return email.rpartition("@")[2].lower() in self.allowed_domains


@dataclasses.dataclass(frozen=True, slots=True)
class Decision:
    """A role, or the reason for a refusal; the e-mail the portal may trust; and the values
    of the groups claim, which also give vehicle groups (`fleet.models.DirectoryGroup`)."""

    role: Role | None
    refusal: SsoOutcome | None
    verified_email: str
    groups: frozenset[str] = frozenset()


def access_decide(
    *, policy: AccessPolicy, claims: Mapping[str, Any], pushed: Iterable[str] = ()
) -> Decision:
    """What `claims` (the ID token's and the userinfo's, merged) allow under `policy`, with
    the values of the groups the provider `pushed` over SCIM counted as its claim's for
    access, never for the administrators' role: only the sign-in's own claim makes an
    administrator (a SCIM token, leaked, would otherwise make one of any login)."""
    email = str(claims.get("email") or "").strip()
    verified_email = email if email and _true(claims.get("email_verified")) else ""
    claimed = frozenset(_strings(claims.get(policy.groups_claim)))
    groups = claimed | frozenset(pushed)

    def decided(role: Role | None, refusal: SsoOutcome | None = None) -> Decision:
        return Decision(role=role, refusal=refusal, verified_email=verified_email, groups=groups)

    if claimed & policy.admin_groups:
        return decided(Role.ADMINISTRATOR)
    # Where groups decide access, an administrators' group only pushed gives access, as a
    # managers' group does; where the e-mail's domain decides, nothing more than it.
    giving = policy.manager_groups | (policy.admin_groups if policy.manager_groups else frozenset())
    if groups & giving:
        return decided(Role.MANAGER)
    if policy.manager_groups:
        return decided(None, SsoOutcome.NO_ROLE)
    if not verified_email:
        return decided(None, SsoOutcome.UNVERIFIED_EMAIL)
    if not policy.allows_domain_of(verified_email):
        return decided(None, SsoOutcome.DOMAIN_NOT_ALLOWED)
    return decided(Role.MANAGER)


def role_of_groups(*, policy: AccessPolicy, groups: Iterable[str]) -> Role | None:
    """The role the values of a person's groups give under `policy`, as a sign-in decides
    it, for a provider that pushes their groups (SCIM) between sign-ins: None when the
    groups decide and none of them gives access. Where the e-mail's domain decides, a
    person in no administrators' group is a manager (their e-mail let them in). A push
    only takes a role away (`signin.scim.provisioning`): ADMINISTRATOR here keeps one."""
    values = frozenset(groups)
    if values & policy.admin_groups:
        return Role.ADMINISTRATOR
    if values & policy.manager_groups or not policy.manager_groups:
        return Role.MANAGER
    return None


def _strings(value: Any) -> Iterable[str]:
    """A claim or setting as a list of strings: a list, or one string (comma-separated)."""
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    if isinstance(value, list | tuple | set | frozenset):
        return [str(item).strip() for item in value if str(item).strip()]
    return []


def _true(value: Any) -> bool:
    """`email_verified` as providers send it: a boolean, or (some) the string "true"."""
    return value is True or (isinstance(value, str) and value.strip().lower() == "true")
