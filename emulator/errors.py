"""The API's failures and their two wire formats (spec section 7).

Each kind of failure is described once, with its v1 code and message and its
v2 type and title; `render` picks the format from the route's version, so no
route writes an error body by hand.
"""

from __future__ import annotations

from dataclasses import dataclass
from http import HTTPStatus

from emulator.messages import PROBLEM_JSON, Call, Response, json_response

TYPE_PREFIX = "urn:fleet-api-v2:error:"


@dataclass(frozen=True, slots=True)
class Failure:
    status: int
    code: str  # v1 `code`
    message: str  # v1 `message` (Portuguese, as the spec gives them)
    name: str  # v2 `type` is TYPE_PREFIX + name
    title: str  # v2 `title`
    detail: str  # v2 `detail` unless the route says more


UNAUTHORIZED = Failure(
    401,
    "fbk_001",
    "Não autorizado",
    "unauthorized",
    "Não autorizado",
    "Envie os cabeçalhos Authorization (Basic <ACCESS_TOKEN>) e Key.",
)
# Same v1 body as UNAUTHORIZED on purpose: fbk_001 never tells the cause.
AUTHENTICATION_FAILED = Failure(
    401,
    "fbk_001",
    "Não autorizado",
    "authentication-failed",
    "Falha de autenticação",
    "Token de acesso ou assinatura HMAC inválidos.",
)
FORBIDDEN = Failure(
    403,
    "fbk_002",
    "Sem permissão",
    "forbidden",
    "Sem permissão",
    "A conta não tem permissão para acessar a empresa.",
)
BAD_REQUEST = Failure(
    400,
    "fbk_400",
    "Requisição inválida",
    "bad-request",
    "Requisição inválida",
    "A requisição não pôde ser entendida.",
)
NO_CACHE_MISSING = Failure(
    400,
    "fbk_400",
    "Cabeçalho cache-control: no-cache ausente",
    "bad-request",
    "Requisição inválida",
    "Envie o cabeçalho cache-control: no-cache.",
)
WRONG_LOGIN = Failure(
    401,
    "fbk_003",
    "E-mail ou senha inválidos",
    "authentication-failed",
    "E-mail ou senha inválidos",
    "E-mail ou senha do usuário inválidos.",
)
NOT_FOUND = Failure(
    404,
    "fbk_404",
    "Não encontrado",
    "not-found",
    "Não encontrado",
    "O recurso pedido não existe.",
)
METHOD_NOT_ALLOWED = Failure(
    405,
    "fbk_405",
    "Método não permitido",
    "method-not-allowed",
    "Método não permitido",
    "Esta rota não aceita este método.",
)
TOO_MANY_REQUESTS = Failure(
    429,
    "fbk_429",
    "Muitas requisições",
    "too-many-requests",
    "Muitas requisições",
    "Limite de requisições excedido; aguarde o tempo indicado em Retry-After.",
)
INTERNAL_ERROR = Failure(
    500,
    "fbk_500",
    "Erro interno",
    "internal-error",
    "Erro interno",
    "Erro interno do serviço.",
)
GATEWAY_TIMEOUT = Failure(
    504,
    "fbk_504",
    "Tempo de resposta esgotado",
    "gateway-timeout",
    "Tempo de resposta esgotado",
    "O serviço consultado não respondeu a tempo; tente novamente.",
)

# Assumed (the spec shows no shape for POST /v2/driver-indications): a refusal.
INDICATION_REFUSED = Failure(
    422,
    "fbk_422",
    "Indicação recusada",
    "indication-refused",
    "Indicação de condutor recusada",
    "A indicação do condutor foi recusada.",
)

_BY_STATUS = {
    failure.status: failure
    for failure in (
        BAD_REQUEST,
        UNAUTHORIZED,
        FORBIDDEN,
        NOT_FOUND,
        METHOD_NOT_ALLOWED,
        TOO_MANY_REQUESTS,
        INTERNAL_ERROR,
        GATEWAY_TIMEOUT,
    )
}


def failure_for_status(status: int) -> Failure:
    """The failure an injected fault answers with for this HTTP status."""
    if status in _BY_STATUS:
        return _BY_STATUS[status]
    phrase = HTTPStatus(status).phrase
    return Failure(
        status, f"fbk_{status}", phrase, phrase.lower().replace(" ", "-"), phrase, phrase + "."
    )


class ApiError(Exception):
    """Raised by a route to answer with a failure in its version's format."""

    def __init__(self, failure: Failure, detail: str | None = None) -> None:
        super().__init__(detail or failure.detail)
        self.failure = failure
        self.detail = detail


def render(
    failure: Failure,
    call: Call,
    *,
    detail: str | None = None,
    retry_after: int | None = None,
) -> Response:
    """The failure as a v1 `fbk_xxx` body or a v2 RFC 7807 problem."""
    headers = [] if retry_after is None else [("Retry-After", str(retry_after))]
    if call.trace_id is None:
        v1 = {"error": True, "code": failure.code, "message": detail or failure.message}
        return json_response(failure.status, v1, headers=headers)
    problem = {
        "type": TYPE_PREFIX + failure.name,
        "title": failure.title,
        "status": failure.status,
        "detail": detail or failure.detail,
        "instance": call.request.path,
        "traceId": call.trace_id,
    }
    return json_response(failure.status, problem, content_type=PROBLEM_JSON, headers=headers)
