"""`litellm:MODEL`: the built-in one-shot generator.

One chat completion at temperature 0 with the public problem and the output
contract; a completion-token limit large enough for the longest solutions
(the paper raised 4,096 to 32,000 because truncation invalidated answers); a
truncated answer (finish_reason "length") is a failed generation with that
reason. litellm is imported on first use only (it takes seconds to import)."""

from __future__ import annotations

import os
import time
from typing import Any

from hpcbench.agents.base import Conversation, GeneratingAgent, agent_name
from hpcbench.agents.contract import (
    PROMPT_VERSION,
    GenerationFailure,
    Reply,
    answer_from_text,
    render_user_prompt,
    system_prompt,
)
from hpcbench.agents.kinds import AgentRequest, agent_kind
from hpcbench.agents.llm_errors import failure_from_exception
from hpcbench.llm import litellm_module
from hpcbench.problem import Problem
from hpcbench.submission import Generation

DEFAULT_MAX_TOKENS = 32000
RAW_CAP = 1 << 20


class LitellmAgent(GeneratingAgent):
    kind = "litellm"
    supports_feedback = True

    def __init__(self, model: str, base_url: str | None = None, api_key: str | None = None,
                 max_tokens: int = DEFAULT_MAX_TOKENS, request_timeout_s: float = 600.0, num_retries: int = 2,
                 language: str = "c"):
        if not model:
            raise ValueError("litellm:MODEL needs a model name, e.g. litellm:openai/gpt-4o")
        self.model, self.base_url, self.max_tokens = model, base_url, max_tokens
        self.api_key = api_key or os.environ.get("HPCBENCH_API_KEY") or ("unused" if base_url else None)
        self.request_timeout_s, self.num_retries = request_timeout_s, num_retries
        self.name = agent_name(model)
        self.language = language  # what it is asked to write (AgentOptions.language)

    def conversation(self, problem: Problem) -> Conversation:
        return LitellmConversation(self, problem)

    async def preflight(self) -> GenerationFailure | None:
        """Before anything is planned: a key where the provider needs one, then one tiny
        completion (a few tokens, a fraction of a cent on paid providers) that proves the
        endpoint, the key and the model name together."""
        litellm = litellm_module()
        if not self.api_key and not self.base_url:
            try:
                env = litellm.validate_environment(model=self.model)
            except Exception:  # a provider litellm cannot check locally: the call below tells
                env = {}
            if env.get("missing_keys"):
                return GenerationFailure("credentials", f"no API key for {self.model}: set "
                                         f"{' or '.join(env['missing_keys'])} (or HPCBENCH_API_KEY)")
        kw: dict[str, Any] = dict(model=self.model, messages=[{"role": "user", "content": "Reply with: ok"}],
                                  max_tokens=8, temperature=0, timeout=min(60.0, self.request_timeout_s),
                                  num_retries=self.num_retries)
        if self.base_url:
            kw["api_base"] = self.base_url
        if self.api_key:
            kw["api_key"] = self.api_key
        try:
            await litellm.acompletion(**kw)
        except Exception as e:
            return failure_from_exception(e)
        return None

    async def complete(self, messages: list[dict[str, str]]) -> tuple[Reply, str]:
        """One completion: the checked reply and the assistant text (for a follow-up)."""
        litellm = litellm_module()
        kw: dict[str, Any] = dict(model=self.model, messages=messages, temperature=0, max_tokens=self.max_tokens,
                                  timeout=self.request_timeout_s, num_retries=self.num_retries)
        if self.base_url:
            kw["api_base"] = self.base_url
        if self.api_key:
            kw["api_key"] = self.api_key
        t0 = time.perf_counter()
        try:
            resp = await litellm.acompletion(**kw)
        except Exception as e:  # provider errors of every kind end this attempt, not the campaign
            return Reply(failure_from_exception(e), Generation(latency_s=time.perf_counter() - t0, turns=1)), ""
        latency = time.perf_counter() - t0
        usage = getattr(resp, "usage", None)
        gen = Generation(prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
                         completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
                         latency_s=latency, turns=1)
        try:
            gen.cost_usd = float(litellm.completion_cost(completion_response=resp) or 0.0)
        except Exception as e:  # a model litellm has no price for: cost unknown, said so
            gen.details.cost_note = f"no price known: {type(e).__name__}"
        choice = resp.choices[0] if resp.choices else None
        text = (choice.message.content or "") if choice is not None else ""
        finish = getattr(choice, "finish_reason", "") or ""
        gen.details.finish_reason = finish
        gen.details.prompt_version = PROMPT_VERSION
        if finish == "length":
            out: Any = GenerationFailure("truncated", f"answer cut at the completion-token limit "
                                         f"(max_tokens={self.max_tokens}, {gen.completion_tokens} tokens)")
        else:
            out = answer_from_text(text)
        return Reply(out, gen, raw=text[:RAW_CAP]), text


class LitellmConversation(Conversation):
    def __init__(self, agent: LitellmAgent, problem: Problem):
        self.agent = agent
        self.messages = [{"role": "system", "content": system_prompt(agent.language)},
                         {"role": "user", "content": render_user_prompt(problem, agent.language)}]

    async def first(self) -> Reply:
        reply, text = await self.agent.complete(self.messages)
        self.messages.append({"role": "assistant", "content": text})
        return reply

    async def follow_up(self, text: str) -> Reply:
        self.messages.append({"role": "user", "content": text})
        reply, answer = await self.agent.complete(self.messages)
        self.messages.append({"role": "assistant", "content": answer})
        return reply


@agent_kind("litellm", "litellm:MODEL")
def _litellm(arg: str, req: AgentRequest) -> LitellmAgent:
    o = req.opts
    return LitellmAgent(arg, base_url=o.base_url, api_key=o.api_key, max_tokens=o.max_tokens,
                        request_timeout_s=o.timeout_s, language=o.language)
