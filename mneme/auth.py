"""Who is calling: credentials → user, decided here for both servers (LangServe and ``langgraph dev``).

- **API keys** (``mneme keys create``; ``mneme.keys``) and **JWTs** (PyJWT: HS256 with ``MNEME_JWT_SECRET``,
  RS256/ES256 with ``MNEME_JWT_PUBLIC_KEY`` or ``MNEME_JWKS_FILE``; ``aud``/``iss`` checked when configured;
  the user from ``MNEME_JWT_USER_CLAIM``) arrive as ``Authorization: Bearer …``. When either is configured the
  verified identity is the only user: nothing in headers or bodies can name another one.
- **Dev mode**, when neither is configured: the caller names the user (``X-User-Id``, a default user). The
  servers log it loudly and ``mneme serve`` keeps to loopback unless told ``--insecure-dev-auth``.
- **Admins** (a key made with ``--admin``, or the local admin token ``mneme serve`` writes to ``server.json``)
  may act for any user by naming it, and manage shared documents.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import jwt

from mneme.config import Settings
from mneme.errors import AuthenticationError, ConfigurationError, InvalidTenantError
from mneme.keys import KEY_PREFIX, KeyStore, open_key_store
from mneme.memory.base import validate_tenant

log = logging.getLogger(__name__)

ASYMMETRIC_ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512")
DEV_MODE_WARNING = (
    "DEV MODE: no API keys (mneme keys create) and no JWT settings (MNEME_JWT_*): the caller names the user "
    "(X-User-Id / context.user_id), so anyone who can reach this server can read anyone's memories"
)


@dataclass(frozen=True)
class Principal:
    """An authenticated caller: whose memory it uses, whether it is an admin, and how it was verified."""

    user_id: str | None
    admin: bool = False
    via: Literal["key", "jwt", "dev", "local-admin"] = "dev"


class JWTVerifier:
    """Verifies JWTs with PyJWT; each key is used with its own algorithm family only (no alg confusion)."""

    def __init__(self, *, secret: str | None = None, public_key: str | None = None, jwks_file: Path | None = None,
                 audience: str | None = None, issuer: str | None = None, user_claim: str = "sub",
                 leeway: float = 30.0) -> None:
        self.secret, self.audience, self.issuer = secret, audience, issuer
        self.user_claim, self.leeway = user_claim, leeway
        self.public_key: Any = None
        if public_key:
            pem = public_key if public_key.lstrip().startswith("-----BEGIN") else _read(Path(public_key).expanduser())
            try:
                self.public_key = _load_pem(pem)
            except ValueError as exc:
                raise ConfigurationError(f"MNEME_JWT_PUBLIC_KEY is not a PEM public key: {exc}") from exc
        self.jwks: jwt.PyJWKSet | None = None
        if jwks_file:
            try:
                self.jwks = jwt.PyJWKSet.from_dict(json.loads(_read(jwks_file)))
            except (ValueError, jwt.PyJWTError) as exc:
                raise ConfigurationError(f"MNEME_JWKS_FILE {jwks_file}: not a usable JWKS: {exc}") from exc

    @classmethod
    def from_settings(cls, settings: Settings) -> JWTVerifier | None:
        """The verifier the settings configure, or None when no JWT setting is set."""
        if not (settings.jwt_secret or settings.jwt_public_key or settings.jwks_file):
            return None
        return cls(secret=settings.jwt_secret, public_key=settings.jwt_public_key, jwks_file=settings.jwks_file,
                   audience=settings.jwt_audience, issuer=settings.jwt_issuer, user_claim=settings.jwt_user_claim)

    def _key(self, token: str) -> tuple[Any, list[str]]:
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError as exc:
            raise AuthenticationError(f"malformed JWT: {exc}") from exc
        alg = str(header.get("alg", ""))
        if alg == "HS256" and self.secret:
            return self.secret, ["HS256"]
        if alg in ASYMMETRIC_ALGORITHMS:
            if self.jwks is not None:
                kid = header.get("kid")
                keys = [k for k in self.jwks.keys if kid is None or k.key_id == kid]
                if len(keys) == 1 or (keys and kid is not None):
                    return keys[0].key, [alg]
                raise AuthenticationError(f"no key in MNEME_JWKS_FILE matches the JWT's kid {kid!r}")
            if self.public_key is not None:
                return self.public_key, [alg]
        raise AuthenticationError(f"JWT algorithm {alg!r} is not accepted by this server's settings")

    def verify(self, token: str) -> str:
        """The user the token names (validated as a user id); ``AuthenticationError`` when it is not valid."""
        key, algorithms = self._key(token)
        try:
            claims = jwt.decode(
                token, key, algorithms=algorithms, audience=self.audience, issuer=self.issuer, leeway=self.leeway,
                options={"require": ["exp", self.user_claim], "verify_aud": self.audience is not None},
            )
        except jwt.PyJWTError as exc:
            raise AuthenticationError(f"JWT rejected: {exc}") from exc
        try:
            return validate_tenant(str(claims[self.user_claim]))
        except InvalidTenantError as exc:
            raise AuthenticationError(f"JWT claim {self.user_claim!r} is not a usable user id: {exc}") from exc


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigurationError(f"cannot read {path}: {exc}") from exc


def _load_pem(pem: str) -> Any:
    from cryptography.hazmat.primitives.serialization import load_pem_public_key

    return load_pem_public_key(pem.encode())


def bearer_token(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header, if any."""
    scheme, _, token = (authorization or "").strip().partition(" ")
    if scheme.lower() != "bearer":
        return None
    return token.strip() or None


