"""Every error Mneme raises on purpose, in one place.

    MnemeError                      base: catch this to catch anything Mneme means to raise
    ├── ConfigurationError          a setting is missing, malformed or contradicts another
    ├── InvalidInputError           text, ids or filters a caller passed are unusable (empty, huge, hostile)
    │   ├── InvalidTenantError      a user id is missing or not a valid tenant id
    │   ├── RequestTooLargeError    a message or request is over a configured limit (HTTP 413)
    │   └── UnreadableFileError     a file to ingest is not text or not a regular file (binary, /dev/null, FIFO)
    ├── MemoryStoreError            the memory backend failed; the message says what to do
    │   ├── StoreUnavailableError   the Chroma server (or other backend) cannot be reached: names the URL
    │   │   └── EmbedderUnavailableError  the embeddings endpoint failed (down, timed out, 5xx): names it
    │   ├── EmbedderMismatchError   the store was built with another embedding model: names both
    │   ├── StoreLockedError        another process owns the embedded data directory: use a server
    │   └── JournalWriteError       a turn could not be written to the write journal: it was NOT kept
    ├── ModelOutputError            a chat model returned output Mneme cannot use (after its retry)
    │   └── ModelUnavailableError   the chat model could not be reached, timed out or failed (5xx): answer without it
    └── AuthenticationError         credentials are missing, malformed, expired or unknown (HTTP 401)
        └── ForbiddenError          valid credentials that may not do this (HTTP 403)

Backend exceptions are translated to these at one boundary (``mneme.memory.chroma``); users see the
messages, so each says what happened and what to do about it.
"""

from __future__ import annotations


class MnemeError(Exception):
    """Base class for every error Mneme raises on purpose."""


class ConfigurationError(MnemeError):
    """Raised when a setting is missing, malformed or contradicts another; shown to the user at start-up."""


class InvalidInputError(MnemeError, ValueError):
    """Raised when text, ids or filters passed by a caller cannot be used; nothing has been stored."""


class InvalidTenantError(InvalidInputError):
    """Raised when a user id (tenant) is missing or malformed; no memory is read or written."""


class RequestTooLargeError(InvalidInputError):
    """Raised when a message or request is over a configured limit (``MNEME_MAX_MESSAGE_CHARS`` …); HTTP 413.

    Nothing of the request has been stored; the message names the limit and how to change it.
    """


class UnreadableFileError(InvalidInputError):
    """Raised when a file to ingest cannot be read as text: binary, undecodable, a directory, a device or FIFO.

    The message names the file and what it is; nothing of it has been stored.
    """


class MemoryStoreError(MnemeError):
    """Raised when the memory backend fails; the message says what to do next."""


class StoreUnavailableError(MemoryStoreError):
    """Raised when the Chroma server (or another backend) cannot be reached; the message names the URL."""


class EmbedderUnavailableError(StoreUnavailableError):
    """Raised when an ``openai:<model>`` embeddings endpoint cannot be reached, times out or fails (5xx, 429).

    Like a Chroma outage: recall answers without memories (labelled) and journaled turns wait and are
    retried, never parked. The message names the endpoint's failure.
    """


class EmbedderMismatchError(MemoryStoreError):
    """Raised when a store was created with another embedding model; the message names both models."""


class StoreLockedError(MemoryStoreError):
    """Raised when another process already uses an embedded data directory; use a Chroma server instead."""


class ModelOutputError(MnemeError):
    """Raised when a chat model's output cannot be used even after a retry; callers fall back, never lose data."""


class AuthenticationError(MnemeError):
    """Raised when a request's credentials are missing, malformed, expired or unknown; servers answer 401."""


class ForbiddenError(AuthenticationError):
    """Raised when valid credentials may not do this (an admin-only route); servers answer 403."""


class ModelUnavailableError(ModelOutputError):
    """Raised when the chat model cannot be reached, times out or fails (5xx, 429, a garbled body).

    ``attempts`` is how many requests were really sent (0 while the model cools down after a timeout).
    The graph answers from memory and labels the turn instead of letting this reach the user.
    """

    def __init__(self, message: str, *, attempts: int = 1) -> None:
        super().__init__(message)
        self.attempts = attempts


class JournalWriteError(MemoryStoreError):
    """Raised when a turn cannot be written to the write journal (disk full, unwritable data directory).

    The turn was not acknowledged and nothing of it was kept: callers must see this (HTTP 507), never a
    success that stored nothing.
    """
