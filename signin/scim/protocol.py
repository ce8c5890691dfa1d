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
from functools import cache
from typing import Any

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
_MANAGER = "urn:ietf:params:scim:schemas:extension:enterprise:2.0:user:manager"


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
        on every group it creates). An unknown attribute is still refused."""
        return super().read_body(model, _empty_schemas_dropped(model, body), content_type, scim_ctx)

    def apply_patch(
        self, current: Resource[Any], patch_op: PatchOp[Any], conditions: Conditions
    ) -> Resource[Any] | None:
        """Entra names each member it removes with `"$ref": null` beside its value: a
        null is no value (RFC 7643 §2.5), not one the member must have. Its default
        mapping sends a user's manager as the bare id (`"value": "<id>"`), not the
        complex attribute the enterprise extension defines (`{"value": "<id>"}`)."""
        for operation in patch_op.operations or []:
            if operation.op == PatchOperation.Op.remove and isinstance(operation.value, list):
                operation.value = [
                    {key: item for key, item in entry.items() if item is not None}
                    if isinstance(entry, dict)
                    else entry
                    for entry in operation.value
                ]
            elif str(operation.path or "").lower() == _MANAGER and isinstance(operation.value, str):
                operation.value = {"value": operation.value}
            elif operation.path is None and isinstance(operation.value, dict):
                operation.value = {
                    key: {"value": item}
                    if str(key).lower() == _MANAGER and isinstance(item, str)
                    else item
                    for key, item in operation.value.items()
                }
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
    provider = ScimProvider.from_discovery(
        load_default_schemas().values(),
        load_default_resource_types().values(),
        config=config,
        policy=policy,
    )
    return PortalScimService(provider)


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
