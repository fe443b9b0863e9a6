"""Which failures of an LLM call are the infrastructure's and which are the model's.

A call that raised never reached the model, or its answer never reached us: no key,
a refused key, no route to the endpoint, a quota, a provider outage, a request timeout
after litellm's own retries. None of these says anything about the model under test,
so they become `GenerationFailure`s of an infrastructure kind (contract.INFRA_KINDS):
errors that `hpcbench retry` redoes, never submissions on a leaderboard. Only what the
model answered (malformed, truncated, no code ...) is the model's failure.

litellm maps every provider's errors onto OpenAI's exception classes
(docs.litellm.ai/docs/exception_mapping); the classes are looked up by name so this
module imports without litellm."""

from __future__ import annotations

import re

from hpcbench.agents.contract import GenerationFailure

# Exception class name (anywhere in the MRO) -> infrastructure kind, most specific first:
# litellm's Timeout subclasses APIConnectionError, its ContextWindowExceededError BadRequestError.
_BY_CLASS: tuple[tuple[str, str], ...] = (
    ("AuthenticationError", "credentials"),
    ("PermissionDeniedError", "credentials"),
    ("RateLimitError", "rate_limited"),
    ("BudgetExceededError", "rate_limited"),
    ("Timeout", "request_timeout"),
    ("APITimeoutError", "request_timeout"),
    ("TimeoutException", "request_timeout"),  # httpx
    ("APIConnectionError", "unreachable"),
    ("ConnectError", "unreachable"),  # httpx
    ("ServiceUnavailableError", "provider_error"),
    ("InternalServerError", "provider_error"),
    ("BadGatewayError", "provider_error"),
    ("NotFoundError", "provider_error"),
    ("BadRequestError", "provider_error"),
    ("UnprocessableEntityError", "provider_error"),
    ("APIStatusError", "provider_error"),
    ("APIError", "provider_error"),
)
# Clients that find no key raise before any request, often as a plain connection or
# value error whose message is the only sign ("Missing credentials", "api_key must be set").
_NO_KEY = re.compile(r"api[_ ]?key|credential|unauthori[sz]ed|\b401\b|\b403\b", re.I)


def infrastructure_kind(exc: BaseException) -> str | None:
    """The infrastructure kind of an exception raised by an LLM client, or None when it is
    not a provider error at all (a bug of ours or of the client: kept as protocol_error)."""
    names = [c.__name__ for c in type(exc).__mro__]
    for cls, kind in _BY_CLASS:
        if cls in names:
            if kind in ("unreachable", "provider_error") and _NO_KEY.search(str(exc)):
                return "credentials"
            return kind
    if isinstance(exc, (ConnectionError, TimeoutError)):
        return "request_timeout" if isinstance(exc, TimeoutError) else "unreachable"
    return None


def failure_from_exception(exc: BaseException) -> GenerationFailure:
    """The failure an exception of an LLM call stands for, with its whole message: the
    user must see the cause in full to fix it (the key, the URL, the model name)."""
    text = f"{type(exc).__name__}: {exc}".strip()
    return GenerationFailure(infrastructure_kind(exc) or "protocol_error", text[:4000])
