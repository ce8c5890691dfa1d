"""Webhook subscribers that fight back, beyond the soak's (`bench.soak_subscribers`'s
`HostileServer`, which serves them): answers too
large or compressed to explode, and a certificate authority of the test's own for
subscribers served over TLS."""

from __future__ import annotations

import datetime
import socket
import ssl
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from bench.soak_subscribers import HEAD_END, HostileServer

MIB = 1024 * 1024


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
