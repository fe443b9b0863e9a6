"""The base of every input model read from a file (site, problem, checks, mutant libraries):
an unknown field is an error naming it (a typo is never ignored) and no number is inf or NaN."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class FrozenStrict(Strict):
    """Strict and immutable once loaded: problems and their hidden checks are shared by every
    job and evaluator of a campaign, none of which may change them."""

    model_config = ConfigDict(frozen=True)
