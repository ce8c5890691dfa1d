"""Template filters for CPFs: masked everywhere, in full only for users allowed to see them."""

from __future__ import annotations

from django import template

from fleet import cpf

register = template.Library()


@register.filter
def cpf_masked(value: str) -> str:
    """`***.456.789-**`: how lists and histories show a CPF."""
    return cpf.mask(str(value))


@register.filter
def cpf_full(value: str) -> str:
    """`123.456.789-09`: only for users with `fleet.view_full_cpf`, and recorded."""
    return cpf.display(str(value))
