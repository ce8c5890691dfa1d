"""django-allauth's OpenID Connect provider, held to what the portal requires of every
sign-in (see provider.py). Registered in place of allauth's own through
SOCIALACCOUNT_PROVIDERS["openid_connect"]["provider_class"]; its URLs are allauth's
(`/accounts/oidc/<provider_id>/login/` and `.../login/callback/`)."""
