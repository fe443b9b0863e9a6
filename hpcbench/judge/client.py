"""One judge call through litellm, with our own retries and backoff.

litellm is imported lazily (hpcbench.llm), on the first call: importing it takes seconds,
and it would fetch a model price map from the internet unless told to use the
copy it ships. litellm's and the OpenAI client's own retries are switched off so
that every retry is ours: counted, backed off exponentially, and reported."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Any

from hpcbench.judge.config import JudgeConfig
from hpcbench.llm import litellm_module


@dataclass
class CallResult:
    text: str
    finish_reason: str
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    http_calls: int  # including failed attempts
    retries: int
    latency_s: float


class JudgeUnavailable(RuntimeError):
    """The judge could not be reached or refused the request; the reason is for the rationale."""

    def __init__(self, reason: str, http_calls: int, systemic: bool = True, blame: str = "judge") -> None:
        super().__init__(reason)
        self.http_calls = http_calls
        self.systemic = systemic  # every later call would fail the same way (outage, bad key, unknown model)
        self.blame = blame  # "submission": this prompt's size or content (judge/task.py JudgeOutcome.blame)


def _transient(lt: Any) -> tuple[type[BaseException], ...]:
    return (lt.RateLimitError, lt.Timeout, lt.APIConnectionError, lt.InternalServerError,
            lt.ServiceUnavailableError, lt.BadGatewayError)


def _cost(lt: Any, response: Any) -> float:
    try:
        return float(lt.completion_cost(completion_response=response) or 0.0)
    except Exception:  # a model litellm has no price for (every self-hosted one): cost unknown, recorded as 0
        return 0.0


def complete(cfg: JudgeConfig, messages: list[dict[str, str]], sleep: Any = time.sleep) -> CallResult:
    lt = litellm_module()
    transient = _transient(lt)
    calls = 0
    t0 = time.monotonic()
    while True:
        calls += 1
        try:
            resp = lt.completion(model=cfg.model, messages=messages, temperature=0, max_tokens=cfg.max_tokens,
                                 timeout=cfg.timeout_s, api_base=cfg.base_url, api_key=cfg.api_key(),
                                 num_retries=0, max_retries=0)
        except transient as e:
            if calls > cfg.max_retries:
                raise JudgeUnavailable(f"judge unavailable after {calls} attempts: {_describe(e, cfg)}",
                                       calls) from None
            sleep(min(cfg.backoff_max_s, cfg.backoff_s * 2 ** (calls - 1)))
            continue
        except Exception as e:  # auth, bad request, unknown model: retrying cannot help
            # A bad request is this prompt's problem only; one over the context window or against the
            # provider's content policy is the submission's own doing (litellm maps the providers'
            # errors to these classes: litellm_core_utils/exception_mapping_utils.py).
            systemic = not isinstance(e, lt.BadRequestError)
            mine = isinstance(e, (lt.ContextWindowExceededError, lt.ContentPolicyViolationError))
            raise JudgeUnavailable(f"judge refused the request: {_describe(e, cfg)}", calls, systemic,
                                   "submission" if mine else "judge") from None
        choice = resp.choices[0]
        usage = getattr(resp, "usage", None)
        return CallResult(text=choice.message.content or "", finish_reason=str(choice.finish_reason or "stop"),
                          prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
                          completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
                          cost_usd=_cost(lt, resp), http_calls=calls, retries=calls - 1,
                          latency_s=time.monotonic() - t0)


def _describe(e: BaseException, cfg: JudgeConfig) -> str:
    lt = litellm_module()
    if isinstance(e, lt.Timeout):
        return f"timed out after {cfg.timeout_s:g} s"
    if isinstance(e, lt.RateLimitError):
        return "rate limited (HTTP 429)"
    msg = str(e).strip().splitlines()[0] if str(e).strip() else ""
    # litellm repeats the class name and the provider: "litellm.XError: XError: OpenAIException - why"
    msg = re.sub(r"^(?:(?:litellm\.)?\w+(?:Error|Exception)(?::| -)\s*)+", "", msg)
    status = getattr(e, "status_code", None)
    return f"{type(e).__name__}{f' (HTTP {status})' if status else ''}: {msg[:300]}"
