"""Judged scoring on the command line: the --judge options (run, score, calibrate),
`hpcbench agreement` and `hpcbench calibrate`. Nothing here imports litellm."""

from __future__ import annotations

import json
from pathlib import Path

import click

from hpcbench.judge.config import API_KEY_ENV, JudgeConfig
from hpcbench.validation.calibration.probes import DEFAULT_VERSION


def judge_options(f):
    """--judge, --judge-base-url, --judge-concurrency, --judge-timeout, --judge-retries, --judge-max-chars."""
    opts = [
        click.option("--judge", "judge_model", metavar="MODEL",
                     help="litellm model string of the LLM judge, e.g. openai/gpt-4o or openai/NAME with "
                          f"--judge-base-url; key from ${API_KEY_ENV} or the provider's variable "
                          "(OPENAI_API_KEY ...). Without it the LLM-judged evaluators are unscored."),
        click.option("--judge-base-url", metavar="URL",
                     help="OpenAI-compatible endpoint of the judge (a site's own server, vLLM ...)"),
        click.option("--judge-concurrency", type=click.IntRange(1, 256), default=8, show_default=True,
                     help="judge calls in flight at once"),
        click.option("--judge-timeout", type=click.FloatRange(min=0, min_open=True), default=120.0,
                     show_default=True, help="seconds per judge call"),
        click.option("--judge-retries", type=click.IntRange(0, 20), default=4, show_default=True,
                     help="retries with exponential backoff on rate limits, timeouts and server errors"),
        click.option("--judge-max-chars", type=click.IntRange(min=1), default=200_000, show_default=True,
                     help="characters of source and submission.json a judge is sent; a submission over it scores "
                          "0 on the judged dimensions (never sent, never cut)"),
    ]
    for opt in reversed(opts):
        f = opt(f)
    return f


def judge_config(judge_model: str | None, judge_base_url: str | None, judge_concurrency: int,
                 judge_timeout: float, judge_retries: int, judge_max_chars: int = 200_000) -> JudgeConfig | None:
    if judge_model is not None and not judge_model.strip():
        raise click.UsageError("--judge: empty model name; give a litellm model (e.g. openai/gpt-4o-mini), "
                               "or leave --judge out to score without a judge")
    if not judge_model:
        if judge_base_url:
            raise click.UsageError("--judge-base-url needs --judge MODEL")
        return None
    from hpcbench.judge.calibrations import lookup, trust_summary

    found = lookup(judge_model)  # the judge's latest calibration, applied to its scorings (score/judge_trust.py)
    return JudgeConfig(model=judge_model, base_url=judge_base_url, concurrency=judge_concurrency,
                       timeout_s=judge_timeout, max_retries=judge_retries, max_source_chars=judge_max_chars,
                       calibration=trust_summary(*found) if found else None)


def judge_summary(config: dict) -> str:
    st = config.get("judge_stats") or {}
    if not config.get("judge"):
        return "no judge configured: LLM-judged evaluators unscored"
    text = (f"judge {config['judge']['model']}: {st.get('tasks', 0)} judgements, {st.get('cached', 0)} from cache, "
            f"{st.get('http_calls', 0)} HTTP calls, {st.get('unscored', 0)} unscored, "
            f"new cost ${st.get('new_cost_usd', 0.0):.4f}")
    cal = config["judge"].get("calibration")
    if cal:
        low = sorted(d for d, m in cal["dimensions"].items() if m.get("low_confidence"))
        text += (f"\n  calibration {cal['file']} (probe set {cal['probe_set']}, threshold {cal['threshold']:g}): "
                 + (f"low confidence, confidence lowered: {', '.join(low)}" if low else "every dimension above it"))
    if st.get("zero_by_submission"):
        text += (f"\n  {st['zero_by_submission']} judgements 0 because of the submission itself: "
                 + "; ".join(f"{n} x {r[:160]}" for r, n in (st.get("zero_reasons") or {}).items()))
    if st.get("unscored"):
        text += "\n  why: " + "\n  why: ".join(f"{n} x {r}" for r, n in (st.get("reasons") or {}).items())
        text += ("\n  the answers received are cached: the same command later asks only for the unscored ones")
    return text


@click.command()
@click.argument("campaign_dir", type=click.Path(exists=True, file_okay=False))
@click.option("--scoring", "scoring_a", help="scoring A (default: the latest)")
@click.option("--against", "scoring_b", help="scoring B (default: the latest other scoring with another judge)")
@click.option("--format", "fmt", type=click.Choice(["md", "json"]), default="md", show_default=True)
def agreement(campaign_dir, scoring_a, scoring_b, fmt) -> None:
    """Agreement of two judges' scorings: per evaluator and composite, mean and
    largest absolute difference."""
    from hpcbench.plan.campaign import Campaign
    from hpcbench.score import agreement as ag
    from hpcbench.store.scorings import damaged_note, latest

    h5 = Campaign(Path(campaign_dir)).h5_path
    note = damaged_note(h5.parent)
    if note:
        click.echo(f"hpcbench: {note}", err=True)
    a = scoring_a or latest(h5.parent)
    b = scoring_b or ag.partner(h5, a)
    if b is None:
        raise LookupError(f"{h5}: no other scoring with a different judge than {a!r} to compare with; "
                          "score again with `hpcbench score --judge OTHER_MODEL`")
    if fmt == "json":
        click.echo(json.dumps(ag.agreement(h5, a, b), indent=1))
    else:
        click.echo("\n".join(ag.agreement_markdown_lines(h5, a, b)).lstrip("\n"))


@click.command()
@judge_options
@click.option("--repeats", type=click.IntRange(1, 20), default=1, show_default=True,
              help="ask the judge K times per probe (temperature 0) to measure its stability")
@click.option("--out", "--dir", "root", type=click.Path(file_okay=False),
              help="calibration folder: probe campaign and results (default: $HPCBENCH_CALIBRATION_DIR, "
                   "else $XDG_DATA_HOME/hpcbench/calibration)")
@click.option("--min-accuracy", type=click.FloatRange(0, 1), default=0.75, show_default=True,
              help="this judge's threshold: a dimension below it is low-confidence in its scorings")
@click.option("--flag-below", type=click.FloatRange(0, 1, min_open=True), default=0.625, show_default=True,
              help="a judge score below this counts as 'defect found'")
@click.option("--probes", "version", default=DEFAULT_VERSION, show_default=True, help="probe-set version")
@click.option("--site", default="local", show_default=True, help="site that builds and runs the probe campaign")
@click.option("--format", "fmt", type=click.Choice(["md", "json"]), default="md", show_default=True)
def calibrate(repeats, root, min_accuracy, flag_below, version, site, fmt, **judge) -> None:
    """Measure a judge on programs with planted defects: per dimension detection and
    false-alarm rates, accuracy, bias, leakage and stability; stored for `score` and `report`."""
    from hpcbench.validation.calibration import calibrate as cal

    cfg = judge_config(**judge)
    if cfg is None:
        raise click.UsageError("calibrate needs --judge MODEL")
    from hpcbench.cli.progress import PROBE_JOBS, Display

    with Display(PROBE_JOBS) as progress:  # the probe campaign's first build
        doc, path = cal.run_calibration(cfg, root, repeats, version, min_accuracy, flag_below, site, progress)
    click.echo(json.dumps({**doc, "file": str(path)}, indent=1) if fmt == "json"
               else cal.calibration_markdown(doc, path))


def register(main: click.Group) -> None:
    main.add_command(agreement)
    main.add_command(calibrate)
