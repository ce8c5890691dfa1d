"""What the admin calls a record (its breadcrumbs, titles, lists and messages):
local time and the reader's language, never UTC and raw values."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.utils import translation

from fleet.models import (
    AccessKeyMint,
    CnhLookup,
    CnhLookupKind,
    DeliveryStatus,
    MintOutcome,
    MintPurpose,
    WebhookDelivery,
)

pytestmark = pytest.mark.django_db

# 17:36 in UTC is 14:36 in São Paulo (TIME_ZONE), which has no daylight saving time.
MOMENT = datetime(2026, 11, 24, 17, 36, 56, tzinfo=UTC)


def test_a_webhook_delivery_is_named_by_number_local_time_and_status():
    delivery = WebhookDelivery.objects.create(
        received_at=MOMENT, body=b"{", body_size=1, body_sha256="", status=DeliveryStatus.INVALID
    )

    with translation.override("pt-br"):
        assert str(delivery) == f"#{delivery.pk} · 24/11/2026 14:36 · guardada: inválida"
    with translation.override("en"):
        assert str(delivery) == f"#{delivery.pk} · 24/11/2026 14:36 · kept: invalid"


def test_an_access_key_mint_is_named_by_local_time_user_and_outcome(django_user_model):
    user = django_user_model.objects.create_user("marcos")
    mint = AccessKeyMint.objects.create(
        user=user, purpose=MintPurpose.EMBED, outcome=MintOutcome.LOGIN_REJECTED
    )
    AccessKeyMint.objects.filter(pk=mint.pk).update(created_at=MOMENT)
    mint.refresh_from_db()

    with translation.override("pt-br"):
        assert str(mint) == "24/11/2026 14:36 · marcos · login da frota recusado"


def test_a_cnh_lookup_is_named_in_the_readers_language(django_user_model):
    lookup = CnhLookup.objects.create(
        owner=django_user_model.objects.create_user("marcos"), kind=CnhLookupKind.BATCH
    )

    with translation.override("pt-br"):
        assert str(lookup) == f"Consulta de CNH {lookup.pk} (em lote, na fila)"
    with translation.override("en"):
        assert str(lookup) == f"CNH lookup {lookup.pk} (batch, queued)"
