"""What a failed model request was: retryable or not, when to retry, context overflow.

Providers attach a :class:`ProviderErrorDetail` to the error message they produce (an
in-process field: the message on the wire keeps only ``errorMessage``). The session
layer reads it to retry, and :func:`is_context_overflow` to compact. A refusal of the credentials
(401/403) marks the message ``errorKind: "auth"`` (:func:`auth_refusal`) and is never retried.
"""

from __future__ import annotations

import re
import time
from typing import Any

import attrs


@attrs.define
class ProviderErrorDetail:
    status: int | None = None
    retryable: bool = False
    retry_after_s: float | None = None
    overflow: bool = False


AUTH_STATUS = {401, 403}  # the provider refused the credentials: never retried
MAX_AUTH_ERROR_CHARS = 300
auth_failures: dict[str, str] = {}  # provider -> its last refusal, for the daemon's life (:mod:`.access`)

RETRYABLE_STATUS = {408, 409, 425, 429, 500, 502, 503, 504, 529}

_OVERFLOW = re.compile(
    r"context[_ ]length[_ ]exceeded|maximum context length|prompt is too long|"
    r"exceeds? the (?:available )?context (?:size|window|length)|context window (?:is )?exceeded|"
    r"input length and `?max_tokens`? exceed context limit|too many tokens in (?:the )?(?:prompt|input)|"
    r"reduce the length of the messages|input is too long for (?:the )?model|"
    r"requested \d+ tokens.*context|input token count.*exceeds the maximum",
    re.IGNORECASE,
)

_RETRYABLE_TEXT = re.compile(
    r"overloaded|rate.?limit|too many requests|temporarily unavailable|try again|"
    r"connection (?:reset|refused|closed|error|lost)|server disconnected|timed? ?out|"
    r"\b(?:429|500|502|503|504|529)\b",
    re.IGNORECASE,
)


def overflow_text(text: str | None) -> bool:
    return bool(text and _OVERFLOW.search(text))


def classify(status: int | None, text: str) -> ProviderErrorDetail:
    overflow = overflow_text(text)
    if status is not None:
        retryable = status in RETRYABLE_STATUS and not overflow
    else:
        retryable = bool(_RETRYABLE_TEXT.search(text)) and not overflow
    return ProviderErrorDetail(status=status, retryable=retryable, overflow=overflow)


def parse_retry_after(headers: Any) -> float | None:
    """Seconds to wait from ``retry-after-ms`` / ``retry-after`` (seconds or an HTTP date)."""
    value = headers.get("retry-after-ms")
    if value:
        try:
            return max(0.0, float(value) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    import email.utils  # an HTTP date is rare; the email package is not loaded for every model request

    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def is_context_overflow(message: Any, context_window: int | None = None) -> bool:
    """Did this assistant message fail (or succeed) because the context was too large?

    True for a provider's overflow error text, and for an answer whose reported input
    exceeds the model's context window (some servers truncate silently and answer 200).
    """
    detail = getattr(message, "error_detail", None)
    if getattr(message, "stop_reason", None) == "error":
        return bool((detail and detail.overflow) or overflow_text(getattr(message, "error_message", None)))
    if context_window:
        usage = getattr(message, "usage", None)
        if usage is not None and usage.input + usage.cache_read > context_window:
            return True
    return False


def auth_refusal(provider: str, text: str, detail: ProviderErrorDetail | None) -> bool:
    """Whether a failure is the provider refusing the credentials; remembered when it is."""
    if detail is None or detail.status not in AUTH_STATUS:
        return False
    auth_failures[provider] = text[:MAX_AUTH_ERROR_CHARS]
    return True


def is_retryable(message: Any) -> bool:
    if getattr(message, "stop_reason", None) != "error" or getattr(message, "error_kind", None) == "auth":
        return False
    detail: ProviderErrorDetail | None = getattr(message, "error_detail", None)
    if detail is not None:
        return detail.retryable
    return classify(None, getattr(message, "error_message", "") or "").retryable
