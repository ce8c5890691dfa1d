"""The admin in the operators' language, where other packages' catalogues fall short:
Django 6.1's new strings, and django-tasks-db (the background worker's queue)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from fleet.models import AccessKeyMint, MintOutcome, MintPurpose, WebhookDelivery
from fleet.tasks import webhook_deliveries_process

pytestmark = pytest.mark.django_db


def test_the_admin_index_names_the_task_queue_in_portuguese(admin_client):
    response = admin_client.get(reverse("admin:index"), headers={"Accept-Language": "pt-BR"})

    assert response.status_code == 200
    assert "Tarefas em segundo plano" in response.text
    assert "Tasks Database Backend" not in response.text
    assert "Task Results" not in response.text


def test_the_task_list_heads_its_columns_in_portuguese(admin_client):
    webhook_deliveries_process.enqueue()

    response = admin_client.get(
        reverse("admin:django_tasks_database_dbtaskresult_changelist"),
        headers={"Accept-Language": "pt-BR"},
    )

    assert response.status_code == 200
    assert "1 tarefa" in response.text
    for heading in ("Enfileirada em", "Iniciada em", "Concluída em", "Prioridade", "Fila"):
        assert heading in response.text


def test_django_6_1_strings_of_the_change_list_are_in_portuguese(admin_client):
    # The audit of accessKey mints: a list with a date hierarchy (the tables of millions
    # of rows have none) and actions.
    AccessKeyMint.objects.create(purpose=MintPurpose.EMBED, outcome=MintOutcome.MINTED)

    response = admin_client.get(
        reverse("admin:fleet_accesskeymint_changelist"), headers={"Accept-Language": "pt-BR"}
    )

    assert response.status_code == 200
    assert "Filtrar por quando" in response.text  # the date hierarchy
    WebhookDelivery.objects.create(body=b"{}", body_size=2, body_sha256="")
    response = admin_client.get(  # a list with actions
        reverse("admin:fleet_webhookdelivery_changelist"), headers={"Accept-Language": "pt-BR"}
    )
    assert "- Selecione uma opção -" in response.text  # the actions' empty choice
    assert "Filter by" not in response.text
    assert "Select an option" not in response.text
