"""``client_ed25519``: our key derivation equals the real server's, and signatures verify."""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mariabinlog.codec.wire import ed25519


def test_public_keys_equal_what_a_real_server_stores(mariadb_server_factory) -> None:  # type: ignore[no-untyped-def]
    server = mariadb_server_factory("--plugin-load-add=auth_ed25519", name="ed25519").start()
    for password in ("secret", "", "pässwörd with spaces", "x" * 200):
        escaped = password.replace("\\", "\\\\").replace("'", "\\'")
        server.sql(f"CREATE OR REPLACE USER 'ed'@'%' IDENTIFIED VIA ed25519 USING PASSWORD('{escaped}')")
        stored = server.rows("SELECT JSON_VALUE(priv, '$.authentication_string') FROM mysql.global_priv"
                             " WHERE User='ed'")[0][0]
        assert ed25519.password_hash(password.encode()) == stored, password


@settings(max_examples=50, deadline=None)
@given(password=st.binary(min_size=1, max_size=80), nonce=st.binary(min_size=32, max_size=32))
def test_signatures_verify_and_are_bound_to_password_and_nonce(password: bytes, nonce: bytes) -> None:
    signature = ed25519.sign(password, nonce)
    stored = ed25519.password_hash(password)
    assert len(signature) == ed25519.SIGNATURE_LENGTH
    assert ed25519.verify(stored, nonce, signature)
    assert not ed25519.verify(ed25519.password_hash(password + b"x"), nonce, signature)
    other = bytes([nonce[0] ^ 1]) + nonce[1:]
    assert not ed25519.verify(stored, other, signature)


@pytest.mark.parametrize("stored", ["", "not base64!", "AAAA"])
def test_malformed_stored_keys_never_verify(stored: str) -> None:
    assert not ed25519.verify(stored, os.urandom(32), os.urandom(64))
