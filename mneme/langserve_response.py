"""How LangServe's invoke and batch responses are encoded: the same JSON, without a second walk of the output.

LangServe 0.3 builds the response model (the turn's output validated against ``TurnOutput``), then encodes it
with FastAPI's ``jsonable_encoder``, which dumps the model to JSON-ready data (pydantic, in Rust) and then
walks that data again node by node in Python (a couple of hundred calls per turn: the recalled items and their
metadata), only to drop dict keys that start with ``_sa`` (a SQLAlchemy hack). ``encode_response`` dumps the
model once and renders it; when the rendered JSON holds a key starting with ``_sa`` it returns what LangServe's
own function does, so the bytes are the same in every case (``tests/test_langserve_response.py``).
``install()`` puts it in place of ``langserve.api_handler._json_encode_response`` (``mneme.serve.create_app``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi.responses import JSONResponse
from pydantic import BaseModel

_ORIGINAL: dict[str, Callable[[BaseModel], JSONResponse]] = {}


def _unwrap_roots(obj: dict[str, Any], *, batch: bool) -> None:
    """LangServe's collapsing of ``{"root": ...}`` wrappers (what FastAPI does for a typed response)."""
    if batch:
        if not isinstance(obj["output"], list):
            raise AssertionError("Expected output to be a list")
        outputs = obj["output"]
        for idx, output in enumerate(outputs):
            if isinstance(output, dict) and "root" in output:
                outputs[idx] = output["root"]
        for events in obj.get("callback_events") or []:
            for idx, event in enumerate(events):
                if isinstance(event, dict) and "root" in event:
                    events[idx] = event["root"]
        return
    if isinstance(obj["output"], dict) and "root" in obj["output"]:
        obj["output"] = obj["output"]["root"]
    for idx, event in enumerate(obj.get("callback_events") or []):
        if isinstance(event, dict) and "root" in event:
            obj["callback_events"][idx] = event["root"]


def encode_response(model: BaseModel) -> JSONResponse:
    """An invoke or batch response as LangServe encodes it, byte for byte."""
    from langserve.validation import BatchBaseResponse, InvokeBaseResponse

    original = _ORIGINAL.get("encode")
    if not isinstance(model, InvokeBaseResponse | BatchBaseResponse) and original is not None:
        return original(model)
    obj = model.model_dump(mode="json", by_alias=True)
    _unwrap_roots(obj, batch=isinstance(model, BatchBaseResponse))
    response = JSONResponse(content=obj)
    if b'"_sa' in response.body and original is not None:  # a key jsonable_encoder drops: LangServe's own way
        return original(model)
    return response


def install() -> None:
    """Encode LangServe's responses with ``encode_response`` from now on (idempotent)."""
    from langserve import api_handler

    if "encode" not in _ORIGINAL:
        original = getattr(api_handler, "_json_encode_response", None)
        if original is None:  # another LangServe release: keep its own encoding, which is only slower
            return
        _ORIGINAL["encode"] = original
    api_handler._json_encode_response = encode_response
