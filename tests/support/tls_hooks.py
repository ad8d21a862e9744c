"""https webhooks on loopback: one whose TLS handshake never ends (a record header, then a byte at
a time), and a certificate for a good one. Shared by the webhook tests and hostile_servers.
"""

from __future__ import annotations

import contextlib
import datetime
import ipaddress
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

RECORD_HEADER = b"\x16\x03\x03\x40\x00"
"""A TLS handshake record of 16 KiB: the client reads on until all of it has come."""
DRIP_S = 0.2


@contextlib.contextmanager
def tls_drip_hook() -> Iterator[tuple[str, list[int]]]:
    """Yields the hook's https URL and a list that gains an item per connection accepted."""
    accepted: list[int] = []
    stop = threading.Event()
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.1)

    def drip(conn: socket.socket) -> None:
        with conn, contextlib.suppress(OSError):
            conn.sendall(RECORD_HEADER)
            while not stop.wait(DRIP_S):
                conn.sendall(b"\x00")

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            accepted.append(1)
            threading.Thread(target=drip, args=(conn,), daemon=True).start()

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    try:
        yield f"https://127.0.0.1:{listener.getsockname()[1]}/topic", accepted
    finally:
        stop.set()
        server.join()
        listener.close()


def self_signed_cert(folder: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 that is its own CA, and its key: (cert.pem, key.pem)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = folder / "cert.pem", folder / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_file, key_file
