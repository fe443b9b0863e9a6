"""Which submissions a campaign holds. Every `--agent` spec goes through
agents.make_agent: replay agents (samples, dir:PATH) hand over their validated
trees, generating agents (litellm:, a2a:, repair:) first write one attempt per
problem into <out>/generated, which is then loaded like any tree. A user's
`--submissions` tree comes next, and the bundled reference of every problem is
always added: it is every campaign's baseline."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from hpcbench.agents import AgentOptions, make_agent
from hpcbench.agents.dir_agent import reserved_agent_names
from hpcbench.agents.generate import GenerationError, Summary, generate_tree, read_errors
from hpcbench.plan.campaign import Campaign, Plan, create_campaign
from hpcbench.problem import ProblemBundle, known_problem_ids, load_problems, parse_ids
from hpcbench.site import SiteConfig
from hpcbench.submission import LoadedSubmission, Rejected, load_tree, reference_submission

Progress = Callable[[Counter], None]


@dataclass
class Gathered:
    submissions: list[LoadedSubmission] = field(default_factory=list)
    rejected: list[Rejected] = field(default_factory=list)
    generated: Summary | None = None  # what the generating agents wrote, when there were any
    errors: list[GenerationError] = field(default_factory=list)  # infrastructure: retried, not scored
    not_generated: list[str] = field(default_factory=list)  # a dry run: the generating agents it did not ask

    def add(self, loaded: tuple[list[LoadedSubmission], list[Rejected]]) -> None:
        self.submissions += loaded[0]
        self.rejected += loaded[1]


@dataclass
class Planned:
    campaign: Campaign
    plan: Plan
    gathered: Gathered


def agent_options(base_url: str | None = None, api_key_env: str = "HPCBENCH_API_KEY") -> AgentOptions:
    """Generating agents in `run`/`submit`: the endpoint given (else $HPCBENCH_BASE_URL) and
    the key in the variable named (never the key itself on a command line)."""
    return AgentOptions(base_url=base_url or os.environ.get("HPCBENCH_BASE_URL"),
                        api_key=os.environ.get(api_key_env))


@dataclass
class GatherOptions:
    attempts: int = 1  # per problem, for generating agents
    dry_run: bool = False  # generating agents are listed, never asked (a dry run calls no LLM)
    agents: AgentOptions = field(default_factory=agent_options)


def gather(specs: list[str], submissions: str | Path | None, problems: dict[str, ProblemBundle],
           generated: Path, progress: Progress | None = None, options: GatherOptions | None = None) -> Gathered:
    """The submissions of `specs` and the `submissions` tree, narrowed to `problems`,
    plus the bundled reference of each problem; every rejection with its reason."""
    known = known_problem_ids()
    out = Gathered()
    generating = []
    o = options or GatherOptions()
    opts = o.agents
    for spec in specs:
        agent = make_agent(spec, problems, known, opts)
        if agent.kind == "reference":
            continue  # added below for every problem, always from the bundle
        if agent.replay:
            out.add(agent.load())  # type: ignore[attr-defined]
        else:
            generating.append(agent)
    if generating and o.dry_run:
        out.not_generated = [f"{a.kind} agent {a.name or '?'}: {o.attempts} attempt(s) of each of "
                             f"{len(problems)} problem(s) would be generated" for a in generating]
    elif generating:
        out.generated = generate_tree(generating, problems, generated, opts.timeout_s, progress, o.attempts)
        out.add(load_tree(generated, known, reserved_agent_names()))
    if Path(generated).is_dir():  # errors of earlier runs too, until an answer replaces them
        out.errors = [e for e in read_errors(generated) if e.problem in problems]
    if submissions:
        out.add(load_tree(Path(submissions), known, reserved_agent_names()))
    out.submissions = [s for s in out.submissions if s.meta.problem in problems]  # --problems narrows
    # A problem whose bundled reference does not load is planned without one, and not scored.
    for pid, b in problems.items():
        res = reference_submission(b.folder, pid)
        if isinstance(res, LoadedSubmission):
            out.submissions.append(res)
        else:
            out.rejected.append(res)
    return out


def plan_campaign(out: Path, site: SiteConfig, specs: list[str], submissions: str | Path | None,
                  problem_ids: str | None, installs: dict | None = None, keep_work: bool = False,
                  progress: Progress | None = None, options: GatherOptions | None = None) -> Planned:
    """Gather the submissions and create (or extend) the campaign folder `out`."""
    problems = load_problems(None, parse_ids(problem_ids))
    got = gather(specs, submissions, problems, Path(out) / "generated", progress, options)
    campaign, plan = create_campaign(Path(out), site, problems, got.submissions, got.rejected, installs, keep_work,
                                     errors=[e.__dict__ for e in got.errors])
    return Planned(campaign, plan, got)
