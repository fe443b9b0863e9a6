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
from hpcbench.errors import ConfigError
from hpcbench.plan.campaign import Campaign, Plan, PlanRequest
from hpcbench.plan.options import RunOptions
from hpcbench.problem import ProblemBundle, known_problem_ids, load_problems, parse_ids
from hpcbench.submission import LoadedSubmission, Rejected, load_tree, reference_submission

Progress = Callable[[Counter], None]


@dataclass
class Gathered:
    submissions: list[LoadedSubmission] = field(default_factory=list)
    rejected: list[Rejected] = field(default_factory=list)
    generated: Summary | None = None  # what the generating agents wrote, when there were any
    errors: list[GenerationError] = field(default_factory=list)  # infrastructure: retried, not scored
    not_generated: list[str] = field(default_factory=list)  # a dry run: the generating agents it did not ask
    notes: list[str] = field(default_factory=list)  # what the generating agents were not asked, and why

    def add(self, loaded: tuple[list[LoadedSubmission], list[Rejected]]) -> None:
        self.submissions += loaded[0]
        self.rejected += loaded[1]


@dataclass
class Planned:
    campaign: Campaign
    plan: Plan
    gathered: Gathered


def agent_options(base_url: str | None = None, api_key_env: str = "HPCBENCH_API_KEY",
                  language: str = "c") -> AgentOptions:
    """Generating agents in `run`/`submit`: the endpoint given (else $HPCBENCH_BASE_URL), the
    key in the variable named (never the key itself on a command line), the language they write."""
    return AgentOptions(base_url=base_url or os.environ.get("HPCBENCH_BASE_URL"),
                        api_key=os.environ.get(api_key_env), language=language)


def accepting(problems: dict[str, ProblemBundle], language: str) -> tuple[dict[str, ProblemBundle], list[str]]:
    """The problems whose problem.json `languages` accept `language`, and the ids of the others."""
    ok = {pid: b for pid, b in problems.items() if language in b.problem.languages}
    return ok, sorted(set(problems) - set(ok))


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
    rules = {pid: b.problem for pid, b in problems.items()}  # what each problem lets args and ranks ask
    asked, other = accepting(problems, opts.language)
    if generating and other:
        out.notes.append(f"--language {opts.language}: {len(other)} problem(s) accept only "
                                 f"{'C' if opts.language != 'c' else 'another language'}, not asked of the "
                                 f"generating agents ({', '.join(other[:6])}{' ...' if len(other) > 6 else ''})")
    if generating and o.dry_run:
        out.not_generated += [f"{a.kind} agent {a.name or '?'}: {o.attempts} attempt(s) of each of "
                              f"{len(asked)} problem(s) would be generated" for a in generating]
    elif generating:
        out.generated = generate_tree(generating, asked, generated, opts.timeout_s, progress, o.attempts)
        out.add(load_tree(generated, known, reserved_agent_names(), rules))
    if Path(generated).is_dir():  # errors of earlier runs too, until an answer replaces them
        out.errors = [e for e in read_errors(generated) if e.problem in problems]
    if submissions:
        out.add(load_tree(Path(submissions), known, reserved_agent_names(), rules))
    out.submissions = [s for s in out.submissions if s.meta.problem in problems]  # --problems narrows
    # A problem whose bundled reference does not load is planned without one, and not scored.
    for pid, b in problems.items():
        res = reference_submission(b.folder, pid)
        if isinstance(res, LoadedSubmission):
            out.submissions.append(res)
        else:
            out.rejected.append(res)
    return out


def where_refusal(out: Path, submissions: str | Path | None, specs: list[str]) -> str | None:
    """Why the campaign may not be written at `out`: inside a tree it reads (a submission tree,
    a dir: agent's, the bundled problems or samples) its snapshot would put the hidden checks
    where agents' files are, and its own staged copies would be read back as submissions; a
    folder that holds other things is not a campaign to extend."""
    from hpcbench.agents.dir_agent import samples_root
    from hpcbench.problem import default_problems_dir

    o = Path(out).resolve()
    trees = [("the submission tree", Path(submissions))] if submissions else []
    trees += [(f"the tree of --agent {s}", Path(s[4:])) for s in specs if s.startswith("dir:")]
    trees += [("the bundled problems", default_problems_dir()), ("the bundled samples", samples_root())]
    for what, t in trees:
        t = t.resolve()
        if o == t or t in o.parents:
            return f"{out} is inside {what} ({t}); write the campaign elsewhere"
    if o.is_dir() and not (o / "campaign.json").is_file():
        ours = {"run.json", ".hpcbench.lock", ".hpcbench.lock.json", "generated"}
        other = sorted(p.name for p in o.iterdir() if p.name not in ours)
        if other:
            return (f"{out} holds {', '.join(other[:5])}{' ...' if len(other) > 5 else ''} but no campaign.json: "
                    "give a new or empty folder, or an existing campaign")
    return None


def request_for(out: Path, opts: RunOptions, progress: Progress | None = None, dry_run: bool = False
                ) -> tuple[Gathered, PlanRequest]:
    """What a campaign of `opts` at `out` runs: the submissions gathered (generating agents
    write <out>/generated first; a dry run only lists them) and the plan's request."""
    if opts.submissions and not Path(opts.submissions).is_dir():
        raise ConfigError("--submissions", None, f"{opts.submissions}: no such folder (a tree <agent>/<problem>/"
                                                 "<attempt>/ is expected)")
    why = where_refusal(Path(out), opts.submissions, opts.agents)
    if why:
        raise ConfigError("--out", None, why)
    problems = load_problems(None, parse_ids(opts.problems))
    options = GatherOptions(attempts=opts.attempts, dry_run=dry_run,
                            agents=agent_options(opts.base_url, opts.api_key_env, opts.language))
    got = gather(opts.agents, opts.submissions, problems, Path(out) / "generated", progress, options)
    return got, PlanRequest(problems, got.submissions, got.rejected, [e.__dict__ for e in got.errors],
                            keep_work=opts.keep_work)
