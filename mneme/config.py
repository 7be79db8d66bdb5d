"""Settings read from the environment once, at the edge (CLI, server, the module-level graph).

Library code takes these values as arguments; only entry points call ``Settings.from_env()``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from mneme.errors import ConfigurationError


@dataclass(frozen=True, kw_only=True)
class Settings:
    """Process-wide settings; see the README's configuration table."""

    data_dir: Path = Path(".mneme")
    """MNEME_DATA_DIR: where embedded Chroma and the keyword index live."""
    chroma_url: str | None = None
    """MNEME_CHROMA_URL: ``http://host:port`` of a Chroma server; unset means embedded Chroma."""
    collection_prefix: str = "mneme"
    """MNEME_COLLECTION_PREFIX: prefix of every Chroma collection name."""
    embeddings: str = "use-m3"
    """MNEME_EMBEDDINGS: ``use-m3`` (offline default) or ``openai:<model>``."""
    openai_api_key: str | None = None
    """OPENAI_API_KEY: enables the chat model; without it Mneme runs in memory-only mode."""
    openai_base_url: str | None = None
    """OPENAI_BASE_URL: any OpenAI-compatible server (Ollama, vLLM, llama.cpp)."""
    chat_model: str = "gpt-4o-mini"
    """MNEME_CHAT_MODEL: the chat model's name at that endpoint."""
    cache_rows: int = 200_000
    """MNEME_VECTOR_CACHE_ROWS: rows of the in-process search cache (``0``: off, search asks Chroma every time)."""
    model_timeout: float = 60.0
    """MNEME_MODEL_TIMEOUT: seconds the chat model may take to answer (rewrite gets 1/4, extraction 1/2)."""
    chroma_timeout: float = 10.0
    """MNEME_CHROMA_TIMEOUT: seconds a Chroma server may stay silent on one request before it counts as down."""
    embedding_timeout: float = 30.0
    """MNEME_EMBEDDING_TIMEOUT: seconds one request to an ``openai:<model>`` embeddings endpoint may take."""
    postgres_url: str | None = None
    """MNEME_POSTGRES_URL: PostgreSQL for conversation threads (shared by several servers); unset: SQLite."""
    max_message_chars: int = 32_000
    """MNEME_MAX_MESSAGE_CHARS: longest accepted message; longer ones are refused (HTTP 413), never stored."""
    max_request_messages: int = 20
    """MNEME_MAX_REQUEST_MESSAGES: most messages one HTTP request may carry."""
    max_body_bytes: int = 1_000_000
    """MNEME_MAX_BODY_BYTES: largest HTTP request body; refused (413) before it is read or parsed."""
    keys_file: Path | None = None
    """MNEME_KEYS_FILE: the API key file (hashes only); default PostgreSQL if configured, else the data dir's."""
    jwt_secret: str | None = None
    """MNEME_JWT_SECRET: accept HS256 JWTs signed with this secret."""
    jwt_public_key: str | None = None
    """MNEME_JWT_PUBLIC_KEY: accept RS256/ES256 JWTs verified by this PEM public key (the PEM text or a file path)."""
    jwks_file: Path | None = None
    """MNEME_JWKS_FILE: accept RS256/ES256 JWTs verified by the keys of this JWKS (JSON) file, chosen by ``kid``."""
    jwt_audience: str | None = None
    """MNEME_JWT_AUDIENCE: required ``aud`` of every JWT (unset: ``aud`` is not checked)."""
    jwt_issuer: str | None = None
    """MNEME_JWT_ISSUER: required ``iss`` of every JWT (unset: ``iss`` is not checked)."""
    jwt_user_claim: str = "sub"
    """MNEME_JWT_USER_CLAIM: the claim that names the user."""

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        """Read settings from ``env`` (default ``os.environ``)."""
        env = os.environ if env is None else env
        url = (env.get("MNEME_CHROMA_URL") or "").strip() or None
        if url and not url.startswith(("http://", "https://")):
            raise ConfigurationError(f"MNEME_CHROMA_URL must look like http://host:port, got {url!r}")
        prefix = (env.get("MNEME_COLLECTION_PREFIX") or "mneme").strip()
        if not prefix.replace("_", "").replace("-", "").isalnum() or len(prefix) > 40:
            raise ConfigurationError(f"MNEME_COLLECTION_PREFIX {prefix!r}: use up to 40 letters, digits, _ or -")
        raw_rows = (env.get("MNEME_VECTOR_CACHE_ROWS") or "200000").strip().replace("_", "")
        if not raw_rows.isdigit():
            raise ConfigurationError(f"MNEME_VECTOR_CACHE_ROWS must be a whole number of rows (0 turns the cache off), "
                                     f"got {raw_rows!r}")
        postgres = (env.get("MNEME_POSTGRES_URL") or "").strip() or None
        if postgres and not postgres.startswith(("postgresql://", "postgres://")):
            raise ConfigurationError("MNEME_POSTGRES_URL must look like postgresql://user@host:port/dbname")
        return cls(
            model_timeout=_seconds(env, "MNEME_MODEL_TIMEOUT", 60.0),
            chroma_timeout=_seconds(env, "MNEME_CHROMA_TIMEOUT", 10.0),
            embedding_timeout=_seconds(env, "MNEME_EMBEDDING_TIMEOUT", 30.0),
            cache_rows=int(raw_rows),
            postgres_url=postgres,
            max_message_chars=_positive(env, "MNEME_MAX_MESSAGE_CHARS", 32_000),
            max_request_messages=_positive(env, "MNEME_MAX_REQUEST_MESSAGES", 20),
            max_body_bytes=_positive(env, "MNEME_MAX_BODY_BYTES", 1_000_000),
            data_dir=Path(env.get("MNEME_DATA_DIR") or ".mneme").expanduser(),
            chroma_url=url,
            collection_prefix=prefix,
            embeddings=(env.get("MNEME_EMBEDDINGS") or "use-m3").strip(),
            openai_api_key=(env.get("OPENAI_API_KEY") or "").strip() or None,
            openai_base_url=(env.get("OPENAI_BASE_URL") or "").strip() or None,
            chat_model=(env.get("MNEME_CHAT_MODEL") or "gpt-4o-mini").strip(),
            keys_file=_path(env, "MNEME_KEYS_FILE"),
            jwt_secret=_text(env, "MNEME_JWT_SECRET"),
            jwt_public_key=_text(env, "MNEME_JWT_PUBLIC_KEY"),
            jwks_file=_path(env, "MNEME_JWKS_FILE"),
            jwt_audience=_text(env, "MNEME_JWT_AUDIENCE"),
            jwt_issuer=_text(env, "MNEME_JWT_ISSUER"),
            jwt_user_claim=_text(env, "MNEME_JWT_USER_CLAIM") or "sub",
        )

    @property
    def key_path(self) -> Path:
        """The API key file (``keys_file``, else under the data directory); see ``mneme.keys.open_key_store``."""
        return self.keys_file or self.data_dir / "keys.sqlite3"

    @property
    def memory_only(self) -> bool:
        """True when no model endpoint is configured: no model calls are made."""
        return self.openai_api_key is None and self.openai_base_url is None


def _positive(env: Mapping[str, str], name: str, default: int) -> int:
    raw = (env.get(name) or str(default)).strip().replace("_", "")
    if not raw.isdigit() or int(raw) < 1:
        raise ConfigurationError(f"{name} must be a whole number above 0, got {raw!r}")
    return int(raw)


def _text(env: Mapping[str, str], name: str) -> str | None:
    return (env.get(name) or "").strip() or None


def _path(env: Mapping[str, str], name: str) -> Path | None:
    value = _text(env, name)
    return Path(value).expanduser() if value else None


def _seconds(env: Mapping[str, str], name: str, default: float) -> float:
    """A timeout setting in seconds (0 < s <= 3600), with a message naming the variable when malformed."""
    raw = (env.get(name) or "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 < value <= 3600:
        raise ConfigurationError(f"{name} must be a number of seconds between 0 and 3600, got {raw!r}")
    return value
