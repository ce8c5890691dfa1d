"""The portal's own username and password form (break-glass administrators, the demo)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth import user_login_failed
from django.contrib.auth.forms import AuthenticationForm
from django.contrib.auth.models import User
from django.http import HttpRequest
from django.utils.translation import gettext_lazy as _

from signin.local_login import LocalLogin


class LocalLoginForm(AuthenticationForm):
    error_messages = {
        **AuthenticationForm.error_messages,
        "off": _("Sign-in with a username and password is turned off."),
    }

    def __init__(
        self,
        request: HttpRequest | None = None,
        *args: Any,
        local_login: LocalLogin = LocalLogin.ON,
        **kwargs: Any,
    ) -> None:
        super().__init__(request, *args, **kwargs)
        self.local_login = local_login

    def confirm_login_allowed(self, user: User) -> None:
        super().confirm_login_allowed(user)
        if self.local_login is LocalLogin.OFF:
            self._count_as_failure()
            raise forms.ValidationError(self.error_messages["off"], code="off")
        if self.local_login is LocalLogin.STAFF and not user.is_staff:
            # As a wrong password would be: a message of its own would tell a guesser
            # that they found a manager's password. The page says the form is for staff.
            self._count_as_failure()
            raise self.get_invalid_login_error()

    def _count_as_failure(self) -> None:
        """Count a right password refused here as django-axes counts a wrong one.

        Uncounted, the lockout would tell them apart: after the limit less one
        wrong guesses, a wrong one locks and the right one does not.
        """
        user_login_failed.send(
            sender=__name__,
            credentials={"username": self.cleaned_data.get("username", "")},
            request=self.request,
        )