def header_text(value: str) -> str:
    """A header value as the client wrote it: HTTP servers decode header bytes as Latin-1, so a UTF-8 user id
    (``X-User-Id: 张三``, as ``mneme chat -u 张三`` names one) arrives garbled; this undoes that. A value that is not
    UTF-8 read as Latin-1 is returned as is."""
    try:
        return value.encode("latin-1").decode("utf-8")
    except (UnicodeEncodeError, UnicodeDecodeError):
        return value


class Authenticator:
    """Turns a request's credentials into a ``Principal``; one instance per server process."""

    def __init__(self, *, keys: KeyStore | None = None, jwt_verifier: JWTVerifier | None = None,
                 local_admin_token: str | None = None, default_user: str | None = None) -> None:
        self.keys, self.jwt = keys, jwt_verifier
        self.default_user = validate_tenant(default_user) if default_user else None
        self._admin_digest = hashlib.sha256(local_admin_token.encode()).digest() if local_admin_token else None
        self._closed = False

    @classmethod
    def from_settings(cls, settings: Settings, *, local_admin_token: str | None = None,
                      default_user: str | None = None) -> Authenticator:
        """The authenticator the settings configure (``mneme.keys.open_key_store``, JWT settings)."""
        return cls(keys=open_key_store(settings), jwt_verifier=JWTVerifier.from_settings(settings),
                   local_admin_token=local_admin_token, default_user=default_user)

    @property
    def dev_mode(self) -> bool:
        """True when neither keys nor JWTs are configured: the caller's own claim names the user.

        A key created while the server runs closes it at the next request; once closed it stays closed
        (revoked keys still count), so the key store is not asked again.
        """
        if not self._closed:
            self._closed = self.jwt is not None or (self.keys is not None and self.keys.exists())
        return not self._closed

    def describe(self) -> str:
        """One line for the start-up log: how callers are identified here."""
        if self.dev_mode:
            return "dev mode (the caller names the user)"
        ways = []
        if self.keys is not None and self.keys.exists():
            ways.append(f"API keys ({self.keys.location})")
        if self.jwt is not None:
            ways.append("JWT (" + ", ".join(name for name, on in (
                ("HS256", self.jwt.secret), ("PEM public key", self.jwt.public_key is not None),
                ("JWKS", self.jwt.jwks is not None)) if on) + ")")
        return "credentials required: " + " and ".join(ways)

    def _is_local_admin(self, token: str) -> bool:
        return self._admin_digest is not None and hmac.compare_digest(
            self._admin_digest, hashlib.sha256(token.encode()).digest())

    def authenticate(self, authorization: str | None, claimed_user: str | None = None) -> Principal:
        """Who is calling. ``claimed_user`` (``X-User-Id``) counts in dev mode and for admins only.

        Raises ``AuthenticationError`` (401) for missing or bad credentials once keys or JWTs are configured,
        and ``InvalidTenantError`` (400) when no valid user is named where one has to be.
        """
        token = bearer_token(authorization)
        claimed = header_text(claimed_user or "").strip() or None
        if token and self._is_local_admin(token):
            return Principal(validate_tenant(claimed) if claimed else None, admin=True, via="local-admin")
        if self.dev_mode:
            user = claimed or self.default_user
            return Principal(validate_tenant(user) if user else None, via="dev")
        if not token:
            raise AuthenticationError("missing credentials: send Authorization: Bearer <API key or JWT>")
        if token.startswith(KEY_PREFIX):
            key = self.keys.verify(token) if self.keys is not None else None
            if key is None:
                raise AuthenticationError("unknown or revoked API key")
            if key.admin and claimed:
                return Principal(validate_tenant(claimed), admin=True, via="key")
            return Principal(key.user_id, admin=key.admin, via="key")
        if self.jwt is None:
            raise AuthenticationError("not an API key of this server (JWTs are not configured)")
        return Principal(self.jwt.verify(token), via="jwt")


def client_is_local(host: str | None) -> bool:
    """Whether a client address is this machine's (loopback, or IPv4-mapped loopback).

    Dev mode answers only such clients unless told otherwise (``--insecure-dev-auth`` for ``mneme serve``,
    ``MNEME_INSECURE_DEV_AUTH=1`` under ``langgraph dev``). A client that is not an IP address (a Unix socket,
    an in-process test client) counts as local.
    """
    if not host:
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return True
    mapped = getattr(address, "ipv4_mapped", None)
    return bool((mapped or address).is_loopback)
