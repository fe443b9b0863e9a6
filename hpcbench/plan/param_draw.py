"""One value drawn from a problem's declared range (problem.json `held_out.params` and
`performance.params`): the held-out cases (hpcbench/plan/held_out.py) and the performance case
(hpcbench/plan/perf_draw.py) draw their arguments the same way."""

from __future__ import annotations

import math
import random

from hpcbench.problem import HeldOutParam


def draw_value(p: HeldOutParam, rng: random.Random) -> str:
    """One value of `p` as the argument string the program receives."""
    lo, hi = p.min, p.max
    if p.log:
        x = math.exp(rng.uniform(math.log(lo), math.log(hi)))
    else:
        x = rng.uniform(lo, hi)
    if p.kind == "int":
        m = p.multiple_of
        k = min(max(round(x / m), math.ceil(lo / m)), math.floor(hi / m))
        return str(int(k * m))
    if p.either_sign and rng.random() < 0.5:
        x = -x
    return f"{float(f'{x:.{p.digits}g}'):.{p.digits}g}"
