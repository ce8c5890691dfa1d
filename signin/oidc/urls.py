"""allauth's URLs of the OpenID Connect provider, bound to this package's views."""

from __future__ import annotations

from django.urls import include, path

from signin.oidc import views

urlpatterns = [
    path(
        "oidc/<str:provider_id>/",
        include(
            [
                path("login/", views.login, name="openid_connect_login"),
                path("login/callback/", views.callback, name="openid_connect_callback"),
            ]
        ),
    )
]
