"""URL configuration of Fleet Portal (the URL contract is in the README)."""

from __future__ import annotations

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from django.utils.translation import gettext_lazy as _

admin.site.site_header = _("Fleet Portal administration")
admin.site.site_title = _("Fleet Portal")

urlpatterns = [
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("", include("fleet.urls")),
]
