"""A test CA and a server certificate for ``localhost`` and ``127.0.0.1``.

`LocalCa.create` writes into a directory the CA certificate (what a provider's ``ca_file``
names) and the server's certificate and key (what a local server loads). The keys are made
anew each time and never leave the directory.
"""

from __future__ import annotations

import ipaddress
import ssl
from datetime import UTC, datetime, timedelta
from pathlib import Path

import attrs
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

__all__ = ["LocalCa"]


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


@attrs.frozen
class LocalCa:
    """The files of a test CA: ``ca_file`` (to trust), ``cert_file`` and ``key_file`` (the
    server's)."""

    ca_file: str
    cert_file: str
    key_file: str

    @classmethod
    def create(cls, directory: str | Path) -> LocalCa:
        """Make a CA and a server certificate for localhost in ``directory``."""
        folder = Path(directory)
        folder.mkdir(parents=True, exist_ok=True)
        now = datetime.now(UTC) - timedelta(minutes=5)
        ca_key = ec.generate_private_key(ec.SECP256R1())
        ca_name = _name("notify local test CA")
        ca = (
            x509.CertificateBuilder()
            .subject_name(ca_name)
            .issuer_name(ca_name)
            .public_key(ca_key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now)
            .not_valid_after(now + timedelta(days=30))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
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
            .add_extension(
                x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False
            )
            .sign(ca_key, hashes.SHA256())
        )
        key = ec.generate_private_key(ec.SECP256R1())
        cert = (
            x509.CertificateBuilder()
            .subject_name(_name("localhost"))
            .issuer_name(ca_name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now)
            .not_valid_after(now + timedelta(days=30))
            .add_extension(
                x509.SubjectAlternativeName(
                    [
                        x509.DNSName("localhost"),
                        x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                    ]
                ),
                critical=False,
            )
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(
                x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False
            )
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
                critical=False,
            )
            .sign(ca_key, hashes.SHA256())
        )
        paths = cls(
            ca_file=str(folder / "ca.pem"),
            cert_file=str(folder / "server.pem"),
            key_file=str(folder / "server-key.pem"),
        )
        Path(paths.ca_file).write_bytes(ca.public_bytes(serialization.Encoding.PEM))
        Path(paths.cert_file).write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        Path(paths.key_file).write_bytes(_pem_key(key))
        Path(paths.key_file).chmod(0o600)
        return paths

    def server_context(self, alpn: list[str]) -> ssl.SSLContext:
        """A server TLS context with the certificate, offering the ALPN protocols given."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.load_cert_chain(self.cert_file, self.key_file)
        context.set_alpn_protocols(alpn)
        return context
