"""Template filters for CPFs: masked everywhere, in full only where its owner reads it."""

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
    """`123.456.789-09`: only on a lookup's own page, for its owner or staff."""
    return cpf.display(str(value))
