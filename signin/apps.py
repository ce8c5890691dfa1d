from __future__ import annotations

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class SigninConfig(AppConfig):
    name = "signin"
    verbose_name = _("Sign-in")

    def ready(self) -> None:
        from django.contrib.auth.signals import user_logged_in, user_login_failed
        from django.core import checks

        from signin import sessions
        from signin.audit import local_sign_in_count, local_sign_in_failure_count
        from signin.checks import providers_let_someone_in
        from signin.signals import access_granted_send

        user_logged_in.connect(sessions.session_start, dispatch_uid="signin.sessions")
        user_logged_in.connect(sessions.session_record, dispatch_uid="signin.sessions.record")
        user_logged_in.connect(access_granted_send, dispatch_uid="signin.access_granted")
        user_logged_in.connect(local_sign_in_count, dispatch_uid="signin.metrics")
        user_login_failed.connect(local_sign_in_failure_count, dispatch_uid="signin.metrics")
        checks.register(providers_let_someone_in)
