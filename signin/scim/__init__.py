"""Provisioning from the directory: a SCIM 2.0 service provider (RFC 7643/7644) at
/scim/v2/, through which each identity provider creates, changes and deactivates the
portal users it signs in, and pushes their groups.

The protocol is scim2-server's with scim2-models' resources (parsing, validation,
filters, PATCH, discovery, error bodies); the portal writes the storage over its own
models (`signin.scim.storage`). django-scim2, the other well-kept choice, declares
Django < 6.1 and would pull the portal back a version; scim2-server keeps no state of
its own and asks nothing of the web framework, and scim2-tester, the conformance
checker, comes from the same authors.
"""
