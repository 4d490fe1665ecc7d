"""MariaDB's ``client_ed25519`` authentication: the password is the private key.

The ``auth_ed25519`` plugin stores the Ed25519 public key derived from the password
(base64, no padding) and sends a 32-byte nonce; the client answers with the Ed25519
signature of the nonce, computed with the SHA-512 of the password as the expanded
secret key (where standard Ed25519 hashes a 32-byte seed instead).  That one
difference is why the signing is composed here from libsodium's group operations
(through PyNaCl) rather than taken from ``crypto_sign``; verification is standard
Ed25519, so a signature made here is checked by PyNaCl's ordinary verifier.
"""

from __future__ import annotations

import base64
import hashlib

from nacl import bindings as _sodium
from nacl.exceptions import BadSignatureError
from nacl.signing import VerifyKey

#: The plugin's name in the handshake and in ``mysql.global_priv``.
ED25519: str = "client_ed25519"
NONCE_LENGTH = 32
SIGNATURE_LENGTH = 64


def _secret_scalar(password: bytes) -> tuple[bytes, bytes]:
    """The clamped secret scalar and the nonce prefix, both from SHA-512(password)."""
    digest = bytearray(hashlib.sha512(password).digest())
    digest[0] &= 248
    digest[31] &= 63
    digest[31] |= 64
    return bytes(digest[:32]), bytes(digest[32:])


def public_key(password: bytes) -> bytes:
    """The 32-byte public key the server keeps for ``password``."""
    scalar, _ = _secret_scalar(password)
    return _sodium.crypto_scalarmult_ed25519_base_noclamp(scalar)


def password_hash(password: bytes) -> str:
    """What the server stores for ``password``: the public key in base64 without padding,
    or ``""`` for an empty password (an account without one)."""
    if not password:
        return ""
    return base64.b64encode(public_key(password)).decode("ascii").rstrip("=")


def sign(password: bytes, nonce: bytes) -> bytes:
    """The client's 64-byte answer to the server's nonce."""
    scalar, prefix = _secret_scalar(password)
    point = _sodium.crypto_scalarmult_ed25519_base_noclamp(scalar)
    r = _sodium.crypto_core_ed25519_scalar_reduce(hashlib.sha512(prefix + nonce).digest())
    big_r = _sodium.crypto_scalarmult_ed25519_base_noclamp(r)
    k = _sodium.crypto_core_ed25519_scalar_reduce(hashlib.sha512(big_r + point + nonce).digest())
    s = _sodium.crypto_core_ed25519_scalar_add(r, _sodium.crypto_core_ed25519_scalar_mul(k, scalar))
    return big_r + s


def verify(stored: str, nonce: bytes, signature: bytes) -> bool:
    """Check a client's answer against the stored base64 public key (the server's side)."""
    try:
        key = base64.b64decode(stored + "=" * (-len(stored) % 4), validate=True)
        if len(key) != 32 or len(signature) != SIGNATURE_LENGTH:
            return False
        VerifyKey(key).verify(nonce, signature)
    except (BadSignatureError, ValueError):
        return False
    return True
