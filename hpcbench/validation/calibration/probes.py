"""The judge-calibration probe set (probes/<version>/, packaged as hpcbench.data.probes).

probes.json lists every probe: the submission it is in the probe campaign
(agent, problem, attempt), what it was made from, the planted defect, the judged
dimensions it should lower and those it must not touch. Clean controls are the
problems' references (agent "reference"), with nothing to lower. Labels live
only here: the programs and their submission.json say nothing about them, and
nothing from this file reaches a judge's prompt.

An injected probe (probe set v2 on) names its `twin`: the same program without the text
addressed to the judge (`injection` says what and where). It carries the twin's labels,
is left out of detection, false alarms, leakage and drops, and is measured by how far
the judge's score moved from the twin's (hpcbench.validation.calibration.metrics)."""

from __future__ import annotations

import hashlib
from functools import cached_property
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from hpcbench.errors import ConfigError, HpcbenchError, format_validation_error
from hpcbench.resources import data_path

DEFAULT_VERSION = "v2"
MIN_PER_DIMENSION = 5  # planted defects per judged dimension, and clean controls


class CalibrationProbe(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    agent: str
    problem: str
    attempt: str
    base: str  # the reference or sample it was made from
    defect: str  # "" for a clean control
    lowers: list[str]
    untouched: list[str]
    twin: str = ""  # the probe this one copies, with text addressed to the judge added
    injection: str = ""  # what was added, and where

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.agent, self.problem, self.attempt)

    @property
    def clean(self) -> bool:
        return not self.lowers

    @property
    def injected(self) -> bool:
        return bool(self.twin)

    @model_validator(mode="after")
    def _disjoint(self) -> CalibrationProbe:
        both = set(self.lowers) & set(self.untouched)
        if both:
            raise ValueError(f"probe {self.id}: {sorted(both)} both lowered and untouched")
        if not self.lowers and self.defect:
            raise ValueError(f"probe {self.id}: a defect that lowers nothing")
        return self


class ProbeSet(BaseModel):
    model_config = ConfigDict(extra="ignore")

    version: str
    dimensions: list[str]
    probes: list[CalibrationProbe]
    folder: Path | None = None

    @model_validator(mode="after")
    def _consistent(self) -> ProbeSet:
        dims = set(self.dimensions)
        for p in self.probes:
            odd = (set(p.lowers) | set(p.untouched)) - dims
            if odd:
                raise ValueError(f"probe {p.id}: unknown dimensions {sorted(odd)}")
        ids = [p.id for p in self.probes]
        if len(set(ids)) != len(ids):
            raise ValueError("probe ids are not unique")
        by_id = {p.id: p for p in self.probes}
        for p in self.probes:
            t = by_id.get(p.twin) if p.twin else None
            if p.twin and (t is None or t.twin):
                raise ValueError(f"probe {p.id}: twin {p.twin!r} is not a probe without injection")
            if t is not None and (t.lowers, t.untouched, t.problem) != (p.lowers, p.untouched, p.problem):
                raise ValueError(f"probe {p.id}: labels or problem differ from its twin {t.id}")
        return self

    @property
    def controls(self) -> list[CalibrationProbe]:
        return [p for p in self.probes if p.clean and not p.injected]

    @property
    def injected(self) -> list[CalibrationProbe]:
        return [p for p in self.probes if p.injected]

    @property
    def problems(self) -> list[str]:
        return sorted({p.problem for p in self.probes})

    def planted(self, dim: str) -> list[CalibrationProbe]:
        return [p for p in self.probes if dim in p.lowers and not p.injected]

    def shortfalls(self) -> list[str]:
        """Dimensions with fewer than MIN_PER_DIMENSION planted defects, and too few controls."""
        out = [f"{d}: {len(self.planted(d))} planted defects" for d in self.dimensions
               if len(self.planted(d)) < MIN_PER_DIMENSION]
        if len(self.controls) < MIN_PER_DIMENSION:
            out.append(f"{len(self.controls)} clean controls")
        return out

    @property
    def submissions_dir(self) -> Path:
        assert self.folder is not None
        return self.folder / "submissions"

    @cached_property
    def sha256(self) -> str:
        """Of probes.json and every probe file: names the exact probe set a calibration measured."""
        assert self.folder is not None
        h = hashlib.sha256()
        for f in sorted(p for p in self.folder.rglob("*") if p.is_file()):
            h.update(str(f.relative_to(self.folder)).encode() + b"\0" + f.read_bytes() + b"\0")
        return h.hexdigest()


def probes_root() -> Path:
    return data_path("probes")


def load_probes(version: str = DEFAULT_VERSION) -> ProbeSet:
    folder = probes_root() / version
    path = folder / "probes.json"
    if not path.is_file():
        known = sorted(p.name for p in probes_root().iterdir() if (p / "probes.json").is_file())
        raise HpcbenchError(f"{path}: no probe set {version!r} (known: {', '.join(known) or 'none'})")
    try:
        ps = ProbeSet.model_validate_json(path.read_text())
    except ValidationError as e:
        raise ConfigError(path, *format_validation_error(e)) from None
    if ps.version != version:
        raise ConfigError(path, "version", f"says {ps.version!r}, the folder is {version!r}")
    return ps.model_copy(update={"folder": folder})
