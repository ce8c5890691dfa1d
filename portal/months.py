"""Month names as Brazilian Portuguese writes them in a date: in lower case.

Django's own Portuguese catalogue capitalises them ("23 de Novembro de 2026"),
so every `DATE_FORMAT` and `DATETIME_FORMAT` date read wrong to a Brazilian
reader. The month names Django translates (`django.utils.dates.MONTHS`, the
`F` of a date format) are named here so that `make messages` keeps them in
our catalogue, whose translations come before Django's (`LOCALE_PATHS`):
"23 de novembro de 2026".
"""

from __future__ import annotations

from django.utils.translation import gettext_noop

MONTHS = (
    gettext_noop("January"),
    gettext_noop("February"),
    gettext_noop("March"),
    gettext_noop("April"),
    gettext_noop("May"),
    gettext_noop("June"),
    gettext_noop("July"),
    gettext_noop("August"),
    gettext_noop("September"),
    gettext_noop("October"),
    gettext_noop("November"),
    gettext_noop("December"),
)
