"""One value drawn from a problem's declared range (problem.json `held_out.params` and
`performance.params`): the held-out cases (hpcbench/plan/held_out.py) and the performance case
(hpcbench/plan/perf_draw.py) draw their arguments the same way.

A held-out draw is stratified (issue 35): a value from the low band, the high band or the
interior of the range. The bands are the outer `edge` fraction of the range on the scale it is
drawn on (log for a `log` range), of the magnitude for `either_sign`; an int range's band holds
the admissible values (multiples of `multiple_of`) whose position falls in it, and at least the
extreme itself, so a range of few values still has its ends drawn."""

from __future__ import annotations

import decimal
import math
import random
from typing import Literal

from hpcbench.problem import HeldOutParam

Stratum = Literal["low", "interior", "high"]
STRATA: tuple[Stratum, ...] = ("low", "high", "interior")


def _position(p: HeldOutParam, x: float) -> float:
    """Where `x` lies in p's range, 0 at min and 1 at max, on the scale p is drawn on."""
    if p.max == p.min:
        return 0.0
    if p.log:
        return (math.log(x) - math.log(p.min)) / (math.log(p.max) - math.log(p.min))
    return (x - p.min) / (p.max - p.min)


def _at(p: HeldOutParam, t: float) -> float:
    if p.log:
        return math.exp(math.log(p.min) + t * (math.log(p.max) - math.log(p.min)))
    return p.min + t * (p.max - p.min)


def _ints(p: HeldOutParam) -> list[int]:
    m = p.multiple_of
    return [k * m for k in range(math.ceil(p.min / m), math.floor(p.max / m) + 1)]


def _in_stratum(t: float, stratum: Stratum, edge: float) -> bool:
    if stratum == "low":
        return t <= edge
    if stratum == "high":
        return t >= 1.0 - edge
    return edge < t < 1.0 - edge


def _draw_int(p: HeldOutParam, rng: random.Random, stratum: Stratum | None) -> str:
    values = _ints(p)
    if stratum is not None:
        band = [v for v in values if _in_stratum(_position(p, v), stratum, p.edge)]
        # no admissible value in the band: its extreme (low, high), or anything (a 2-value interior)
        fallback = {"low": values[:1], "high": values[-1:], "interior": values}[stratum]
        return str(rng.choice(band or fallback))
    lo, hi = p.min, p.max
    x = math.exp(rng.uniform(math.log(lo), math.log(hi))) if p.log else rng.uniform(lo, hi)
    m = p.multiple_of
    k = min(max(round(x / m), math.ceil(lo / m)), math.floor(hi / m))
    return str(int(k * m))


def draw_value(p: HeldOutParam, rng: random.Random, stratum: Stratum | None = None) -> str:
    """One value of `p` as the argument string the program receives: uniform over the range
    (None: the performance case, and the held-out draws of a problem with fewer than 3 cases),
    or within one stratum of it."""
    if p.kind == "int":
        return _draw_int(p, rng, stratum)
    lo, hi = p.min, p.max
    if stratum is None:
        x = math.exp(rng.uniform(math.log(lo), math.log(hi))) if p.log else rng.uniform(lo, hi)
    else:
        a, b = {"low": (0.0, p.edge), "high": (1.0 - p.edge, 1.0), "interior": (p.edge, 1.0 - p.edge)}[stratum]
        x = _at(p, rng.uniform(a, b))
    if p.either_sign and rng.random() < 0.5:
        x = -x
    if stratum is None:
        return f"{float(f'{x:.{p.digits}g}'):.{p.digits}g}"
    return _round_within(p, x, stratum)


def _round_within(p: HeldOutParam, x: float, stratum: Stratum) -> str:
    """`x` to p's digits, rounded toward its stratum where plain rounding would leave it (a value
    at a band's inner edge, 1.3397 of -scale 1.25-2.5's low band, would round to 1.34, inside)."""
    mag = abs(x)
    for rounding in (decimal.ROUND_HALF_EVEN, decimal.ROUND_FLOOR, decimal.ROUND_CEILING):
        d = decimal.Decimal(repr(mag))
        q = decimal.Decimal(1).scaleb(d.adjusted() - p.digits + 1)
        r = min(max(float(d.quantize(q, rounding=rounding)), p.min), p.max)
        if stratum_of(p, repr(r)) == stratum:
            break
    return f"{math.copysign(r, x):.{p.digits}g}"


def stratum_of(p: HeldOutParam, value: str) -> Stratum:
    """Which stratum a drawn value lies in (the magnitude's, for `either_sign`)."""
    t = _position(p, abs(float(value)))
    return "low" if t <= p.edge else "high" if t >= 1.0 - p.edge else "interior"


# A drawn value space counts as unbounded past this many values (a range through 0, where a
# real at fixed significant digits has ever finer values).
UNBOUNDED = 10**12


def _reals_between(lo: float, hi: float, digits: int) -> int:
    """How many numbers of at most `digits` significant digits lie in [lo, hi], 0 < lo <= hi."""
    count, e = 0, math.floor(math.log10(lo))
    while 10.0**e <= hi:
        step = decimal.Decimal(1).scaleb(e - digits + 1)
        a = max(decimal.Decimal(repr(lo)), decimal.Decimal(1).scaleb(e))
        b = min(decimal.Decimal(repr(hi)), decimal.Decimal(1).scaleb(e + 1) - step)
        if a <= b:
            count += int((b / step).to_integral_value(decimal.ROUND_FLOOR)
                         - (a / step).to_integral_value(decimal.ROUND_CEILING)) + 1
        e += 1
    return count


def value_count(p: HeldOutParam) -> int:
    """How many different argument strings a draw of `p` can give: the admissible integers, or
    the reals of `digits` significant digits in the range (both signs for `either_sign`). A
    program that embeds the answer for each can skip the solve (docs/security.md), so a drawn
    case's space must not be small (tests/test_draw_space.py)."""
    if p.kind == "int":
        return len(_ints(p))
    if p.min <= 0.0 <= p.max:
        return UNBOUNDED
    lo, hi = sorted((abs(p.min), abs(p.max)))
    return _reals_between(lo, hi, p.digits) * (2 if p.either_sign else 1)


def space_size(params: list[HeldOutParam]) -> int:
    """How many different cases a draw of `params` can give (each param drawn independently)."""
    return min(math.prod(value_count(p) for p in params), UNBOUNDED)
