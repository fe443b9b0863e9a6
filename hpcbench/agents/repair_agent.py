"""`repair:INNER:N`: a compile-fix loop around another agent.

The inner agent answers; its program is built and each public test case run
once, locally, through hpcbench.agents.sandbox (the MCP server's compile/run, i.e. the
jobs code with the site's limits). While something fails and rounds are left
(at most N), the compiler and run diagnostics go back to the inner agent in the
same conversation and it answers again. The last valid answer is the attempt;
turns, tokens, cost and latency are the sum over rounds, and each round's
outcome is recorded in submission.json (generation.rounds). The agent's name is
the inner name plus `+repairN`, so one-shot and repair results never share a
leaderboard row. Diagnostics are the program's own build and run output for the
public cases only: no hidden check or expected value is ever in them."""

from __future__ import annotations

import asyncio
from typing import Any

from hpcbench.agents.base import Agent, Conversation, GeneratingAgent
from hpcbench.agents.contract import Answer, GenerationFailure, Reply, render_feedback
from hpcbench.agents.kinds import AgentRequest, agent_kind
from hpcbench.agents.sandbox import Sandbox
from hpcbench.problem import Problem
from hpcbench.submission import Generation, RepairRound

TAIL = 4000


def diagnose(sandbox: Sandbox, problem: Problem, answer: Answer) -> tuple[bool, str, dict[str, Any]]:
    """Build the answer and run every public case once at its smallest rank count."""
    build = sandbox.compile(answer.files, answer.entry)
    summary: dict[str, Any] = {"build_ok": build["ok"], "runs": []}
    if not build["ok"]:
        detail = build.get("error") or "\n".join(build["errors"]) or build["stderr"][-TAIL:]
        return False, f"BUILD FAILED (exit {build['exit_code']}):\n{detail[-TAIL:]}", summary
    lines, ok = ["Build: ok."], True
    for case in problem.cases:
        ranks = min(case.ranks)
        run = sandbox.run(build["build_id"], [*answer.args, *case.args], ranks, case.time_limit_s)
        summary["runs"].append({"case": case.name, "ranks": ranks, "exit_code": run.get("exit_code"),
                                "stopped_reason": run.get("stopped_reason", "")})
        if run["ok"]:
            lines.append(f"Case {case.name} ({ranks} ranks): exit 0. stdout (tail):\n{run['stdout'][-1500:]}")
            continue
        ok = False
        why = run.get("stopped_reason") or f"exit code {run.get('exit_code')}"
        lines.append(f"Case {case.name} ({ranks} ranks) FAILED: {why}.\nstderr (tail):\n{run['stderr'][-TAIL:]}\n"
                     f"stdout (tail):\n{run['stdout'][-1500:]}")
    return ok, "\n".join(lines), summary


def _add(total: Generation, part: Generation) -> None:
    total.prompt_tokens += part.prompt_tokens
    total.completion_tokens += part.completion_tokens
    total.cost_usd += part.cost_usd
    total.latency_s += part.latency_s
    total.turns += part.turns


class RepairAgent(GeneratingAgent):
    kind = "repair"
    supports_feedback = True

    def __init__(self, inner: Agent, rounds: int, sandbox: Sandbox):
        if inner.replay or not inner.supports_feedback:
            raise ValueError(f"repair needs an agent that takes feedback (litellm, a2a), not {inner.kind}")
        if rounds < 1:
            raise ValueError("repair:INNER:N needs N >= 1 rounds")
        self.inner, self.rounds, self.sandbox = inner, rounds, sandbox

    async def start(self) -> None:
        await self.inner.start()
        self.name = f"{self.inner.name}+repair{self.rounds}"
        self.model = self.inner.model

    async def close(self) -> None:
        await self.inner.close()

    async def preflight(self) -> GenerationFailure | None:
        return await self.inner.preflight()

    def conversation(self, problem: Problem) -> Conversation:
        return RepairConversation(self, problem)


class RepairConversation(Conversation):
    def __init__(self, agent: RepairAgent, problem: Problem):
        self.agent, self.problem = agent, problem
        self.inner = agent.inner.conversation(problem)

    async def first(self) -> Reply:
        total = Generation()
        reply = await self.inner.first()
        _add(total, reply.generation)
        best, raw = reply, reply.raw
        rounds: list[dict[str, Any]] = []
        for n in range(1, self.agent.rounds + 1):
            ans = best.outcome
            if not isinstance(ans, Answer) or ans.refused:
                break  # nothing to build: a failure or a refusal is the answer
            ok, text, summary = await asyncio.to_thread(diagnose, self.agent.sandbox, self.problem, ans)
            rounds.append({"round": n, **summary, "ok": ok})
            if ok:
                break
            nxt = await self.inner.follow_up(render_feedback(text, n, self.agent.rounds))
            _add(total, nxt.generation)
            if isinstance(nxt.outcome, Answer):
                best, raw = nxt, nxt.raw
            else:  # a broken follow-up does not undo a valid earlier answer
                rounds[-1]["follow_up_failed"] = f"{nxt.outcome.kind}: {nxt.outcome.reason}"
                break
        # the answer's own facts (its prompt, stop reason, protocol), then the loop's
        total.details = best.generation.details.model_copy(update={
            "rounds": [RepairRound.model_validate(r) for r in rounds], "inner_agent": self.agent.inner.name})
        return Reply(best.outcome, total, raw=raw)

    async def close(self) -> None:
        await self.inner.close()


@agent_kind("repair", "repair:INNER:N")
def _repair(arg: str, req: AgentRequest) -> RepairAgent:
    inner_spec, _, n = arg.rpartition(":")
    if not inner_spec or not n.isdigit():
        raise ValueError("write repair:INNER:N, e.g. repair:litellm:openai/gpt-4o:3")
    inner = req.make(inner_spec)
    if req.sandbox_factory is None:
        from hpcbench.site import load_site

        sandbox = Sandbox.for_site(load_site(req.opts.site))
    else:
        sandbox = req.sandbox_factory()
    return RepairAgent(inner, int(n), sandbox)
