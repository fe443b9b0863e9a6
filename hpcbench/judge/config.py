"""How to reach a judge: model, endpoint, concurrency, timeouts, retries."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
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
    # The judge's stored calibration (hpcbench.calibration.calibrate.trust_summary) that scorings apply
    # (hpcbench.judge.trust): recorded with the scoring's config, never applied silently.
    calibration: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        if not self.model.strip():
            raise ValueError("--judge: empty model name")
        if self.concurrency < 1:
            raise ValueError(f"--judge-concurrency: {self.concurrency} (must be at least 1)")
        if self.timeout_s <= 0:
            raise ValueError(f"--judge-timeout: {self.timeout_s} (must be positive)")
        if self.samples < 1:
            raise ValueError(f"--judge-samples: {self.samples} (must be at least 1)")

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
        """What is recorded in a scoring's config (never the key)."""
        return asdict(self)
