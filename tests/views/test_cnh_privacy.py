"""CNH lookups and the LGPD: no full CPF in any log record, ever.

Every way a CPF can travel through the portal (forms, good and bad; single
lookups, batches, the timeout CPF with its retries and its final failure;
pages seen by the owner, by staff, by another manager) runs with every
logger at DEBUG; the records are read raw, before any filter could mask them.
Then the portal's log filter is shown to mask a CPF that someone does log.
"""

from __future__ import annotations

import logging

import pytest
import time_machine

from fleet import cpf
from fleet.models import CnhLookup
from portal.lib.redaction import RedactingFilter
from tests.conftest import Emulator, Recorder, run_tasks

pytestmark = pytest.mark.django_db(transaction=True)

TIMEOUT_CPF, NO_LICENCE_CPF = "50450450406", "00000040495"
CPFS = [TIMEOUT_CPF, NO_LICENCE_CPF, "52998224725", "11144477735", "12345678909"]
INVALID = "12345678900"  # wrong check digits: a typo of a real CPF is personal data too


def forms_of_every_cpf() -> list[str]:
    return [form for value in [*CPFS, INVALID] for form in (value, cpf.display(value))]


def everything_in(record: logging.LogRecord) -> str:
    return " ".join(
        str(part)
        for part in (record.getMessage(), record.exc_text, record.stack_info, vars(record))
    )


def test_no_log_record_of_any_logger_holds_a_full_cpf(
    client,
    manager,
    admin_user,
    django_user_model,
    emulator: Emulator,
    log_records: Recorder,
    settings,
):
    settings.FLEET_CNH_MAX_ATTEMPTS = 2
    client.force_login(manager)
    with time_machine.travel("2026-11-23 13:00Z", tick=False) as clock:
        client.post("/drivers/cnh/lookup", {"purpose": "hiring", "cpf": cpf.display(CPFS[2])})
        client.post("/drivers/cnh/lookup", {"purpose": "hiring", "cpf": TIMEOUT_CPF})
        client.post("/drivers/cnh/lookup", {"purpose": "hiring", "cpf": NO_LICENCE_CPF})
        client.post("/drivers/cnh/lookup", {"purpose": "hiring", "cpf": cpf.display(INVALID)})
        client.post(
            "/drivers/cnh/batch", {"purpose": "hiring", "cpfs": "\n".join([*CPFS, INVALID])}
        )
        client.post(
            "/drivers/cnh/batch", {"cpfs": "\n".join([*CPFS, INVALID]), "skip_invalid": "on"}
        )
        emulator.fault("/v2/cnh/lookup/batch", status=500)  # a batch that is retried
        client.post("/drivers/cnh/batch", {"purpose": "hiring", "cpfs": "\n".join(CPFS[2:])})
        run_tasks()
        clock.shift(60)
        run_tasks()
        lookups = list(CnhLookup.objects.order_by("pk"))
        statuses = {lookup.status for lookup in lookups}
        for lookup in lookups:
            client.get(f"/drivers/cnh/{lookup.public_id}/")
            client.get(
                f"/drivers/cnh/{lookup.public_id}/?poll=1000", headers={"HX-Request": "true"}
            )
            client.post(f"/drivers/cnh/{lookup.public_id}/retry")
        run_tasks()
        client.get("/drivers/cnh/")
        client.force_login(django_user_model.objects.create_user(username="outra"))
        for lookup in lookups:
            client.get(f"/drivers/cnh/{lookup.public_id}/")
        client.force_login(admin_user)
        client.get("/admin/fleet/cnhlookup/")
        client.get(f"/drivers/cnh/{lookups[0].public_id}/")

    assert statuses == {"done", "failed"}  # the scenario went where it should
    assert len(log_records.records) > 50
    leaks = [
        (record.name, value)
        for record in log_records.records
        for value in forms_of_every_cpf()
        if value in everything_in(record)
    ]
    assert leaks == []


def test_the_portal_log_handlers_mask_a_cpf_that_someone_logs(settings):
    handlers = [h for h in logging.getLogger().handlers if type(h) is logging.StreamHandler]
    try:
        raise ValueError(f"lookup of {CPFS[2]} failed")
    except ValueError:
        record = logging.LogRecord(
            "some.library",
            logging.ERROR,
            __file__,
            1,
            "body %s, person %s",
            ({"cpf": CPFS[3]}, "123.456.789-09"),
            exc_info=__import__("sys").exc_info(),
        )

    assert handlers
    for handler in handlers:
        assert any(isinstance(f, RedactingFilter) for f in handler.filters)
        handler.filter(record)
        output = handler.format(record)
        assert "***.444.777-**" in output
        assert "***.456.789-**" in output
        assert "***.982.247-**" in output  # in the traceback
        for value in (CPFS[2], CPFS[3], "123.456.789-09", "12345678909"):
            assert value not in output
