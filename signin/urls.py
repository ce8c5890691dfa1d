"""URLs of sign-in: /accounts/… (the login page, sign-out, the providers' flows)."""

from __future__ import annotations

from django.urls import include, path

from signin import views

urlpatterns = [
    path("login/", views.LoginView.as_view(), name="login"),
    path("logout/", views.logout, name="logout"),
    path("signed-out/", views.signed_out, name="signed_out"),
    path("", include("signin.oidc.urls")),
]
