"""The portal's URLs: sign-in, the admin, the alerts preferences, SCIM provisioning, and
the fleet pages at the root. Names are namespaced by app (`fleet:vehicle`), and templates
and tests reverse them: a path changes here alone."""

from __future__ import annotations

from django.contrib import admin
from django.urls import include, path
from django.utils.translation import gettext_lazy as _

from signin import views as signin_views

admin.site.site_header = _("Fleet Portal administration")
admin.site.site_title = _("Fleet Portal")

urlpatterns = [
    path("accounts/", include("signin.urls")),
    # The admin's own login and logout would bypass LOCAL_LOGIN and the provider's sign-out.
    path("admin/login/", signin_views.admin_login),
    path("admin/logout/", signin_views.logout),
    path("admin/", admin.site.urls),
    path("account/alerts/", include("alerts.urls")),
    path("scim/v2/", include("signin.scim.urls")),
    path("", include("fleet.urls")),
]

handler500 = "portal.errors.server_error"
