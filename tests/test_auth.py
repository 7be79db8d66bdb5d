"""Credentials → user (``mneme.auth``, ``mneme.keys``, ``mneme keys``), without a server."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import stat
import time
from pathlib import Path
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from mneme.auth import Authenticator, JWTVerifier, bearer_token
from mneme.errors import AuthenticationError, InvalidTenantError
from mneme.graph.context import Context, resolve_context
from mneme.keys import KeyStore, PostgresKeyStore

SECRET = "s3cret-for-tests-only-0123456789abcdef"


def _rsa() -> tuple[Any, str]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    return key, pem.decode()


def token(key: Any = SECRET, alg: str = "HS256", *, headers: dict[str, Any] | None = None, **claims: Any) -> str:
    payload = {"sub": "alice", "exp": int(time.time()) + 600, **claims}
    return jwt.encode({k: v for k, v in payload.items() if v is not None}, key, algorithm=alg, headers=headers)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.server)])
def key_store(request: pytest.FixtureRequest, tmp_path: Path) -> KeyStore:
    """A key store of each backend: a SQLite file, and a real PostgreSQL database."""
    if request.param == "sqlite":
        return KeyStore(tmp_path / "keys.sqlite3")
    return PostgresKeyStore(request.getfixturevalue("postgres_server").database())


def test_a_key_is_stored_as_a_hash_in_a_private_file_and_names_its_user(tmp_path: Path) -> None:
    store = KeyStore(tmp_path / "keys.sqlite3")
    assert not store.exists() and not store.path.exists()  # reading creates nothing
    _, key = store.create("alice")
    assert stat.S_IMODE(os.stat(store.path).st_mode) == 0o600
    assert key.split("_", 2)[2].encode() not in store.path.read_bytes()  # mneme_<id>_<secret>; "_" may be in it


def test_a_key_names_its_user_and_only_its_exact_secret_passes(key_store: KeyStore) -> None:
    assert not key_store.exists()
    record, key = key_store.create("alice")
    secret = key.split("_", 2)[2]  # mneme_<id>_<secret>: the secret itself may hold "_" (token_urlsafe)
    assert key_store.exists()
    assert key_store.verify(key) == record and record.user_id == "alice" and not record.admin
    assert key_store.verify(key[:-1] + ("A" if key[-1] != "A" else "B")) is None
    assert key_store.verify(f"mneme_{record.id}_") is None and key_store.verify("mneme_nothing") is None
    _, other = key_store.create("bob")
    assert key_store.verify(f"mneme_{record.id}_{other.split('_', 2)[2]}") is None  # bob's secret, alice's id
    listed = key_store.list()
    assert [k.user_id for k in listed] == ["alice", "bob"] and secret not in repr(listed)


def test_a_revoked_key_is_refused_but_keeps_the_server_closed(key_store: KeyStore) -> None:
    record, key = key_store.create("bob", admin=True)
    assert key_store.verify(key) is not None and key_store.verify(key).admin  # type: ignore[union-attr]
    assert key_store.revoke(record.id) and not key_store.revoke(record.id)
    assert key_store.verify(key) is None
    assert key_store.exists()  # revoking the last key never re-opens dev mode
    assert not Authenticator(keys=key_store).dev_mode
    assert [k.revoked_at is not None for k in key_store.list()] == [True]


def test_postgres_settings_put_keys_in_postgres_unless_a_key_file_is_named(tmp_path: Path) -> None:
    from mneme.config import Settings
    from mneme.keys import open_key_store

    url = "postgresql://mneme@db.example:5432/mneme"
    assert isinstance(open_key_store(Settings.from_env({"MNEME_POSTGRES_URL": url})), PostgresKeyStore)
    named = open_key_store(Settings.from_env({"MNEME_POSTGRES_URL": url, "MNEME_KEYS_FILE": str(tmp_path / "k")}))
    assert not isinstance(named, PostgresKeyStore) and named.location == str(tmp_path / "k")
    assert open_key_store(Settings.from_env({"MNEME_DATA_DIR": str(tmp_path)})).location == str(
        tmp_path / "keys.sqlite3")


def test_an_unreachable_key_database_is_an_error_not_dev_mode(unused_url: str) -> None:
    from mneme.errors import StoreUnavailableError

    port = unused_url.rsplit(":", 1)[1]
    down = Authenticator(keys=PostgresKeyStore(f"postgresql://postgres@127.0.0.1:{port}/postgres"))
    with pytest.raises(StoreUnavailableError, match="MNEME_POSTGRES_URL"):
        down.authenticate(None, "alice")


def test_a_bad_user_id_makes_no_key(tmp_path: Path) -> None:
    with pytest.raises(InvalidTenantError):
        KeyStore(tmp_path / "k.sqlite3").create("bad user/id")


@pytest.mark.parametrize(("header", "expected"), [
    ("Bearer abc", "abc"), ("bearer  abc ", "abc"), ("Basic abc", None), ("Bearer", None), (None, None), ("", None)])
def test_bearer_token(header: str | None, expected: str | None) -> None:
    assert bearer_token(header) == expected


def test_hs256_jwts_are_checked_for_signature_expiry_audience_and_issuer() -> None:
    verifier = JWTVerifier(secret=SECRET, audience="mneme", issuer="https://idp.example")
    good = {"aud": "mneme", "iss": "https://idp.example"}
    assert verifier.verify(token(**good)) == "alice"
    assert verifier.verify(token(**good, sub="张三")) == "张三"
    bad = [
        token("another-secret-another-secret-0123", **good),
        token(**{**good, "aud": "other"}),
        token(**{**good, "iss": "https://evil.example"}),
        token(**good, exp=int(time.time()) - 3600),
        token(**{**good, "exp": None}),  # no expiry at all
        token(aud="mneme"),  # no issuer
        token(**good, sub="bad user/id"),
        jwt.encode({"sub": "alice", "exp": int(time.time()) + 60, **good}, None, algorithm="none"),
        "not.a.jwt",
    ]
    for t in bad:
        with pytest.raises(AuthenticationError):
            verifier.verify(t)


def test_the_user_claim_is_configurable() -> None:
    verifier = JWTVerifier(secret=SECRET, user_claim="email")
    assert verifier.verify(token(email="bob@example.com")) == "bob@example.com"
    with pytest.raises(AuthenticationError):
        verifier.verify(token())


def test_rs256_with_a_pem_public_key_and_no_algorithm_confusion(tmp_path: Path) -> None:
    private, pem = _rsa()
    verifier = JWTVerifier(public_key=pem)
    assert verifier.verify(token(private, "RS256")) == "alice"
    other, _ = _rsa()
    with pytest.raises(AuthenticationError):
        verifier.verify(token(other, "RS256"))
    # a token "signed" with the public key as an HMAC secret (the classic algorithm confusion) must not pass
    def b64(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

    header = b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    signing_input = header + "." + b64(json.dumps({"sub": "alice", "exp": 9999999999}).encode())
    signature = b64(hmac.new(pem.encode(), signing_input.encode(), hashlib.sha256).digest())
    with pytest.raises(AuthenticationError):
        verifier.verify(f"{signing_input}.{signature}")
    # the PEM may also be given as a file path
    (tmp_path / "pub.pem").write_text(pem)
    assert JWTVerifier(public_key=str(tmp_path / "pub.pem")).verify(token(private, "RS256")) == "alice"


def test_es256_through_a_jwks_file_picks_the_key_by_kid(tmp_path: Path) -> None:
    keys = {kid: ec.generate_private_key(ec.SECP256R1()) for kid in ("k1", "k2")}
    jwks = {"keys": [{**json.loads(jwt.algorithms.ECAlgorithm.to_jwk(k.public_key())), "kid": kid, "alg": "ES256",
                      "use": "sig"} for kid, k in keys.items()]}
    (tmp_path / "jwks.json").write_text(json.dumps(jwks))
    verifier = JWTVerifier(jwks_file=tmp_path / "jwks.json")
    assert verifier.verify(token(keys["k2"], "ES256", headers={"kid": "k2"})) == "alice"
    with pytest.raises(AuthenticationError):  # signed by k1, claims to be k2
        verifier.verify(token(keys["k1"], "ES256", headers={"kid": "k2"}))
    with pytest.raises(AuthenticationError):
        verifier.verify(token(keys["k1"], "ES256", headers={"kid": "k9"}))


def test_dev_mode_trusts_the_claimed_user_and_auth_mode_never_does(tmp_path: Path) -> None:
    store = KeyStore(tmp_path / "keys.sqlite3")
    dev = Authenticator(keys=store, default_user="guest")
    assert dev.dev_mode
    assert dev.authenticate(None, "alice").user_id == "alice"
    assert dev.authenticate(None, None).user_id == "guest"
    _, alice = store.create("alice")
    _, admin = store.create("root", admin=True)
    assert not dev.dev_mode  # a key made while a server runs closes it at the next request
    with pytest.raises(AuthenticationError):
        dev.authenticate(None, "alice")
    closed = Authenticator(keys=store, default_user="guest", local_admin_token="local-token")
    assert not closed.dev_mode
    for authorization in (None, "Bearer nope", "Bearer mneme_abc_def", f"Basic {alice}"):
        with pytest.raises(AuthenticationError):
            closed.authenticate(authorization, "alice")
    assert closed.authenticate(f"Bearer {alice}", "bob").user_id == "alice"  # X-User-Id cannot impersonate
    assert closed.authenticate(f"Bearer {admin}", "bob").user_id == "bob"  # an admin acts for a user it names
    assert closed.authenticate(f"Bearer {admin}", None).user_id == "root"
    local = closed.authenticate("Bearer local-token", "carol")
    assert local.admin and local.user_id == "carol" and local.via == "local-admin"
    with pytest.raises(AuthenticationError):
        closed.authenticate(f"Bearer {token()}", None)  # JWTs are not configured here


def test_jwt_and_keys_together(tmp_path: Path) -> None:
    store = KeyStore(tmp_path / "keys.sqlite3")
    _, key = store.create("alice")
    both = Authenticator(keys=store, jwt_verifier=JWTVerifier(secret=SECRET))
    assert both.authenticate(f"Bearer {token(sub='bob')}", "alice").user_id == "bob"
    assert both.authenticate(f"Bearer {key}", "bob").user_id == "alice"
    assert not Authenticator(keys=KeyStore(tmp_path / "none"), jwt_verifier=JWTVerifier(secret=SECRET)).dev_mode
    said = both.describe()
    assert "API keys" in said and "HS256" in said and "PEM" not in said
    assert "dev mode" in Authenticator(keys=KeyStore(tmp_path / "none")).describe()


def test_the_authenticated_user_wins_over_context_and_configurable() -> None:
    config = {"configurable": {"user_id": "mallory", "langgraph_auth_user_id": "alice"}}
    assert resolve_context({"user_id": "mallory"}, config).user_id == "alice"
    assert resolve_context(Context(user_id="mallory", k=3), config).k == 3
    dev = {"configurable": {"langgraph_auth_user_id": ""}}  # langgraph dev in dev mode: the run names the user
    assert resolve_context({"user_id": "bob"}, dev).user_id == "bob"


def _mneme(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    from mneme.cli import main

    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_the_keys_command_creates_lists_and_revokes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    os.environ["MNEME_DATA_DIR"] = str(tmp_path)
    code, out, _ = _mneme(capsys, "keys", "create", "--user", "alice", "--admin", "--label", "ops laptop")
    assert code == 0
    key = out.strip().splitlines()[-1]
    found = KeyStore(tmp_path / "keys.sqlite3").verify(key)
    assert found is not None and found.user_id == "alice" and found.admin
    _, listed, _ = _mneme(capsys, "keys", "list", "--json")
    rows = json.loads(listed)
    assert [(r["id"], r["user_id"], r["admin"], r["label"]) for r in rows] == [(found.id, "alice", True, "ops laptop")]
    assert key.split("_", 2)[2] not in listed
    assert _mneme(capsys, "keys", "revoke", found.id)[0] == 0
    code, _, err = _mneme(capsys, "keys", "revoke", found.id)
    assert code == 2 and "no live API key" in err
    assert "revoked" in _mneme(capsys, "keys", "list")[1]


@pytest.mark.parametrize(("host", "local"), [
    ("127.0.0.1", True), ("::1", True), ("::ffff:127.0.0.1", True), (None, True), ("testclient", True),
    ("192.0.2.7", False), ("2001:db8::1", False), ("::ffff:192.0.2.7", False),
])
def test_client_is_local(host: str | None, local: bool) -> None:
    from mneme.auth import client_is_local

    assert client_is_local(host) is local


def test_langgraph_dev_mode_answers_this_machine_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncio

    from langgraph_sdk import Auth

    from mneme import langgraph_auth

    monkeypatch.setenv("MNEME_DATA_DIR", str(tmp_path))  # no keys, no JWT: dev mode
    monkeypatch.setattr(langgraph_auth, "_authenticator", None)

    def who(client: tuple[str, int]) -> Any:
        return asyncio.run(langgraph_auth.authenticate(None, {}, {"client": client}))

    assert who(("127.0.0.1", 5000))["identity"] == ""
    with pytest.raises(Auth.exceptions.HTTPException) as refused:
        who(("192.0.2.7", 5000))
    assert refused.value.status_code == 403 and "MNEME_INSECURE_DEV_AUTH" in str(refused.value.detail)
    monkeypatch.setenv("MNEME_INSECURE_DEV_AUTH", "1")
    assert who(("192.0.2.7", 5000))["identity"] == ""
