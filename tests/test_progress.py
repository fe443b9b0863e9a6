"""The one progress display (hpcbench/cli/progress.py): plain lines off a terminal, a live
rich bar on one, the same words for every long command."""

import io
from collections import Counter

from hpcbench.cli.progress import GENERATE, JOB_STATES_KIND, JOBS, JUDGE, Display, judge_calls


def test_plain_lines_one_per_change_of_the_words():
    out = io.StringIO()
    d = Display(JOBS, stream=out, live=False)
    d(Counter(pending=2))
    d(Counter(pending=2))  # unchanged: no new line
    d(Counter(pending=1, running=1))
    d(Counter(running=1, done=1, failed=0))
    d.close()
    assert out.getvalue().splitlines() == ["jobs: 2 queued, 0 running, 0 done", "jobs: 1 queued, 1 running, 0 done",
                                           "jobs: 0 queued, 1 running, 1 done"]


def test_each_kind_names_its_states():
    assert JOB_STATES_KIND.line(Counter(pending=1, timeout=2, done=3)) == "jobs: 1 pending, 3 done, 2 timeout"
    assert GENERATE.line(Counter(done=3, failed=1)) == "generate: 0 queued, 0 running, 3 done (1 failed)"
    out = io.StringIO()
    progress = judge_calls(Display(JUDGE, stream=out, live=False))
    progress(1, 4)
    progress(4, 4)
    assert out.getvalue().splitlines() == ["judge calls: 3 pending, 1 answered", "judge calls: 0 pending, 4 answered"]


def test_live_display_draws_a_bar_of_finished_over_all():
    """On a terminal: rich's bar with finished/total (generate's failed are part of done,
    not counted twice), the words as its description, elapsed and time left."""
    out = io.StringIO()
    with Display(GENERATE, stream=out, live=True) as d:
        d(Counter(pending=3, running=1))
        d(Counter(pending=1, running=1, done=2, failed=1))
    text = out.getvalue()
    assert "generate: 1 queued, 1 running, 2 done (1 failed)" in text
    assert "2/4" in text and "left" in text


def test_scoring_shows_evaluated_submissions_then_judge_calls_one_live_display_at_a_time():
    """`score` and `run` show the deterministic evaluators' progress (10,000 submissions take
    a minute), then the judge calls; rich allows one live display at a time, so the first
    closes when all submissions are evaluated."""
    from hpcbench.cli.progress import EVALUATE, evaluated

    out = io.StringIO()
    ev, jd = Display(EVALUATE, stream=out, live=True), Display(JUDGE, stream=out, live=True)
    show, calls = evaluated(ev), judge_calls(jd)
    show(500, 1100)
    show(1100, 1100)
    assert ev._bar is None  # closed at the end of evaluation
    calls(1, 2)  # a second live display starts without rich's "Only one live display" error
    calls(2, 2)
    jd.close()
    assert "evaluators: 1100 of 1100 submissions" in out.getvalue() and "judge calls" in out.getvalue()
    plain = io.StringIO()
    evaluated(Display(EVALUATE, stream=plain, live=False))(0, 0)  # an empty campaign: one line, no division
    assert plain.getvalue().strip() == "evaluators: 0 of 0 submissions"
