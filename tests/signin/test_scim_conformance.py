"""scim2-tester, the python-scim project's conformance checker, against the live portal: a
real HTTP server on loopback, one provider's bearer token, every check it has for the
discovery endpoints, Users and Groups. Each check passes, or is listed below with why the
portal answers otherwise; a listed check that passes, or is no longer run, fails the test
too, so that the list (and the README's) stays true."""

from __future__ import annotations

from collections import Counter
from importlib.metadata import version
from typing import Any

import pytest
from httpx2 import Client
from scim2_client.engines.httpx2 import SyncSCIMClient
from scim2_tester import CheckResult, Status, check_server

from signin.scim.tokens import scim_token_mint

# The portal advertises (`/Schemas`, `/ResourceTypes`) what it keeps and returns: of a
# user, userName, externalId, name.givenName and name.familyName, one e-mail (its value,
# type and primary, as pushed), active and groups; of a group, displayName, externalId and
# members; no enterprise extension. What RFC 7643 defines beyond that, as Entra and Okta
# send it, is accepted and dropped (`signin.scim.protocol`), never advertised, so
# scim2-tester checks only the advertised contract, and finds nothing else.
UNSUPPORTED: dict[tuple[str, str, str], str] = {}
# Checks scim2-tester itself skips, and why.
SKIPPED: dict[tuple[str, str, str], str] = {
    (kind, "search_with_attributes", ""): (
        "POST /.search at the root (every resource type at once) answers 501 Not "
        "Implemented; each resource type is searched on its own"
    )
    for kind in ("User", "Group")
}
# The checks that must have run: a newer scim2-tester may add some, never lose these.
DISCOVERY_CHECKS = {
    "service_provider_config_endpoint",
    "service_provider_config_endpoint_methods",
    "query_all_resource_types",
    "query_resource_type_by_id",
    "resource_types_schema_validation",
    "access_invalid_resource_type",
    "resource_types_endpoint_methods",
    "query_all_schemas",
    "access_schema_by_id",
    "access_invalid_schema",
    "schemas_endpoint_methods",
    "random_url",
}
RESOURCE_CHECKS = {
    "object_creation",
    "object_query",
    "object_query_without_id",
    "object_query_with_attributes",
    "object_list_with_attributes",
    "search_with_attributes",
    "object_replacement",
    "object_deletion",
    "check_add_attribute",
    "check_remove_attribute",
    "check_replace_attribute",
}
PASSED = {Status.SUCCESS, Status.COMPLIANT, Status.ACCEPTABLE}


def key(result: CheckResult) -> tuple[str, str, str]:
    """Which check a result is: its resource type, its name and, for PATCH, the path."""
    path = result.data.get("urn", "") if isinstance(result.data, dict) else ""
    return (result.resource_type or "", result.title or "", str(path))


def described(results: list[CheckResult]) -> str:
    """The results, one a line, with scim2-tester's reason."""
    return "\n".join(f"  {key(result)}: {result.reason}" for result in results)


@pytest.mark.timeout(300)
def test_scim2_tester_passes_every_check_the_portal_supports(live_server, providers, settings):
    settings.FLEET_ENVIRONMENT = "emulator"  # plain http on loopback; HTTPS elsewhere
    settings.SCIM_REQUESTS_PER_MINUTE = 100_000  # a few hundred requests in a minute
    token = scim_token_mint(provider="acme", created_by="scim2-tester")
    with Client(
        base_url=f"{live_server.url}/scim/v2",
        headers={"Authorization": f"Bearer {token}"},
        timeout=30,
    ) as http:
        client = SyncSCIMClient(http)
        results = check_server(client)

    failed = [result for result in results if result.status not in PASSED | {Status.SKIPPED}]
    skipped = [result for result in results if result.status is Status.SKIPPED]
    new_failures = [result for result in failed if key(result) not in UNSUPPORTED]
    assert not new_failures, (
        f"checks that fail, not listed as unsupported:\n{described(new_failures)}"
    )
    now_passing = set(UNSUPPORTED) - {key(result) for result in failed}
    assert not now_passing, f"listed as unsupported, but passed or not run: {sorted(now_passing)}"
    assert {key(result) for result in skipped} == set(SKIPPED), described(skipped)

    ran = {(result.resource_type or "", result.title) for result in results}
    for kind, checks in (
        ("", DISCOVERY_CHECKS),
        ("User", RESOURCE_CHECKS),
        ("Group", RESOURCE_CHECKS),
    ):
        assert {(kind, check) for check in checks} <= ran
    assert {result.resource_type for result in results} == {None, "User", "Group"}
    config: Any = client.provider.config
    assert config.patch.supported
    assert config.filter.supported
    assert not any(
        feature.supported
        for feature in (config.bulk, config.sort, config.etag, config.change_password)
    )

    statuses = Counter(result.status for result in results)
    passed = sum(statuses[status] for status in PASSED)
    print(
        f"\nscim2-tester {version('scim2-tester')} against {live_server.url}/scim/v2: "
        f"{len(results)} results, {passed} passed, {len(skipped)} skipped by scim2-tester, "
        f"{len(failed)} unsupported (listed, each with its reason)"
    )
    for listed, what in ((SKIPPED, "skipped"), (UNSUPPORTED, "unsupported")):
        by_reason: dict[str, list[str]] = {}
        for (kind, check, path), reason in sorted(listed.items()):
            by_reason.setdefault(reason, []).append(" ".join(filter(None, (kind, check, path))))
        for reason, names in by_reason.items():
            print(f"- {what} ({len(names)}): {reason}.\n    " + "\n    ".join(names))
