"""The chat model, chosen by settings: an OpenAI-compatible endpoint, or none (memory-only mode)."""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import BaseChatModel

from mneme.config import Settings
from mneme.errors import ConfigurationError

PLACEHOLDER_API_KEY = "not-needed"
"""Sent to OpenAI-compatible servers that need no key (Ollama, llama.cpp) when only a base URL is set."""


def load_chat_model(
    settings: Settings | None = None, *, model: BaseChatModel | str | None = None, **kwargs: Any
) -> BaseChatModel | None:
    """Return the chat model to use, or ``None`` for memory-only mode.

    ``model`` wins when given: a model object is returned as is (how tests pass a fake), a name is
    built with the settings' endpoint (``"gpt-4o"``) or by ``init_chat_model`` when it names a provider
    (``"anthropic:claude-..."``). Otherwise ``ChatOpenAI(settings.chat_model)`` when ``OPENAI_API_KEY``
    or ``OPENAI_BASE_URL`` is set, else ``None``. Nothing is downloaded or called here.

    The OpenAI client gets ``timeout=settings.model_timeout`` and ``max_retries=0``: Mneme's own policy
    (``mneme.model_calls``) decides retries, so the SDK's do not multiply them and every attempt is counted.
    """
    if isinstance(model, BaseChatModel):
        return model
    settings = settings or Settings()
    if isinstance(model, str) and ":" in model and not model.startswith("openai:"):
        try:
            from langchain.chat_models import init_chat_model  # type: ignore[import-not-found]
        except ImportError as exc:
            raise ConfigurationError(f"model {model!r} needs the 'langchain' package and a provider") from exc
        return init_chat_model(model, **kwargs)  # type: ignore[no-any-return]
    name = model.removeprefix("openai:") if isinstance(model, str) else settings.chat_model
    if settings.memory_only:
        if model is not None:
            raise ConfigurationError(f"chat model {name!r} needs OPENAI_API_KEY or OPENAI_BASE_URL")
        return None
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(
        model=name,
        api_key=settings.openai_api_key or PLACEHOLDER_API_KEY,  # type: ignore[arg-type]
        base_url=settings.openai_base_url,
        **{"timeout": settings.model_timeout, "max_retries": 0, **kwargs},
    )
