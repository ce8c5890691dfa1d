from __future__ import annotations

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class SigninConfig(AppConfig):
    name = "signin"
    verbose_name = _("Sign-in")

    def ready(self) -> None:
        from django.contrib.auth.signals import user_logged_in
        from django.core import checks

        from signin import sessions
        from signin.checks import providers_let_someone_in

        user_logged_in.connect(sessions.session_start, dispatch_uid="signin.sessions")
        checks.register(providers_let_someone_in)
