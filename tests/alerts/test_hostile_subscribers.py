"""A webhook subscriber's server is not trusted: real servers on loopback (tests/alerts/
hostile.py) drip their answer, answer hundreds of MiB or a gzip bomb, present a
certificate of an authority nobody trusts, or sit behind a name that rebinds to the
loopback after the check. One POST ends by its deadline, reads nothing it does not need,
and goes only where the check let it.

The resolver is patched for the one host name of a test (the only way to make a name
answer differently between two lookups); every other name goes to the real one.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from alerts.models import Alert, AlertStatus, WebhookAttempt
from alerts.outbound import PostOutcome, webhook_post
from bench.servers import free_port
from bench.soak_subscribers import HostileServer, drip, dripping_head, status
from tests.alerts.conftest import fine, post
from tests.alerts.hostile import MIB, Authority, gzip_bomb, gzip_bombing, huge
from tests.conftest import run_tasks, start_db_worker, stop_db_worker, wait_until

DEADLINE_S = 2
HELD_S = 60  # how long the subscribers below would hold a POST that waited for them
# Ten times the deadline, a third of a hold: a busy machine does not reach it, a POST
# held by its subscriber would.
WITHIN_S = 10 * DEADLINE_S
NO_CONTENT = b"HTTP/1.1 204 No Content\r\n\r\n"


@pytest.fixture(autouse=True)
def short_deadline(settings: Any) -> None:
    settings.ALERTS_WEBHOOK_TIMEOUT = DEADLINE_S
    settings.ALERTS_WEBHOOK_ALLOW_PRIVATE = True  # the servers are on loopback


@pytest.fixture
def serve() -> Iterator[Callable[..., HostileServer]]:
    servers: list[HostileServer] = []

    def start(answer: Any, **options: Any) -> HostileServer:
        servers.append(HostileServer(answer, **options))
        return servers[-1]

    yield start
    for server in servers:
        server.stop()


@pytest.fixture
def authority(tmp_path: Path) -> Authority:
    return Authority(tmp_path)


@pytest.fixture
def resolver(monkeypatch: pytest.MonkeyPatch) -> Callable[[str, list[list[str]]], list[str]]:
    """`resolver(name, [first answer, second answer, ...])`: `name` answers these addresses,
    one answer per lookup (the last one again after that); the names looked up, in order."""
    real = socket.getaddrinfo
    looked_up: list[str] = []

    def patch(name: str, answers: list[list[str]]) -> list[str]:
        def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
            if host != name:
                return real(host, port, *args, **kwargs)
            answer = answers[min(sum(seen == name for seen in looked_up), len(answers) - 1)]
            looked_up.append(name)
            return [
                (socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (address, port))
                for address in answer
            ]

        monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
        return looked_up

    return patch


def post_to(url: str, **options: Any) -> tuple[PostOutcome, float]:
    started = time.monotonic()
    outcome = webhook_post(url=url, body=b'{"type": "test"}', headers={}, **options)
    return outcome, time.monotonic() - started


# --- A deadline for the whole POST ----------------------------------------------------


def test_a_dripping_subscriber_cannot_hold_a_post_past_its_deadline(serve):
    server = serve(dripping_head(every=0.5, longest=HELD_S))

    outcome, elapsed = post_to(server.url())

    assert elapsed < WITHIN_S
    assert outcome.status_code is None
    assert outcome.error == "ReadTimeout (127.0.0.1)"
    assert len(server.requests) == 1  # it was sent: only the answer was cut short


def test_a_subscriber_that_drips_its_tls_handshake_cannot_hold_a_post_past_its_deadline(serve):
    # A TLS record header announcing 16 KiB, then its bytes one by one, for a minute.
    record = b"\x16\x03\x03\x40\x00" + bytes(20 * HELD_S)
    server = serve(drip(record, every_s=0.05), read_request=False)

    outcome, elapsed = post_to(f"https://localhost:{server.port}/hook")

    assert elapsed < WITHIN_S
    assert outcome.status_code is None
    assert outcome.error == "ConnectTimeout (localhost)"


def test_posts_from_several_threads_at_once_each_keep_their_own_deadline(serve):
    dripping, answering = serve(dripping_head(every=0.5, longest=HELD_S)), serve(status(204))
    urls = [dripping.url(), answering.url()] * 3
    start = threading.Barrier(len(urls))
    outcomes: dict[int, PostOutcome] = {}
    spans: dict[int, tuple[float, float]] = {}  # when each POST began and ended

    def post_at_once(n: int, url: str) -> None:
        start.wait()
        began = time.monotonic()
        outcomes[n], _elapsed = post_to(url)
        spans[n] = (began, time.monotonic())

    threads = [threading.Thread(target=post_at_once, args=item) for item in enumerate(urls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WITHIN_S + 10)

    assert [outcomes[n].error for n in range(len(urls))] == ["ReadTimeout (127.0.0.1)", ""] * 3
    held, answered = [spans[n] for n in (0, 2, 4)], [spans[n] for n in (1, 3, 5)]
    assert max(began for began, _ended in held) < min(ended for _began, ended in held)  # at once
    assert max(ended - began for began, ended in held) < WITHIN_S
    # Answered while the dripping ones were still held: not queued behind them.
    assert max(ended for _began, ended in answered) < min(ended for _began, ended in held)


def test_a_slow_resolver_cannot_hold_a_post_past_its_deadline(monkeypatch):
    real = socket.getaddrinfo
    answered = threading.Event()  # set when the test ends: the lookup's thread ends then

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host == "slow-dns.example":
            answered.wait(HELD_S)
            raise socket.gaierror(socket.EAI_NONAME, "not found, and late")
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)

    try:
        outcome, elapsed = post_to("http://slow-dns.example/hook")
    finally:
        answered.set()

    assert elapsed < WITHIN_S
    assert outcome.error == "ConnectTimeout (slow-dns.example)"


# --- Reading only the answer's head ---------------------------------------------------


def test_a_huge_answer_is_left_unread(serve):
    server = serve(huge(400 * MIB))

    outcome, _elapsed = post_to(server.url())

    # A status at all: the POST ended on its own, since its deadline would have left none.
    assert outcome.status_code == 200
    # The portal hung up after the head: the rest never left the server.
    assert server.hung_up.wait(WITHIN_S)
    assert server.bytes_sent < 64 * MIB  # what the loopback's buffers took before the hang-up


def test_an_answer_whose_head_never_ends_is_cut_at_64_kib(serve):
    endless_head = b"HTTP/1.1 200 OK\r\n" + b"X-Padding: " + b"a" * (1024 * 1024)
    server = serve(lambda connection, server: server.send(connection, endless_head))

    outcome, _elapsed = post_to(server.url())

    assert outcome.status_code is None
    assert outcome.error.startswith("AnswerTooLong")


# --- Where the POST goes --------------------------------------------------------------


def test_a_name_that_rebinds_to_loopback_after_the_check_gets_no_post(serve, resolver, settings):
    settings.ALERTS_WEBHOOK_ALLOW_PRIVATE = False
    server = serve(status(204))
    # Public for the check, the loopback receiver for any lookup after it.
    looked_up = resolver("rebind.example", [["8.8.8.8"], ["127.0.0.1"]])

    outcome, _elapsed = post_to(server.url(host="rebind.example"))

    assert server.connections == 0
    assert server.requests == []
    assert looked_up == ["rebind.example"]  # once: the address checked is the one connected to
    assert not outcome.error.startswith("refused")  # the check passed: 8.8.8.8 got the POST


def test_a_name_with_a_loopback_address_among_public_ones_is_refused(serve, resolver, settings):
    settings.ALERTS_WEBHOOK_ALLOW_PRIVATE = False
    server = serve(status(204))
    resolver("mixed.example", [["8.8.8.8", "127.0.0.1"]])

    outcome, _elapsed = post_to(server.url(host="mixed.example"))

    assert server.connections == 0
    assert outcome.error.startswith("refused:")


def test_proxy_variables_and_netrc_are_not_read(serve, monkeypatch, tmp_path):
    receiver = serve(status(204))
    proxy = serve(status(502))
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.setenv(name, f"http://127.0.0.1:{proxy.port}")
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    netrc = tmp_path / "netrc"
    netrc.write_text("machine 127.0.0.1 login netrc-user password netrc-password\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc))

    outcome, _elapsed = post_to(receiver.url())

    assert outcome.status_code == 204
    assert proxy.connections == 0
    (request,) = receiver.requests
    assert "authorization" not in request.headers
    assert request.head.startswith(b"POST /hook HTTP/1.1\r\n")


# --- TLS with the host name -----------------------------------------------------------


def test_a_certificate_no_trusted_authority_issued_is_refused(serve, authority):
    server = serve(status(204), tls=authority.server_context("localhost"))

    outcome, _elapsed = post_to(f"https://localhost:{server.port}/hook")

    assert outcome.status_code is None
    assert outcome.error == "ConnectError: SSLCertVerificationError (localhost)"
    assert server.requests == []


def test_a_trusted_certificate_is_checked_against_the_host_name_not_the_address(serve, authority):
    server = serve(status(204), tls=authority.server_context("localhost"))

    outcome, _elapsed = post_to(
        f"https://localhost:{server.port}/hook?x=1", ssl_context=authority.trusted()
    )

    assert outcome.status_code == 204
    (request,) = server.requests
    assert request.head.startswith(b"POST /hook?x=1 HTTP/1.1\r\n")
    assert request.headers["host"] == f"localhost:{server.port}"
    assert server.server_names == ["localhost"]  # SNI: the name, not 127.0.0.1


def test_a_trusted_certificate_for_another_name_is_refused(serve, authority):
    server = serve(status(204), tls=authority.server_context("erp.example"))

    outcome, _elapsed = post_to(
        f"https://localhost:{server.port}/hook", ssl_context=authority.trusted()
    )

    assert outcome.error == "ConnectError: SSLCertVerificationError (localhost)"
    assert server.requests == []


# --- What is kept of a failure --------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_subscribers_query_string_is_kept_in_no_error_and_no_log_line(
    client, person, serve, log_records
):
    client.force_login(person("marcos", delivery="off"))
    failing = serve(status(500))
    dripping = serve(drip(NO_CONTENT, every_s=1.0))
    urls = [
        f"http://127.0.0.1:{free_port()}/hook?token=s3cr3t",
        failing.url("/hook?token=s3cr3t"),
        dripping.url("/hook?token=s3cr3t"),
    ]
    for url in urls:
        assert client.post("/account/alerts/webhooks/", {"url": url}).status_code == 200

    post(client, fine(1))
    run_tasks()

    errors = sorted(WebhookAttempt.objects.values_list("error", flat=True))
    last_errors = sorted(Alert.objects.values_list("last_error", flat=True))
    assert not [line for line in [*errors, *last_errors, *log_records.lines] if "s3cr3t" in line]
    # What is kept instead: the failure's kind and the host.
    assert errors == last_errors
    assert errors == [
        "ConnectError: ConnectionRefusedError (127.0.0.1)",
        "ReadTimeout (127.0.0.1)",
        "answered 500",
    ]


# --- The worker's memory ----------------------------------------------------------------


def peak_memory_kib(pid: int) -> int:
    """The process's peak resident memory so far (VmHWM)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")


