"""Throw-away TLS material for tests, made with ``cryptography`` (no key is ever committed).

:func:`make_pki` returns a CA, a server certificate for ``localhost`` / ``127.0.0.1`` signed by it,
a client certificate signed by it, and a client certificate signed by another CA — all PEM bytes.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass(frozen=True)
class KeyPair:
    key: bytes
    cert: bytes


@dataclass(frozen=True)
class Pki:
    ca: bytes
    server: KeyPair
    client: KeyPair
    stranger: KeyPair
    """A client certificate from a CA the server does not trust."""


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _issue(
    subject: str,
    issuer: tuple[x509.Name, ec.EllipticCurvePrivateKey] | None,
    *,
    ca: bool = False,
    server: bool = False,
) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    issuer_name, issuer_key = issuer if issuer is not None else (_name(subject), key)
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(subject))
        .issuer_name(issuer_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if server:
        names = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
        usage = ExtendedKeyUsageOID.SERVER_AUTH
    else:
        usage = ExtendedKeyUsageOID.CLIENT_AUTH
    if not ca:
        builder = builder.add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    return key, builder.sign(issuer_key, hashes.SHA256())


def _pem(key: ec.EllipticCurvePrivateKey, cert: x509.Certificate) -> KeyPair:
    return KeyPair(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ),
        cert.public_bytes(serialization.Encoding.PEM),
    )


def make_pki() -> Pki:
    ca_key, ca_cert = _issue("tensorgate test CA", None, ca=True)
    issuer = (ca_cert.subject, ca_key)
    other_key, other_cert = _issue("some other CA", None, ca=True)
    return Pki(
        ca=ca_cert.public_bytes(serialization.Encoding.PEM),
        server=_pem(*_issue("localhost", issuer, server=True)),
        client=_pem(*_issue("a client", issuer)),
        stranger=_pem(*_issue("a stranger", (other_cert.subject, other_key))),
    )


def ssl_config_text(pki: Pki, *, client_verify: bool) -> str:
    """A text-format SSLConfig holding ``pki``'s server key and certificate and its CA."""

    def quoted(pem: bytes) -> str:
        return '"' + pem.decode().replace("\n", "\\n") + '"'

    return (
        f"server_key: {quoted(pki.server.key)}\n"
        f"server_cert: {quoted(pki.server.cert)}\n"
        f"custom_ca: {quoted(pki.ca)}\n"
        f"client_verify: {'true' if client_verify else 'false'}\n"
    )
