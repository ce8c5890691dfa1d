"""The portal's views, one module per area."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.http import HttpRequest
from django_htmx.middleware import HtmxDetails


class AuthenticatedRequest(HttpRequest):
    """The request a `login_required` view receives (with django-htmx's details)."""

    user: User
    htmx: HtmxDetails
