"""What a degraded turn says: stable labels for the API, and the line the user reads in their language.

The labels (English, fixed) are the values of the state's and the HTTP response's ``degraded`` list;
clients may match on them. ``DEGRADED_LINES`` holds the line put at the top of the reply.
"""

MODEL_UNAVAILABLE = "model unavailable: answering from memory"
STORE_UNAVAILABLE = "memory store unavailable: answering without recall"
REWRITE_FAILED = "query rewrite unavailable: searching with the message as written"
EXTRACTION_FAILED = "memory extraction unavailable: facts taken by patterns"

DEGRADED_LINES: dict[str, dict[str, str]] = {
    MODEL_UNAVAILABLE: {"en": "[model unavailable: answering from memory]",
                        "zh": "[对话模型暂时不可用：以下根据记忆回答]"},
    STORE_UNAVAILABLE: {"en": "[memory store unavailable: answering without recall]",
                        "zh": "[记忆库暂时不可用：本次回答未使用记忆]"},
}
"""The reply's first line for the labels a user should see (rewrite and extraction fall back silently)."""
