"""A company's system receiving the portal's webhooks: a real HTTP server on loopback that
verifies each POST as the Standard Webhooks specification says, written here from the
specification and sharing no code with the portal's signing (alerts/signing.py).

Verification: the secret is `whsec_` + base64 of the key; the signed content is
`{webhook-id}.{webhook-timestamp}.{body}`; `webhook-signature` holds space-separated
`v1,<base64 HMAC-SHA256>` entries, one of which must match (constant-time compare);
the timestamp must be within five minutes of the receiver's clock; a `webhook-id`
already accepted is a replay.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

TOLERANCE_S = 5 * 60


@dataclass
class Delivery:
    headers: dict[str, str]
    body: bytes
    verdict: str  # "accepted", or why it was rejected

    @property
    def payload(self) -> Any:
        return json.loads(self.body)


@dataclass
class Receiver:
    secret: str = ""
    failures_to_answer: list[int] = field(default_factory=list)  # statuses for the next POSTs
    clock_offset_s: float = 0.0
    deliveries: list[Delivery] = field(default_factory=list)
    seen_ids: set[str] = field(default_factory=set)
    url: str = ""

    def verify(self, headers: dict[str, str], body: bytes) -> str:
        message_id = headers.get("webhook-id", "")
        timestamp = headers.get("webhook-timestamp", "")
        signatures = headers.get("webhook-signature", "")
        if not (message_id and timestamp.isdigit() and signatures):
            return "missing headers"
        if abs(time.time() + self.clock_offset_s - int(timestamp)) > TOLERANCE_S:
            return "timestamp too old or too new"
        key = base64.b64decode(self.secret.removeprefix("whsec_"))
        expected = base64.b64encode(
            hmac.new(key, f"{message_id}.{timestamp}.".encode() + body, hashlib.sha256).digest()
        ).decode()
        given = [entry.partition(",") for entry in signatures.split(" ")]
        if not any(
            version == "v1" and hmac.compare_digest(value, expected) for version, _, value in given
        ):
            return "bad signature"
        if message_id in self.seen_ids:
            return "replay"
        return "accepted"

    def handle(self, headers: dict[str, str], body: bytes) -> int:
        verdict = self.verify(headers, body)
        self.deliveries.append(Delivery(headers, body, verdict))
        if verdict != "accepted":
            return 400
        if self.failures_to_answer:
            return self.failures_to_answer.pop(0)
        self.seen_ids.add(headers["webhook-id"])
        return 204

    def resend(self, delivery: Delivery, *, body: bytes | None = None) -> int:
        """Post a captured delivery again, as an attacker who saw it would."""
        import requests

        headers = {k: v for k, v in delivery.headers.items() if k.startswith("webhook-")}
        answer = requests.post(
            self.url, data=delivery.body if body is None else body, headers=headers, timeout=5
        )
        return answer.status_code

    def accepted(self) -> list[Delivery]:
        return [d for d in self.deliveries if d.verdict == "accepted"]


def serve(receiver: Receiver) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length", 0)))
            status = receiver.handle({k.lower(): v for k, v in self.headers.items()}, body)
            self.send_response(status)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    receiver.url = f"http://127.0.0.1:{server.server_address[1]}/fleet-events"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server
