"""LLM judges for the quality evaluators.

Nothing in this package imports litellm at module import: `client.py` imports
it on the first judge call (it takes seconds and, without a local price map,
reaches for the internet), so `hpcbench --help`, `collect` and the jobs stay fast.

Flow: a judged evaluator renders its prompt into a `JudgeTask` (task.py); scoring
gathers the tasks of every submission, `runner.run_tasks` answers them from the
cache (cache.py) or through a thread pool of litellm calls (client.py), validates
each answer (answer.py, one re-ask with the reason), and the evaluator turns each
outcome into its EvalResult."""

from hpcbench.judge.config import JudgeConfig

__all__ = ["JudgeConfig"]
