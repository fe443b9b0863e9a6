"""What a judged evaluator hands scoring: a rendered prompt waiting for an
answer, and the outcome once the runner has one (or the reason it has none)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field

from hpcbench.judge.answer import JudgeAnswer


@dataclass
class JudgeTask:
    evaluator: str
    prompt_version: str  # e.g. "readability.v1"
    messages: list[dict[str, str]]
    submission: str = ""  # HDF5 path, for messages
    evidence: dict = field(default_factory=dict)  # what the prompt was built from, kept with the result
    oversize: str = ""  # why the prompt is not sent at all (the agent's text is over the judge's budget)

    @property
    def prompt_sha256(self) -> str:
        canon = json.dumps(self.messages, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        return hashlib.sha256(canon.encode()).hexdigest()

    def cache_key(self, model: str, sample: int = 0) -> str:
        """(model, prompt version, sha256 of the rendered prompt[, sample]), as one name."""
        extra = f"\nsample {sample}" if sample else ""  # sample 0 keeps the keys of existing caches
        return hashlib.sha256(f"{model}\n{self.prompt_version}\n{self.prompt_sha256}{extra}".encode()).hexdigest()


@dataclass
class JudgeOutcome:
    task: JudgeTask
    model: str
    answer: JudgeAnswer | None = None
    error: str = ""  # why there is no answer
    # Whose doing a missing answer is: "submission" (its own size or content: the prompt over the
    # budget or the judge's context window, a content-policy refusal) or "judge" (outage, auth, ...).
    blame: str = ""
    cached: bool = False
    http_calls: int = 0  # made in this scoring (0 for a cache hit)
    asked: int = 0  # answers requested (2 when the first failed validation)
    prompt_tokens: int = 0  # of the call(s) that produced the answer, also for a cache hit
    completion_tokens: int = 0
    cost_usd: float = 0.0
    latency_s: float = 0.0
    raw: str = ""  # the last reply text, kept for people chasing a bad answer
