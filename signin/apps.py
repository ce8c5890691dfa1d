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
        # The portal records each sign-in itself (`session_record`, every way of signing
        # in, the portal's client address): allauth's own receiver would record allauth's
        # sign-ins a second time, and refuse one whose address it cannot read.
        from allauth.account.signals import user_logged_in as allauth_logged_in
        from allauth.usersessions.signals import on_user_logged_in

        allauth_logged_in.disconnect(receiver=on_user_logged_in)
        user_logged_in.connect(access_granted_send, dispatch_uid="signin.access_granted")
        user_logged_in.connect(local_sign_in_count, dispatch_uid="signin.metrics")
        user_login_failed.connect(local_sign_in_failure_count, dispatch_uid="signin.metrics")
        checks.register(providers_let_someone_in)

        from portal.lib.identity import identity_providers_set
        from signin.providers import provider_choices

        identity_providers_set(provider_choices)
