"""Benchmark: concurrent judging over serial, through litellm and real HTTP.

The judge is tests/openai_server.py on 127.0.0.1 answering every request after a
fixed delay (a stand-in: no LLM provider is reachable from these machines), so
the figures are what the pool buys when the provider's latency dominates, which
is the case for real judges (seconds per answer). Prints, for each concurrency,
the wall time for N judgements and the speed-up over concurrency 1.

    python bench/judge_concurrency.py [--tasks 48] [--delay 0.25] [--levels 1,4,8,16]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hpcbench.judge.config import JudgeConfig  # noqa: E402
from hpcbench.judge.runner import run_tasks  # noqa: E402
from hpcbench.judge.task import JudgeTask  # noqa: E402
from tests.openai_server import OpenAIServer, Reply  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=48)
    ap.add_argument("--delay", type=float, default=0.25, help="seconds the judge takes per answer")
    ap.add_argument("--levels", default="1,4,8,16")
    a = ap.parse_args()
    levels = [int(x) for x in a.levels.split(",")]
    tasks = [JudgeTask(evaluator="readability", prompt_version="readability.v1",
                       messages=[{"role": "user", "content": f"program {i}"}]) for i in range(a.tasks)]
    answer = Reply.json({"score": 0.5, "confidence": 0.5, "rationale": "benchmark"}, delay=a.delay)
    with OpenAIServer(default=answer) as srv:
        warm = JudgeConfig(model="openai/bench", base_url=srv.base_url)
        run_tasks(tasks[:1], warm)  # litellm's import and first-call set-up are not what is measured
        base = None
        print(f"{a.tasks} judgements, judge answers after {a.delay:g} s (serial floor {a.tasks * a.delay:.1f} s)")
        print(f"{'concurrency':>11} {'wall s':>8} {'judgements/s':>13} {'speed-up':>9} {'ideal':>6}")
        for n in levels:
            cfg = JudgeConfig(model="openai/bench", base_url=srv.base_url, concurrency=n)
            srv.reset()
            t0 = time.perf_counter()
            outs = run_tasks(tasks, cfg)
            wall = time.perf_counter() - t0
            bad = sum(o.answer is None for o in outs)
            if bad or srv.count != a.tasks:
                print(f"concurrency {n}: {bad} unanswered, {srv.count} requests", file=sys.stderr)
                return 1
            base = base or wall
            print(f"{n:>11} {wall:>8.2f} {a.tasks / wall:>13.1f} {base / wall:>9.2f} {min(n, a.tasks):>6}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