@pytest.mark.django_db(transaction=True)
def test_a_worker_posting_to_a_huge_answer_and_a_gzip_bomb_keeps_its_memory(
    client, person, serve, emulator, settings
):
    client.force_login(person("marcos", delivery="off"))
    gzip_bomb()  # made before the clock matters
    fine_receiver, huge_receiver, bomb = (
        serve(status(204)),
        serve(huge(400 * MIB)),
        serve(gzip_bombing),
    )

    def subscribe(server: HostileServer) -> None:
        assert client.post("/account/alerts/webhooks/", {"url": server.url()}).status_code == 200

    subscribe(fine_receiver)
    worker = start_db_worker(
        emulator,
        worker_id="memory",
        FLEET_FIELD_KEYS=",".join(settings.FLEET_FIELD_KEYS),  # to read the subscriptions' secrets
        PORTAL_BASE_URL="https://portal.example",
        FLEET_WEBHOOK_BATCH_SECONDS="0",
        ALERTS_WEBHOOK_ALLOW_PRIVATE="true",
        ALERTS_WEBHOOK_TIMEOUT="5",
    )
    try:
        # Warmed up: a fine processed and posted, every module of the way imported.
        post(client, fine(1))
        wait_until(lambda: Alert.objects.filter(status=AlertStatus.SENT).exists(), timeout=30)
        warm = peak_memory_kib(worker.pid)

        subscribe(huge_receiver)
        subscribe(bomb)
        post(client, fine(2))
        wait_until(lambda: WebhookAttempt.objects.count() == 4, timeout=30)
        peak = peak_memory_kib(worker.pid)
    finally:
        stop_db_worker(worker)

    print(f"db_worker peak RSS: {warm / 1024:.1f} MiB warm, {peak / 1024:.1f} MiB after")
    assert len(huge_receiver.requests) == len(bomb.requests) == 1
    assert peak - warm < 50 * 1024, f"the worker grew by {(peak - warm) // 1024} MiB"
