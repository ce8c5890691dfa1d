"""URLs of the alerts: the page in the profile, webhook subscriptions, unsubscribing."""

from __future__ import annotations

from django.urls import path

from alerts import views

app_name = "alerts"

urlpatterns = [
    path("", views.preferences, name="preferences"),
    path("webhooks/", views.webhook_create, name="webhook_create"),
    path("webhooks/<int:subscription_id>/delete", views.webhook_delete, name="webhook_delete"),
    path("unsubscribe/<str:token>/", views.unsubscribe, name="unsubscribe"),
]
