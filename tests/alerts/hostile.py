"""Webhook subscribers that fight back: real TCP servers on loopback that answer a POST
too slowly, too much, or compressed to explode, and a certificate authority of the
test's own for subscribers served over TLS.

Each server reads the request (head and body, by Content-Length), records it, then
hands the socket to its `answer`; one thread per connection.
"""

from __future__ import annotations

import datetime
import socket
import ssl
import threading
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

MIB = 1024 * 1024
HEAD_END = b"\r\n\r\n"


@dataclass
class Request:
    head: bytes
    body: bytes

    @property
    def headers(self) -> dict[str, str]:
        lines = self.head.decode("latin-1").split("\r\n")[1:]
        return {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}


@dataclass
class HostileServer:
    """A server on 127.0.0.1 whose `answer(connection, server)` follows each request."""

    answer: Callable[[socket.socket, HostileServer], None]
    tls: ssl.SSLContext | None = None
    read_request: bool = True  # False: answer at once (before a TLS ClientHello is read)
    requests: list[Request] = field(default_factory=list)
    connections: int = 0
    bytes_sent: int = 0
    server_names: list[str | None] = field(default_factory=list)  # SNI, over TLS
    hung_up: threading.Event = field(default_factory=threading.Event)  # the client left
    _listener: socket.socket = field(init=False)

    def __post_init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        if self.tls is not None:
            self.tls.sni_callback = lambda sock, name, context: self.server_names.append(name)
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def port(self) -> int:
        return int(self._listener.getsockname()[1])

    def url(self, path: str = "/hook", *, host: str = "127.0.0.1") -> str:
        return f"{'https' if self.tls else 'http'}://{host}:{self.port}{path}"

    def stop(self) -> None:
        self._listener.close()

    def send(self, connection: socket.socket, data: bytes) -> bool:
        """Send `data`; False once the client has hung up."""
        try:
            connection.sendall(data)
        except OSError:
            self.hung_up.set()
            return False
        self.bytes_sent += len(data)
        return True

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self._listener.accept()
            except OSError:
                return  # stopped
            self.connections += 1
            threading.Thread(target=self._serve, args=(connection,), daemon=True).start()

    def _serve(self, connection: socket.socket) -> None:
        try:
            if self.tls is not None:
                connection.settimeout(10)
                connection = self.tls.wrap_socket(connection, server_side=True)
            if self.read_request:
                self.requests.append(_read_request(connection))
            self.answer(connection, self)
        except OSError:
            self.hung_up.set()
        finally:
            connection.close()


def _read_request(connection: socket.socket) -> Request:
    connection.settimeout(10)
    data = b""
    while HEAD_END not in data:
        chunk = connection.recv(65536)
        if not chunk:
            raise ConnectionResetError("the client left before its request ended")
        data += chunk
    head, _, body = data.partition(HEAD_END)
    request = Request(head, body)
    length = int(request.headers.get("content-length", "0"))
    while len(request.body) < length:
        chunk = connection.recv(65536)
        if not chunk:
            break
        request.body += chunk
    return request


# --- Answers ------------------------------------------------------------------------


def status(code: int) -> Callable[[socket.socket, HostileServer], None]:
    """A plain answer: `code` and no body."""

    def answer(connection: socket.socket, server: HostileServer) -> None:
        server.send(connection, f"HTTP/1.1 {code} Whatever\r\nContent-Length: 0\r\n\r\n".encode())

    return answer


def drip(payload: bytes, *, every_s: float) -> Callable[[socket.socket, HostileServer], None]:
    """`payload` one byte at a time, `every_s` apart, until it ends or the client leaves."""

    def answer(connection: socket.socket, server: HostileServer) -> None:
        for byte in payload:
            if not server.send(connection, bytes([byte])):
                return
            time.sleep(every_s)

    return answer


def huge(size: int) -> Callable[[socket.socket, HostileServer], None]:
    """A 200 with a body of `size` bytes, streamed from one small block (never built)."""

    def answer(connection: socket.socket, server: HostileServer) -> None:
        head = (
            f"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: {size}"
        )
        if not server.send(connection, head.encode() + HEAD_END):
            return
        block = bytes(64 * 1024)
        left = size
        while left > 0 and server.send(connection, block[:left]):
            left -= len(block)

    return answer


@cache
def gzip_bomb(size: int = 300 * MIB) -> bytes:
    """`size` bytes of zeros, gzipped (about a thousandth of it), compressed block by block."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = bytes(MIB)
    return b"".join([compressor.compress(block) for _ in range(size // MIB)] + [compressor.flush()])


def gzip_bombing(connection: socket.socket, server: HostileServer) -> None:
    """A 200 whose small gzipped body decompresses to hundreds of MiB."""
    bomb = gzip_bomb()
    head = (
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\n"
        f"Content-Length: {len(bomb)}"
    )
    server.send(connection, head.encode() + HEAD_END + bomb)


# --- TLS ----------------------------------------------------------------------------


@dataclass
class Authority:
    """A certificate authority of the test's own, which no trust store knows."""

    folder: Path
    key: ec.EllipticCurvePrivateKey = field(
        default_factory=lambda: ec.generate_private_key(ec.SECP256R1())
    )

    def __post_init__(self) -> None:
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Fleet Portal test authority")])
        self.certificate = (
            self._builder(name, name, self.key.public_key())
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.SubjectKeyIdentifier.from_public_key(self.key.public_key()), critical=False
            )
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .sign(self.key, hashes.SHA256())
        )
        self.ca_file = self.folder / "authority.pem"
        self.ca_file.write_bytes(self.certificate.public_bytes(serialization.Encoding.PEM))

    def trusted(self) -> ssl.SSLContext:
        """A client context that trusts this authority only, as the portal's default does
        certifi's (host names checked)."""
        return ssl.create_default_context(cafile=str(self.ca_file))

    def server_context(self, host_name: str) -> ssl.SSLContext:
        """A server's context with a certificate for `host_name`, issued by this authority."""
        key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host_name)])
        certificate = (
            self._builder(subject, self.certificate.subject, key.public_key())
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(host_name)]), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(self.key.public_key()),
                critical=False,
            )
            .add_extension(
                x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False
            )
            .sign(self.key, hashes.SHA256())
        )
        chain = self.folder / f"{host_name}.pem"
        chain.write_bytes(
            certificate.public_bytes(serialization.Encoding.PEM)
            + key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(chain)
        return context

    def _builder(
        self, subject: x509.Name, issuer: x509.Name, public_key: ec.EllipticCurvePublicKey
    ) -> x509.CertificateBuilder:
        now = datetime.datetime.now(datetime.UTC)
        return (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(issuer)
            .public_key(public_key)
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(days=1))
        )
