"""URLs of provisioning: everything under /scim/v2/ goes to the one SCIM endpoint."""

from __future__ import annotations

from django.urls import re_path

from signin.scim import views

app_name = "scim"
urlpatterns = [re_path(r"^(?P<path>.*)$", views.endpoint, name="endpoint")]
