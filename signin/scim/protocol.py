"""The SCIM service the portal announces: RFC 7643's User (with the enterprise extension,
whose values are accepted and not kept) and Group, PATCH and filters, no bulk, sort or
ETag, bearer tokens; pages by index."""

from __future__ import annotations

from functools import cache
from typing import Any

from scim2_models import (
    AuthenticationScheme,
    Bulk,
    ChangePassword,
    Context,
    ETag,
    Filter,
    Patch,
    Reference,
    Resource,
    ResponseParameters,
    SCIMException,
    ScimProvider,
    ServiceProviderConfig,
    Sort,
)
from scim2_server.responses import ScimResponse
from scim2_server.service import ScimService
from scim2_server.utils import load_default_resource_types, load_default_schemas

MAX_RESULTS = 200


class TooManyRequestsException(SCIMException):
    """A token sent more requests in a minute than SCIM_REQUESTS_PER_MINUTE."""

    status = 429
    _default_detail = "Too many requests: wait a minute"


class PortalScimService(ScimService):
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
    provider = ScimProvider.from_discovery(
        load_default_schemas().values(), load_default_resource_types().values(), config=config
    )
    return PortalScimService(provider)
