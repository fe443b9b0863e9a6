"""Answer judge tasks: from the cache, else through a thread pool of calls.

Each task is asked once; an answer failing validation is asked again once with
the reason appended to the conversation; a second failure leaves the task
without an answer and with both reasons. After `OUTAGE_AFTER` tasks in a row
found the judge unreachable, the rest are not sent at all (an outage would
otherwise cost every remaining task its full backoff) and say so: all of them
are re-scorable later, and the cache makes that re-score ask only for them."""

from __future__ import annotations

import dataclasses
import datetime as dt
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

from pydantic import ValidationError

from hpcbench.judge.answer import BadAnswer, JudgeAnswer, parse_answer, retry_message
from hpcbench.judge.cache import JudgeCache
from hpcbench.judge.client import JudgeUnavailable, complete
from hpcbench.judge.config import JudgeConfig
from hpcbench.judge.task import JudgeOutcome, JudgeTask

OUTAGE_AFTER = 3


class _Breaker:
    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.in_a_row = 0
        self.last = ""
        self.lock = threading.Lock()

    def open(self) -> bool:
        with self.lock:
            return self.in_a_row >= self.limit

    def record(self, failed: bool, reason: str = "") -> None:
        with self.lock:
            self.in_a_row = self.in_a_row + 1 if failed else 0
            self.last = reason or self.last


def _from_cache(task: JudgeTask, model: str, entry: dict) -> JudgeOutcome:
    return JudgeOutcome(task=task, model=model, answer=JudgeAnswer.model_validate(entry["answer"]), cached=True,
                        prompt_tokens=entry.get("prompt_tokens", 0),
                        completion_tokens=entry.get("completion_tokens", 0),
                        cost_usd=entry.get("cost_usd", 0.0), raw=entry.get("raw", ""))


def ask(task: JudgeTask, cfg: JudgeConfig, cache: JudgeCache | None = None,
        breaker: _Breaker | None = None) -> JudgeOutcome:
    key = task.cache_key(cfg.model, cfg.sample)
    entry = cache.get(key) if cache is not None else None
    if entry is not None:
        try:
            return _from_cache(task, cfg.model, entry)
        except (ValidationError, KeyError, TypeError):
            pass  # an entry this version cannot read is asked again (and replaced)
    out = JudgeOutcome(task=task, model=cfg.model)
    if task.oversize:  # never sent: the agent's text is over the judge's budget
        out.error, out.blame = task.oversize, "submission"
        return out
    if breaker is not None and breaker.open():
        out.error = f"not asked: the judge was unavailable ({breaker.last}); re-score later"
        return out
    messages = list(task.messages)
    reasons: list[str] = []
    for attempt in (1, 2):
        try:
            res = complete(cfg, messages)
        except JudgeUnavailable as e:
            out.http_calls += e.http_calls
            out.error, out.blame = str(e), e.blame
            if breaker is not None and e.systemic:
                breaker.record(True, str(e))
            return out
        if breaker is not None:
            breaker.record(False)
        out.asked = attempt
        out.http_calls += res.http_calls
        out.prompt_tokens += res.prompt_tokens
        out.completion_tokens += res.completion_tokens
        out.cost_usd += res.cost_usd
        out.latency_s += res.latency_s
        out.raw = res.text
        if res.finish_reason == "content_filter":  # the provider withheld the answer because of the prompt
            out.error, out.blame = "the judge's content filter withheld its answer (finish_reason 'content_filter')", \
                "submission"
            return out
        try:
            out.answer = parse_answer(res.text, res.finish_reason)
            break
        except BadAnswer as e:
            reasons.append(str(e))
            messages = [*messages, {"role": "assistant", "content": res.text},
                        {"role": "user", "content": retry_message(str(e))}]
    if out.answer is None:
        out.error = "judge answer invalid twice: " + "; then ".join(reasons)
        return out
    if cache is not None:
        cache.put(key, {"model": cfg.model, "prompt_version": task.prompt_version,
                        "prompt_sha256": task.prompt_sha256, "answer": out.answer.model_dump(),
                        "raw": out.raw, "prompt_tokens": out.prompt_tokens,
                        "completion_tokens": out.completion_tokens, "cost_usd": out.cost_usd,
                        "asked": out.asked, "sample": cfg.sample,
                        "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")})
    return out


def run_tasks(tasks: list[JudgeTask], cfg: JudgeConfig, cache: JudgeCache | None = None,
              progress: Callable[[int, int], None] | None = None,
              samples: Sequence[int] | None = None) -> list[JudgeOutcome]:
    """Outcomes in the order of `tasks`; cache hits never reach the pool. `samples[i]`: the
    judge sample task i asks for (each its own cache key), else cfg.sample for all."""
    cfgs = [dataclasses.replace(cfg, sample=k) for k in sorted(set(samples))] if samples is not None else [cfg]
    by_sample = {c.sample: c for c in cfgs}
    breaker = _Breaker(OUTAGE_AFTER)
    outcomes: list[JudgeOutcome | None] = [None] * len(tasks)
    done = 0
    lock = threading.Lock()

    def one(i: int) -> None:
        nonlocal done
        outcomes[i] = ask(tasks[i], by_sample[samples[i]] if samples is not None else cfg, cache, breaker)
        with lock:
            done += 1
            if progress:
                progress(done, len(tasks))

    with ThreadPoolExecutor(max_workers=cfg.concurrency, thread_name_prefix="judge") as pool:
        list(pool.map(one, range(len(tasks))))
    return [o for o in outcomes if o is not None]
