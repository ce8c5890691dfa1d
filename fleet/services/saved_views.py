"""A user's saved views of the fines list: a name and the list's query string."""

from __future__ import annotations

from django.contrib.auth.models import User

from fleet.models import SavedFineView


def saved_fine_views(*, user: User) -> list[SavedFineView]:
    """The user's saved views of the fines list, by name."""
    return list(SavedFineView.objects.filter(user=user).order_by("name"))


def saved_fine_view_save(*, user: User, name: str, query: str) -> SavedFineView:
    """Save `query` (the list's filters) under `name`; a view of that name is replaced."""
    view, _created = SavedFineView.objects.update_or_create(
        user=user, name=name, defaults={"query": query}
    )
    return view


def saved_fine_view_delete(*, user: User, view_id: int) -> str | None:
    """Delete the user's view `view_id`; its name, or None if the user has no such view."""
    view = SavedFineView.objects.filter(user=user, pk=view_id).first()
    if view is None:
        return None
    view.delete()
    return view.name
