"""SCIM filters (RFC 7644 §3.4.2.2) as queries: every list of users or groups is one count
and one page read through the database, whatever the filter, never every row of the
provider built and matched one by one.

An attribute the portal keeps maps to its column (case-insensitively where RFC 7643 says
the attribute is not case-exact: userName, an e-mail, displayName); `and`, `or`, `not`,
`pr`, every comparison operator, and the value paths Entra and Okta send
(`emails[type eq "work"]`, `members[value eq "<id>"]`). A filter on an attribute the
portal does not keep is refused as an invalid filter (400): it could match nothing the
portal answers.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from django.db.models import Q
from scim2_models import InvalidFilterException
from scim2_models.path import (
    AttrPath,
    CompareOperator,
    Comparison,
    FilterNode,
    LogicalExpr,
    LogicalOperator,
    Not,
    Present,
    ValuePath,
)

USER: Final = "User"
GROUP: Final = "Group"
_CORE = {
    USER: "urn:ietf:params:scim:schemas:core:2.0:user",
    GROUP: "urn:ietf:params:scim:schemas:core:2.0:group",
}


@dataclass(frozen=True, slots=True)
class _Column:
    """Where an attribute is kept: its lookup, what its values are, how they compare."""

    lookup: str
    kind: type  # str, bool, datetime, uuid.UUID
    case_exact: bool = True
    # An empty string is no value (`pr` is false, `eq null` true).
    blank_is_absent: bool = True
    # What a NULL of a boolean counts as, if anything.
    null_is: bool | None = None


_USER_COLUMNS: Final = {
    "id": _Column("pk", uuid.UUID),
    "username": _Column("user_name", str, case_exact=False),
    "externalid": _Column("external_id", str),
    # As the provider said (`ScimUser.active`): not said is active.
    "active": _Column("active", bool, null_is=True),
    "name.givenname": _Column("user__first_name", str),
    "name.familyname": _Column("user__last_name", str),
    "emails": _Column("email", str, case_exact=False),  # as pushed (`ScimUser.email`)
    "emails.value": _Column("email", str, case_exact=False),
    "emails.type": _Column("email_type", str, case_exact=False),
    "emails.primary": _Column("email_primary", bool),
    "groups": _Column("groups__id", uuid.UUID),
    "groups.value": _Column("groups__id", uuid.UUID),
    "groups.display": _Column("groups__display_name", str, case_exact=False),
    "meta.created": _Column("created_at", datetime),
    "meta.lastmodified": _Column("updated_at", datetime),
}
_GROUP_COLUMNS: Final = {
    "id": _Column("pk", uuid.UUID),
    "displayname": _Column("display_name", str, case_exact=False),
    "externalid": _Column("external_id", str),
    "members": _Column("members__id", uuid.UUID),
    "members.value": _Column("members__id", uuid.UUID),
    "members.display": _Column("members__user_name", str, case_exact=False),
    "meta.created": _Column("created_at", datetime),
    "meta.lastmodified": _Column("updated_at", datetime),
}
_COLUMNS: Final = {USER: _USER_COLUMNS, GROUP: _GROUP_COLUMNS}

_TEXT_LOOKUPS: Final = {
    CompareOperator.eq: "exact",
    CompareOperator.co: "contains",
    CompareOperator.sw: "startswith",
    CompareOperator.ew: "endswith",
    CompareOperator.gt: "gt",
    CompareOperator.ge: "gte",
    CompareOperator.lt: "lt",
    CompareOperator.le: "lte",
}
_CASELESS: Final = {
    "exact": "iexact",
    "contains": "icontains",
    "startswith": "istartswith",
    "endswith": "iendswith",
}


def scim_filter_query(resource_type: str, node: FilterNode | None) -> Q:
    """The rows of `resource_type` (`User`, `Group`) that `node` selects."""
    if node is None:
        return Q()
    return _Translator(_COLUMNS[resource_type], _CORE[resource_type]).query(node)


class _Translator:
    def __init__(self, columns: dict[str, _Column], core: str) -> None:
        self.columns = columns
        self.core = core

    def query(self, node: FilterNode) -> Q:
        if isinstance(node, LogicalExpr):
            combine: Callable[[Q, Q], Q] = (
                Q.__and__ if node.op == LogicalOperator.and_ else Q.__or__
            )
            found = self.query(node.terms[0])
            for term in node.terms[1:]:
                found = combine(found, self.query(term))
            return found
        if isinstance(node, Not):
            return ~self.query(node.expr)
        if isinstance(node, Present):
            return self._present(self._column(node.attr_path))
        if isinstance(node, Comparison):
            return self._compare(self._column(node.attr_path), node.op, node.value)
        if isinstance(node, ValuePath):
            return self._value_path(node)
        raise InvalidFilterException(detail="This filter is not supported")

    def _name(self, path: AttrPath, sub: str | None = None) -> str:
        if path.uri is not None and path.uri.lower() != self.core:
            raise InvalidFilterException(detail=f"The portal keeps no attribute of {path.uri}")
        parts = [path.attr, path.sub_attr if sub is None else sub]
        return ".".join(part for part in parts if part).lower()

    def _column(self, path: AttrPath, sub: str | None = None) -> _Column:
        name = self._name(path, sub)
        column = self.columns.get(name)
        if column is None:
            raise InvalidFilterException(
                detail=f"The portal keeps no attribute {name!r}: a filter on it is not supported"
            )
        return column

    def _present(self, column: _Column) -> Q:
        if column.kind is str and column.blank_is_absent:
            return Q(**{f"{column.lookup}__isnull": False}) & ~Q(**{column.lookup: ""})
        return Q(**{f"{column.lookup}__isnull": False})

    def _compare(self, column: _Column, op: CompareOperator, value: Any) -> Q:
        if value is None:  # `eq null`: no value; `ne null`: a value
            if op not in (CompareOperator.eq, CompareOperator.ne):
                raise InvalidFilterException(detail=f"{op} null compares nothing")
            present = self._present(column)
            return ~present if op == CompareOperator.eq else present
        if column.kind is uuid.UUID and not _is_uuid(value):
            return Q(pk__in=[]) if op != CompareOperator.ne else Q()  # no id is that
        value = _typed(column, value)
        if op == CompareOperator.ne:
            return ~self._compare(column, CompareOperator.eq, value)
        if column.kind is not str:
            if op in (CompareOperator.co, CompareOperator.sw, CompareOperator.ew):
                raise InvalidFilterException(detail=f"{op} compares text only")
            if column.kind in (bool, uuid.UUID) and op != CompareOperator.eq:
                raise InvalidFilterException(detail=f"{op} does not order this attribute")
        if column.kind is bool and column.null_is is not None:
            # Not said (NULL) counts as `null_is` (a user the provider says nothing of
            # `active` about is active).
            found = Q(**{column.lookup: value})
            return (
                found | Q(**{f"{column.lookup}__isnull": True})
                if value == column.null_is
                else found
            )
        lookup = _TEXT_LOOKUPS[op]
        if column.kind is str and not column.case_exact:
            lookup = _CASELESS.get(lookup, lookup)
        return Q(**{f"{column.lookup}__{lookup}": value})

    def _value_path(self, node: ValuePath) -> Q:
        """`emails[type eq "work" and value co "@a.example"]`, `members[value eq "<id>"]`:
        the filter inside, on the sub-attributes of the multi-valued attribute."""
        attr = self._name(node.attr_path)
        return _Scoped(self, attr).query(node.val_filter)


class _Scoped(_Translator):
    """The filter inside a value path, its names relative to the attribute."""

    def __init__(self, outer: _Translator, attr: str) -> None:
        super().__init__(outer.columns, outer.core)
        self.attr = attr

    def _column(self, path: AttrPath, sub: str | None = None) -> _Column:
        return super()._column(AttrPath(attr=self.attr, sub_attr=path.attr))


def _typed(column: _Column, value: Any) -> Any:
    """`value` as the column keeps it; a value of another type is an invalid filter."""
    try:
        if column.kind is uuid.UUID:
            return uuid.UUID(str(value))
        if column.kind is bool and isinstance(value, bool):
            return value
        if column.kind is str and isinstance(value, str):
            return value
        if column.kind is datetime and isinstance(value, datetime):
            return value
        if column.kind is datetime and isinstance(value, str):
            return datetime.fromisoformat(value)
    except ValueError:
        pass
    raise InvalidFilterException(detail=f"{value!r} is not a value of this attribute")


def _is_uuid(value: Any) -> bool:
    try:
        uuid.UUID(str(value))
    except ValueError:
        return False
    return True
