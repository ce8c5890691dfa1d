"""Forms of the portal's own pages."""

from __future__ import annotations

from django import forms
from django.utils.translation import gettext_lazy as _

from fleet.models import MintOutcome
from fleet.services.sso import MintFailed


class FleetAccountForm(forms.Form):
    email = forms.EmailField(
        label=_("Fleet login e-mail"),
        widget=forms.EmailInput(attrs={"autocomplete": "username"}),
    )
    password = forms.CharField(
        label=_("Fleet password"),
        strip=False,
        # Never sent back to the browser, not even after a failed check.
        widget=forms.PasswordInput(attrs={"autocomplete": "current-password"}, render_value=False),
        help_text=_(
            "Checked with the fleet application before it is saved, then stored encrypted."
        ),
    )

    def add_failure(self, failure: MintFailed) -> None:
        """Explain why the fleet login could not be checked."""
        if failure.outcome == MintOutcome.LOGIN_REJECTED:
            self.add_error(
                "password",
                _(
                    "The fleet application refused this e-mail or password. "
                    "Check them and try again."
                ),
            )
        elif failure.outcome == MintOutcome.RATE_LIMITED:
            self.add_error(
                None,
                _("The fleet service is busy. Try again in %(seconds)s s.")
                % {"seconds": round(failure.retry_after or 30)},
            )
        elif failure.outcome == MintOutcome.UNAVAILABLE:
            self.add_error(
                None, _("The fleet service did not answer. Nothing was saved; try again.")
            )
        elif failure.outcome == MintOutcome.PERMISSION_DENIED:
            self.add_error(
                None,
                _(
                    "The portal's fleet account has no permission for this company. "
                    "Ask your fleet administrator."
                ),
            )
        else:
            self.add_error(
                None,
                _(
                    "The portal could not check your fleet login (%(reason)s). "
                    "Nothing was saved; an administrator has the details."
                )
                % {"reason": failure.outcome.label},
            )
