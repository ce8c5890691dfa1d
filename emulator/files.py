"""`GET /files/crlv/<token>.pdf`: the pre-signed e-CRLV download links.

No credentials: the link itself is the permission, for one hour of the
emulator's clock after it was minted (spec 2.4 and 8); after that, 410 Gone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from emulator.clock import isoformat
from emulator.messages import Request, Response, text_response
from emulator.pdf import text_pdf
from emulator.routing import split_path

if TYPE_CHECKING:
    from emulator.state import Emulator

PDF = "application/pdf"


def handle(emulator: Emulator, request: Request) -> Response:
    if request.method != "GET":
        response = text_response(405, "Use GET.")
        response.headers.append(("Allow", "GET"))
        return response
    segments = split_path(request.path)
    name = segments[2] if len(segments) == 3 and segments[:2] == ("files", "crlv") else ""
    download = emulator.crlv.download(name.removesuffix(".pdf")) if name.endswith(".pdf") else None
    if download is None:
        return text_response(404, "Arquivo não encontrado.")
    if emulator.clock.now() >= download.expires_at:
        return text_response(410, "Este link de download expirou. Peça o status de novo.")
    vehicle = emulator.fleet.find(download.plate)
    lines = [
        f"Placa: {download.plate}",
        f"Modelo: {vehicle.model} ({vehicle.year})" if vehicle else "",
        f"RENAVAM: {vehicle.renavam}" if vehicle else "",
        f"Solicitação: {download.request_id}",
        f"Link válido até {isoformat(download.expires_at)}",
        "Documento fictício gerado pelo emulador da Fleet API.",
    ]
    body = text_pdf("CRLV-e", [line for line in lines if line])
    filename = f"crlv-{download.plate}.pdf"
    return Response(
        200,
        body,
        PDF,
        [
            ("Content-Disposition", f'inline; filename="{filename}"'),
            ("Cache-Control", "private, no-store"),
        ],
    )
