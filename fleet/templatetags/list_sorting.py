"""Sortable column headers of the portal's lists: a link that sets `sort`, with
`aria-sort` on the header the list is sorted by.

A header's link loads the page (no htmx swap): the filter form's own "Sort by" drop-down,
kept for the phone, then shows the same order as the rows.
"""

from __future__ import annotations

from html import escape

from django import template
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext

register = template.Library()


@register.simple_tag(takes_context=True)
def sort_header(
    context: template.Context, key: str, label: str, *, first: str = "", css: str = ""
) -> SafeString:
    """A `<th>` for the column sorted by `key`: its link sorts by it (`first`: "-" when the
    first click sorts descending), then the other way; `filters["sort"]` is the list's
    order, `sort_query` its other filters as a query string."""
    current = context["filters"]["sort"]
    descending = f"-{key}"
    if current in (key, descending):
        target = key if current == descending else descending
    else:
        target = f"{first}{key}"
    query = context["sort_query"]
    href = escape(f"?{query}&sort={target}" if query else f"?sort={target}")
    state, arrow = "", ""
    if current == key:
        state, arrow = "ascending", "▲"
    elif current == descending:
        state, arrow = "descending", "▼"
    shown = f' <span aria-hidden="true">{arrow}</span>' if arrow else ""
    sorted_ = f' aria-sort="{state}"' if state else ""
    title = gettext("Sort by this column") if not state else gettext("Sort the other way")
    classes = f' class="{escape(css)}"' if css else ""
    return mark_safe(  # noqa: S308 -- every value is escaped above
        f'<th scope="col"{classes}{sorted_}><a href="{href}" title="{escape(title)}" '
        f'data-testid="sort-{escape(key)}">{escape(label)}</a>{shown}</th>'
    )
