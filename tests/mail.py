"""A real SMTP server on loopback (aiosmtpd) that keeps what it accepts, for the alert tests.

`Mailbox.hold_message(n)` makes the n-th DATA wait, unanswered, until the test
lets it go (to kill a worker in the middle of a send); a held message is then
refused, never accepted, as a server whose client vanished before its answer.
`refuse(n)` answers the next n messages with a temporary failure.
"""

from __future__ import annotations

import asyncio
import email
import email.policy
import threading
import time
from email.message import EmailMessage
from typing import Any

from aiosmtpd.controller import Controller

from bench.servers import free_port


class Mailbox:
    """The aiosmtpd handler: what was accepted, in order."""

    def __init__(self) -> None:
        self.messages: list[EmailMessage] = []
        self.raw: list[bytes] = []  # as received: what a mail client reads, before decoding
        self.refused = 0
        self._refuse = 0
        self._hold_at: int | None = None
        self._seen = 0
        self.holding = threading.Event()
        self.release = threading.Event()
        self._lock = threading.Lock()

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        with self._lock:
            self._seen += 1
            seen = self._seen
            if self._refuse:
                self._refuse -= 1
                self.refused += 1
                return "451 4.3.0 Try again later"
        if seen == self._hold_at:
            self.holding.set()
            await asyncio.get_running_loop().run_in_executor(None, self.release.wait, 60)
            return "451 4.3.0 Not accepted"  # its client is gone: never delivered
        message = email.message_from_bytes(envelope.content, policy=email.policy.default)
        assert isinstance(message, EmailMessage)
        with self._lock:
            self.messages.append(message)
            self.raw.append(envelope.content)
        return "250 2.0.0 Accepted"

    def refuse(self, count: int) -> None:
        self._refuse = count

    def hold_message(self, number: int) -> None:
        self._hold_at = number

    def wait_for(self, count: int, *, timeout: float = 30.0) -> list[EmailMessage]:
        deadline = time.monotonic() + timeout
        while len(self.messages) < count:
            assert time.monotonic() < deadline, f"{len(self.messages)} e-mails, not {count}"
            time.sleep(0.05)
        return list(self.messages)

    def clear(self) -> None:
        with self._lock:
            self.messages.clear()


class SmtpServer:
    def __init__(self) -> None:
        self.mailbox = Mailbox()
        self.port = free_port()
        self.controller = Controller(self.mailbox, hostname="127.0.0.1", port=self.port)

    @property
    def url(self) -> str:
        return f"smtp://127.0.0.1:{self.port}"

    def start(self) -> None:
        self.controller.start()

    def stop(self) -> None:
        self.mailbox.release.set()
        self.controller.stop()


def text_of(message: EmailMessage) -> str:
    part = message.get_body(("plain",))
    assert part is not None
    return str(part.get_content())


def html_of(message: EmailMessage) -> str:
    part = message.get_body(("html",))
    assert part is not None
    return str(part.get_content())


def subject(message: EmailMessage) -> str:
    """The Subject as read, its folding undone (Python's parser may double a space there)."""
    return " ".join(str(message["Subject"]).split())
