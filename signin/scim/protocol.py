"""The SCIM service the portal announces: RFC 7643's User (with the enterprise extension,
whose values are accepted and not kept) and Group, PATCH and filters, no bulk, sort or
ETag, bearer tokens; pages by index.

It reads what Microsoft Entra ID sends as Entra documents it: a `remove` of members that
names them in its `value` (beside a null `$ref`), a `replace` of `emails[type eq
"work"].value` on a user with no such e-mail yet, and the schema of its own it names,
with no attribute, on every group.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from typing import Any, Final

from scim2_models import (
    AuthenticationScheme,
    BaseModel,
    Bulk,
    ChangePassword,
    Context,
    ETag,
    Filter,
    Patch,
    PatchOp,
    PatchOperation,
    Reference,
    Resource,
    ResourceType,
    ResponseParameters,
    SCIMException,
    ScimPolicy,
    ScimProvider,
    ServiceProviderConfig,
    Sort,
)
from scim2_server.conditions import Conditions
from scim2_server.responses import ScimResponse
from scim2_server.service import ScimService
from scim2_server.utils import load_default_resource_types, load_default_schemas

MAX_RESULTS = 200


class TooManyRequestsException(SCIMException):
    """A token sent more requests in a minute than SCIM_REQUESTS_PER_MINUTE."""

    status = 429
    _default_detail = "Too many requests: wait a minute"


class PortalScimService(ScimService):
    def read_body[M: BaseModel](
        self, model: type[M], body: bytes, content_type: str | None, scim_ctx: Context
    ) -> M:
        """A resource may name in `schemas` an extension the portal does not know, as
        long as it gives no attribute of it: it says nothing, and is left out rather
        than refused (Entra names `http://schemas.microsoft.com/.../ADSCIM/2.0/Group`
        on every group it creates). Attributes the portal does not keep (RFC 7643's and
        the enterprise extension's, as Entra and Okta send them) are accepted and
        dropped (`_not_kept_dropped`), not advertised; an attribute no schema has is
        still refused."""
        return super().read_body(model, _empty_schemas_dropped(model, body), content_type, scim_ctx)

    def read_creation(
        self, resource_type: ResourceType, body: bytes, content_type: str | None
    ) -> Resource[Any]:
        return super().read_creation(resource_type, _kept_of(resource_type, body), content_type)

    def read_replacement(
        self, resource_type: ResourceType, body: bytes, content_type: str | None
    ) -> Resource[Any]:
        return super().read_replacement(resource_type, _kept_of(resource_type, body), content_type)

    def read_patch(
        self, resource_type: ResourceType, body: bytes, content_type: str | None
    ) -> PatchOp[Any]:
        return super().read_patch(resource_type, _kept_of(resource_type, body), content_type)

    def apply_patch(
        self, current: Resource[Any], patch_op: PatchOp[Any], conditions: Conditions
    ) -> Resource[Any] | None:
        """Entra names each member it removes with `"$ref": null` beside its value: a
        null is no value (RFC 7643 §2.5), not one the member must have. (Its manager,
        of the enterprise extension, is dropped before: `_kept_of`.)"""
        for operation in patch_op.operations or []:
            if operation.op == PatchOperation.Op.remove and isinstance(operation.value, list):
                operation.value = [
                    {key: item for key, item in entry.items() if item is not None}
                    if isinstance(entry, dict)
                    else entry
                    for entry in operation.value
                ]
        return super().apply_patch(current, patch_op, conditions)

    def patch_response(
        self,
        base_url: str,
        resource: Resource[Any],
        response_parameters: ResponseParameters[Any],
    ) -> ScimResponse:
        """200 with the resource, never 204: Okta reads the user from a PATCH's answer
        (RFC 7644 §3.5.2 allows both)."""
        return self.resource_response(
            self.publish(base_url, resource),
            Context.RESOURCE_REPLACEMENT_RESPONSE,
            response_parameters,
        )


@cache
def scim_service() -> ScimService:
    config = ServiceProviderConfig(
        patch=Patch(supported=True),
        bulk=Bulk(supported=False, max_operations=0, max_payload_size=0),
        filter=Filter(supported=True, max_results=MAX_RESULTS),
        change_password=ChangePassword(supported=False),
        sort=Sort(supported=False),
        etag=ETag(supported=False),
        authentication_schemes=[
            AuthenticationScheme(
                type=AuthenticationScheme.Type.oauthbearertoken,
                name="Bearer token",
                description="A token made by `manage.py scim_token` or in the admin",
                spec_uri=Reference[Any]("https://www.rfc-editor.org/rfc/rfc6750"),
                primary=True,
            )
        ],
    )
    # RFC 7644 asks for neither; both change only requests it would refuse.
    policy = ScimPolicy(
        remove_value_as_filter=ScimPolicy.RemoveValue.apply,
        unmatched_path_filter=ScimPolicy.UnmatchedPathFilter.create,
    )
    schemas, resource_types = _kept_schemas()
    provider = ScimProvider.from_discovery(schemas, resource_types, config=config, policy=policy)
    return PortalScimService(provider)


USER_URN = "urn:ietf:params:scim:schemas:core:2.0:User"
GROUP_URN = "urn:ietf:params:scim:schemas:core:2.0:Group"
# What the portal keeps and answers: attribute -> its sub-attributes kept (None: all).
KEPT: dict[str, dict[str, set[str] | None]] = {
    USER_URN: {
        "userName": None,
        "name": {"givenName", "familyName"},
        "active": None,
        "emails": {"value", "type", "primary"},
        "groups": None,
    },
    # A member is a User, shown by the userName the portal knows: its type and display
    # are not kept as sent, and not advertised.
    GROUP_URN: {"displayName": None, "members": {"value", "$ref"}},
}


def _kept_schemas() -> tuple[list[Any], list[Any]]:
    """RFC 7643's User and Group, with only the attributes the portal keeps and returns;
    no enterprise extension (its values are accepted and dropped: `read_body`)."""
    schemas = load_default_schemas()
    kept = []
    for urn, attributes in KEPT.items():
        schema = schemas[urn]
        chosen = []
        for attribute in schema.attributes or []:
            if attribute.name not in attributes:
                continue
            subs = attributes[attribute.name]
            if subs is not None and attribute.sub_attributes:
                attribute.sub_attributes = [
                    sub for sub in attribute.sub_attributes if sub.name in subs
                ]
            chosen.append(attribute)
        schema.attributes = chosen
        kept.append(schema)
    resource_types = []
    for resource_type in load_default_resource_types().values():
        resource_type.schema_extensions = []
        resource_types.append(resource_type)
    return kept, resource_types


def _empty_schemas_dropped(model: type[Any], body: bytes) -> bytes:
    """`body` without the URNs in its `schemas` that `model` does not know and whose
    attributes it does not carry; unchanged if there are none, or if it is not a
    resource or not JSON (the validation then says so)."""
    known_schemas = getattr(model, "get_extension_models", None)
    base_schema = getattr(model, "__schema__", None)
    if known_schemas is None or base_schema is None:
        return body
    try:
        payload = json.loads(body)
    except ValueError:
        return body
    schemas = payload.get("schemas") if isinstance(payload, dict) else None
    if not isinstance(schemas, list):
        return body
    known = {str(base_schema).lower(), *(str(urn).lower() for urn in known_schemas())}
    carried = {str(key).lower() for key in payload}
    kept = [
        urn
        for urn in schemas
        if not isinstance(urn, str) or urn.lower() in known or urn.lower() in carried
    ]
    if len(kept) == len(schemas):
        return body
    return json.dumps({**payload, "schemas": kept}).encode()


_PATCH_URN = "urn:ietf:params:scim:api:messages:2.0:patchop"
_ENTERPRISE = "urn:ietf:params:scim:schemas:extension:enterprise:2.0:user"


@dataclass(frozen=True, slots=True)
class _NotKept:
    """What a resource type's bodies may carry that the portal drops: attributes RFC 7643
    defines (and the enterprise extension), sub-attributes of those it keeps."""

    core: str  # its URN, lower case: a path may start with it
    dropped: frozenset[str]
    subs: dict[str, frozenset[str]]  # attribute -> the sub-attributes kept


_USER_NOT_KEPT: Final = _NotKept(
    core="urn:ietf:params:scim:schemas:core:2.0:user",
    dropped=frozenset(
        {
            "displayname",
            "nickname",
            "profileurl",
            "title",
            "usertype",
            "preferredlanguage",
            "locale",
            "timezone",
            "password",
            "phonenumbers",
            "ims",
            "photos",
            "addresses",
            "entitlements",
            "roles",
            "x509certificates",
            _ENTERPRISE,
        }
    ),
    subs={
        "name": frozenset({"givenname", "familyname"}),
        "emails": frozenset({"value", "type", "primary"}),
    },
)
# A member is a User, shown by the userName the portal knows: its type and display are
# the portal's, not kept as sent.
_GROUP_NOT_KEPT: Final = _NotKept(
    core="urn:ietf:params:scim:schemas:core:2.0:group",
    dropped=frozenset(),
    subs={"members": frozenset({"value", "$ref"})},
)


def _kept_of(resource_type: ResourceType, body: bytes) -> bytes:
    """`body` of a request on `resource_type` without what the portal does not keep."""
    not_kept = _USER_NOT_KEPT if resource_type.id == "User" else _GROUP_NOT_KEPT
    return _not_kept_dropped(body, not_kept)


def _not_kept_dropped(body: bytes, not_kept: _NotKept) -> bytes:
    """`body` without what RFC 7643 defines that the portal does not keep: of a resource,
    those attributes and sub-attributes and the enterprise extension; of a PATCH, the
    operations on them, and those keys of a path-less operation's value. Unchanged if
    there is nothing to drop, or if it is not JSON (the validation then says so)."""
    try:
        payload = json.loads(body)
    except ValueError:
        return body
    if not isinstance(payload, dict):
        return body
    schemas = [str(urn).lower() for urn in payload.get("schemas") or [] if isinstance(urn, str)]
    if _PATCH_URN in schemas:
        operations = payload.get("Operations")
        if not isinstance(operations, list):
            return body
        kept = [op for op in (_operation_kept(op, not_kept) for op in operations) if op]
        # Every operation on what is not kept: nothing changes (a PATCH needs one).
        changed = {**payload, "Operations": kept or [{"op": "add", "value": {}}]}
    else:
        changed = _resource_kept(payload, not_kept)
    return body if changed == payload else json.dumps(changed).encode()


def _resource_kept(values: dict[str, Any], not_kept: _NotKept) -> dict[str, Any]:
    kept: dict[str, Any] = {}
    for key, value in values.items():
        name = str(key).lower()
        if name.startswith(_ENTERPRISE):  # the extension, or one of its attributes
            continue
        name = name.removeprefix(f"{not_kept.core}:")
        if name in not_kept.dropped:
            continue
        dotted = name.split(".", 1)
        if len(dotted) == 2 and dotted[1] not in not_kept.subs.get(dotted[0], {dotted[1]}):
            continue  # a path-less PATCH's dotted key (`name.middleName`)
        if name in not_kept.subs:
            value = _sub_kept(not_kept.subs[name], value)
        kept[key] = value
    return kept


def _sub_kept(subs: frozenset[str], value: Any) -> Any:
    def one(item: Any) -> Any:
        if not isinstance(item, dict):
            return item
        return {k: v for k, v in item.items() if str(k).lower() in subs}

    return [one(item) for item in value] if isinstance(value, list) else one(value)


def _operation_kept(operation: Any, not_kept: _NotKept) -> Any:
    """The operation as the portal applies it, or None when it is only about what the
    portal does not keep."""
    if not isinstance(operation, dict):
        return operation
    path = operation.get("path")
    if isinstance(path, str) and path:
        lowered = path.lower()
        if lowered.startswith(_ENTERPRISE):
            return None
        first = re.split(r"[.\[]", lowered.removeprefix(f"{not_kept.core}:"), maxsplit=1)[0]
        if first in not_kept.dropped:
            return None
        sub = lowered.split(".", 1)[1] if "." in lowered and "[" not in lowered else None
        subs = not_kept.subs.get(first)
        if subs is not None and sub is not None and sub not in subs:
            return None
        if subs is not None and sub is None and "value" in operation and "[" not in lowered:
            return {**operation, "value": _sub_kept(subs, operation["value"])}
        return operation
    value = operation.get("value")
    if isinstance(value, dict):
        return {**operation, "value": _resource_kept(value, not_kept)}
    return operation
