"""Driver indications, `POST /v2/driver-indications`: shapes assumed, rules of the emulator.

The spec names the route (4.6) and shows nothing else of it. The emulator assumes
(README): a JSON request `{"carPlate", "autoInfracao", "driver": {"name", "cpf"?,
"cnh"?}, "indicatedOn": "YYYY-MM-DD"}`, answered 201 `{"indicationId",
"status": "received"}`; a refusal is 422 `indication-refused` with a `detail`
saying why. Refused, in this order:

- a plate that is not a vehicle of the fleet;
- the notice number `DEADLINE_PASSED_NOTICE`: its deadline to indicate has passed;
- an `indicatedOn` after the emulator's today;
- the driver's CPF `SUSPENDED_CPF`: the driver's licence is suspended.

Faults (`/_emulator/faults`) play 429, slow answers and 504 on this route as on any.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from datetime import date

from emulator import cnh

DEADLINE_PASSED_NOTICE = "PRAZO-VENCIDO"
SUSPENDED_CPF = cnh.SUSPENDED_CPF  # 422.422.422-45: its licence is suspended


class Invalid(Exception):
    """The request is not the assumed shape: 400, the message says what to fix."""


class Refused(Exception):
    """The platform refuses the indication: 422, the message is its reason."""


def received(
    body: Mapping[str, object], *, plate_known: Callable[[str], bool], today: date
) -> dict[str, object]:
    """The answer to an indication `body`; `Invalid` or `Refused` when it is not received."""
    plate, notice, driver = body.get("carPlate"), body.get("autoInfracao"), body.get("driver")
    if not isinstance(plate, str) or not plate.strip():
        raise Invalid("Envie a placa do veículo em carPlate.")
    if not isinstance(notice, str) or not notice.strip():
        raise Invalid("Envie o número do auto de infração em autoInfracao.")
    if not isinstance(driver, dict) or not isinstance(driver.get("name"), str):
        raise Invalid("Envie o condutor em driver, com o nome em driver.name.")
    cpf, licence = driver.get("cpf"), driver.get("cnh")
    if cpf is not None and (not isinstance(cpf, str) or not cnh.is_cpf(cpf)):
        raise Invalid("driver.cpf não é um CPF válido.")
    if licence is not None and not isinstance(licence, str):
        raise Invalid("driver.cnh deve ser texto.")
    try:
        indicated_on = date.fromisoformat(str(body.get("indicatedOn")))
    except ValueError:
        raise Invalid("Envie a data da indicação em indicatedOn (AAAA-MM-DD).") from None
    if not plate_known(plate):
        raise Refused("Veículo não encontrado na frota.")
    if notice.strip() == DEADLINE_PASSED_NOTICE:
        raise Refused("O prazo para indicar o condutor desta infração terminou.")
    if indicated_on > today:
        raise Refused("A data da indicação não pode ser futura.")
    if cpf is not None and cnh.normalize(cpf) == SUSPENDED_CPF:
        raise Refused("A CNH do condutor indicado está suspensa.")
    return {"indicationId": str(uuid.uuid4()), "status": "received"}
