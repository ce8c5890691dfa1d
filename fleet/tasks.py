"""The portal's background tasks (`django.tasks`), run by `manage.py db_worker`.

A task carries ids only, never personal data: its arguments are stored in
the task table and shown by the admin.
"""

from __future__ import annotations

from django.tasks import task

from fleet.services.cnh import cnh_lookup_process
from fleet.services.webhooks import deliveries_process_received


@task()
def cnh_lookup_run(lookup_id: int) -> str:
    """One attempt of a CNH lookup; it enqueues its own retry when the API asks for one."""
    return cnh_lookup_process(lookup_id=lookup_id)


@task()
def webhook_deliveries_process() -> dict[str, int]:
    """Process the webhook deliveries still `received`, in batches (it asks for its own sequel)."""
    return dict(deliveries_process_received())
