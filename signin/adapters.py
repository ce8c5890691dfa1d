"""django-allauth's hooks, as the portal needs them.

The social account adapter admits or refuses each person an identity provider
vouches for (signin.admission), and turns every failed answer into a page in
the person's language and a line in the audit trail; a refusal that ends a
portal user's access is signalled (`portal.lib.identity`). The account adapter
closes allauth's own sign-up, gives an admitted person the vehicle groups of their
provider's groups, and records a completed sign-in.
"""

from __future__ import annotations

from typing import Any

from allauth.account.adapter import DefaultAccountAdapter
from allauth.core.exceptions import ImmediateHttpResponse
from allauth.socialaccount.adapter import DefaultSocialAccountAdapter
from allauth.socialaccount.models import SocialLogin
from allauth.socialaccount.providers.base import Provider
from allauth.socialaccount.providers.base.constants import AuthError
from django.contrib.auth.models import AbstractBaseUser, User
from django.http import HttpRequest, HttpResponse
from requests import RequestException

from portal.lib.identity import access_refused
from signin import admission, sessions, views
from signin.audit import sso_attempt_record
from signin.models import SsoOutcome
from signin.providers import provider_origin
from signin.signals import ACCESS_ENDED


class SocialAccountAdapter(DefaultSocialAccountAdapter):
    def is_open_for_signup(self, request: HttpRequest, sociallogin: SocialLogin) -> bool:
        return True  # who may get an account is decided in pre_social_login

    def is_auto_signup_allowed(self, request: HttpRequest, sociallogin: SocialLogin) -> bool:
        return True

    def pre_social_login(self, request: HttpRequest, sociallogin: SocialLogin) -> None:
        try:
            admission.sso_login_admit(request=request, sociallogin=sociallogin)
        except admission.Refused as refusal:
            sessions.forget_id_token(request)
            claims = sociallogin.account.extra_data.get("id_token") or {}
            sso_attempt_record(
                request=request,
                provider=sociallogin.account.provider,
                outcome=refusal.outcome,
                subject=str(claims.get("sub") or ""),
                email=str(claims.get("email") or ""),
                user=sociallogin.user if sociallogin.is_existing else None,
                detail=refusal.detail,
            )
            if sociallogin.is_existing and refusal.outcome in ACCESS_ENDED:
                access_refused.send(
                    sender=type(self),
                    user=sociallogin.user,
                    outcome=refusal.outcome,
                    provider=sociallogin.account.provider,
                )
            raise ImmediateHttpResponse(
                views.refused(request, provider=sociallogin.account.get_provider(), refusal=refusal)
            ) from None

    def on_authentication_error(
        self,
        request: HttpRequest,
        provider: Provider,
        error: str | None = None,
        exception: BaseException | None = None,
        extra_context: dict[str, Any] | None = None,
    ) -> None:
        sessions.forget_id_token(request)
        if error == AuthError.CANCELLED:
            outcome = SsoOutcome.CANCELLED
        elif isinstance(exception, RequestException):
            outcome = SsoOutcome.UNAVAILABLE
        else:
            outcome = SsoOutcome.BAD_ANSWER
        sso_attempt_record(
            request=request,
            provider=provider.sub_id,
            outcome=outcome,
            detail=_describe(error, exception),
        )
        raise ImmediateHttpResponse(
            views.provider_problem(request, provider=provider, outcome=outcome)
        )


class AccountAdapter(DefaultAccountAdapter):
    def is_open_for_signup(self, request: HttpRequest) -> bool:
        return False  # portal users come from the identity provider or the admin

    def pre_login(
        self, request: HttpRequest, user: AbstractBaseUser, **kwargs: Any
    ) -> HttpResponse | None:
        """The user is saved by now; its vehicle groups are set before the session starts,
        so that the sign-in's receivers and the first page see them."""
        response: HttpResponse | None = super().pre_login(request, user, **kwargs)
        sociallogin: SocialLogin | None = (kwargs.get("signal_kwargs") or {}).get("sociallogin")
        if response is None and sociallogin is not None and isinstance(user, User):
            admission.vehicle_groups_apply(user=user, sociallogin=sociallogin)
        return response

    def add_message(self, *args: Any, **kwargs: Any) -> None:
        """allauth's "Successfully signed in as …": the portal says nothing on sign-in."""

    def post_login(
        self, request: HttpRequest, user: AbstractBaseUser, **kwargs: Any
    ) -> HttpResponse | None:
        sociallogin: SocialLogin | None = (kwargs.get("signal_kwargs") or {}).get("sociallogin")
        if sociallogin is not None:
            provider = sociallogin.account.get_provider()
            sessions.remember_provider(request, provider.sub_id, provider_origin(provider))
            claims = sociallogin.account.extra_data.get("id_token") or {}
            sso_attempt_record(
                request=request,
                provider=sociallogin.account.provider,
                outcome=SsoOutcome(sociallogin.state.get(admission.OUTCOME, SsoOutcome.SIGNED_IN)),
                subject=str(claims.get("sub") or ""),
                email=getattr(user, "email", ""),
                user=user if isinstance(user, User) else None,
                role=str(sociallogin.state.get(admission.ROLE, "")),
            )
        response: HttpResponse | None = super().post_login(request, user, **kwargs)
        return response

    def respond_user_inactive(self, request: HttpRequest, user: AbstractBaseUser) -> HttpResponse:
        refusal = admission.Refused(SsoOutcome.DEACTIVATED)
        return views.refused(request, provider=None, refusal=refusal)


def _describe(error: str | None, exception: BaseException | None) -> str:
    """What went wrong, for the audit: the error's kind and the library's words, no values."""
    if exception is None:
        return f"allauth error: {error or 'unknown'} (state missing, expired or tampered)"
    cause = exception.__cause__
    text = f"{type(exception).__name__}: {exception}"
    if cause is not None:
        text += f" ({type(cause).__name__}: {cause})"
    return text
