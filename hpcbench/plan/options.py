"""The options a campaign was started with, kept in `<campaign>/run.json`.

`hpcbench run --resume --out C` and `hpcbench retry C` read them back, so a campaign is
continued exactly as it was begun (the same agents, problems, site, attempts and judge)
without the user retyping them. Keys are never written here: they stay in the
environment, named by the *_env fields."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from hpcbench.errors import ConfigError, format_validation_error
from hpcbench.jobs.records import write_atomic

OPTIONS_FILE = "run.json"


class JudgeOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    judge_model: str | None = None
    judge_base_url: str | None = None
    judge_concurrency: int = 8
    judge_timeout: float = 120.0
    judge_retries: int = 4
    judge_samples: int = 1  # answers per judged evaluator (hpcbench.score.judge_samples)
    judge_max_chars: int = 200_000


class RunOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    verb: str = "run"  # run | submit: which pipeline `retry` repeats
    agents: list[str] = []
    submissions: str | None = None  # absolute path of the user's tree
    problems: str | None = None
    site: str = "local"
    attempts: int = 1
    keep_work: bool = False
    trust_submissions: bool = False  # agents' programs on a site with isolation: none (plan/trust.py)
    account: str | None = None
    base_url: str | None = None  # endpoint of generating agents
    api_key_env: str = "HPCBENCH_API_KEY"  # the variable holding their key (never the key)
    language: Literal["c", "python"] = "c"  # what generating agents write (docs/python.md)
    judge: JudgeOptions = JudgeOptions()
    bootstrap_resamples: int = 10_000  # the leaderboard's intervals (hpcbench.stats), recorded in the scoring
    bootstrap_seed: int = 0
    held_out_seed: int | None = None  # the held-out cases' draw (plan/held_out.py); None: random
    profile: str = "full"  # a named CampaignProfile or the path of one (hpcbench/profile.py)
    time_metric: str = "ratio"  # how execution_time scores: ratio (to the reference) | absolute (the paper's)


def options_path(campaign_dir: Path | str) -> Path:
    return Path(campaign_dir) / OPTIONS_FILE


def save_options(campaign_dir: Path | str, opts: RunOptions) -> None:
    Path(campaign_dir).mkdir(parents=True, exist_ok=True)
    write_atomic(options_path(campaign_dir), opts.model_dump_json(indent=1))


def load_options(campaign_dir: Path | str) -> RunOptions:
    """The recorded options, or an error naming the file and what to do."""
    path = options_path(campaign_dir)
    if not path.is_file():
        raise ConfigError(path, None, "not found: this campaign was not started by `hpcbench run` or `submit` "
                                      "of this version; start it again with its options")
    try:
        return RunOptions.model_validate_json(path.read_text(errors="replace"))
    except ValidationError as e:
        raise ConfigError(path, *format_validation_error(e)) from None
