"""How to reach a judge: model, endpoint, concurrency, timeouts, retries."""

from __future__ import annotations

import os
import secrets
from dataclasses import asdict, dataclass, field
from typing import Any

# Read first; otherwise litellm looks up the provider's own variable (OPENAI_API_KEY ...).
API_KEY_ENV = "HPCBENCH_JUDGE_API_KEY"


@dataclass(frozen=True)
class JudgeConfig:
    model: str  # a litellm model string: "openai/NAME" for any OpenAI-compatible endpoint
    base_url: str | None = None  # a site's own OpenAI-compatible endpoint
    concurrency: int = 8  # calls in flight at once
    timeout_s: float = 120.0  # per HTTP call
    max_retries: int = 4  # on 429, timeouts, connection and 5xx errors; not on bad answers
    backoff_s: float = 1.0  # first wait; doubles each retry
    backoff_max_s: float = 60.0
    max_tokens: int = 1024
    # The n-th independent answer to the same prompt (calibration's stability repeats): part
    # of the cache key when > 0, so each repeat is asked once and then cached like any answer.
    sample: int = 0
    # Answers asked per judged task (`score --judge-samples K`): samples sample .. sample+K-1,
    # their mean scores and their spread goes into the report's intervals (hpcbench.score.judge_samples).
    samples: int = 1
    # The judge's stored calibration (hpcbench.validation.calibration.calibrate.trust_summary) that scorings apply
    # (hpcbench.score.judge_trust): recorded with the scoring's config, never applied silently.
    calibration: dict[str, Any] | None = None
    # The agent's text (sources and submission.json) a prompt may carry; past it the judged
    # dimensions are 0 without a call: a submission too large to judge has only itself to blame.
    max_source_chars: int = 200_000
    # Keys the boundary that fences the agent's text off in the prompts (judge/boundary.py):
    # scoring sets the campaign's own; never recorded, never shown.
    boundary_key: bytes = field(default_factory=lambda: secrets.token_bytes(32), repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.model.strip():
            raise ValueError("--judge: empty model name")
        if self.concurrency < 1:
            raise ValueError(f"--judge-concurrency: {self.concurrency} (must be at least 1)")
        if self.timeout_s <= 0:
            raise ValueError(f"--judge-timeout: {self.timeout_s} (must be positive)")
        if self.samples < 1:
            raise ValueError(f"--judge-samples: {self.samples} (must be at least 1)")
        if self.max_source_chars < 1:
            raise ValueError(f"--judge-max-chars: {self.max_source_chars} (must be positive)")

    def api_key(self) -> str | None:
        key = os.environ.get(API_KEY_ENV)
        if key:
            return key
        # A site's own endpoint often needs no key, but the OpenAI client refuses to
        # send a request without one; the provider's variable still wins if it is set.
        if self.base_url and self.model.startswith("openai/") and not os.environ.get("OPENAI_API_KEY"):
            return "no-key"
        return None

    def describe(self) -> dict:
        """What is recorded in a scoring's config (never the API key, never the boundary key)."""
        out = asdict(self)
        del out["boundary_key"]
        return out
