"""Site configs: one YAML file per machine in site-configs/, validated here."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from hpcbench.errors import ConfigError, format_validation_error
from hpcbench.jobs.records import Launcher, Limits


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Partition(Strict):
    name: str
    account: str = ""  # never written in a shared file: comes from --account/HPCBENCH_ACCOUNT
    qos: str = ""
    gpus_per_node: int = 0
    cores_per_node: int = 0
    constraint: str = ""
    max_walltime_min: int = 60


class VariantConfig(Strict):
    """A PETSc build. `petsc_dir: auto` means PETSC_DIR from the environment or
    the one scripts/setup.sh built into the venv."""

    name: str
    petsc_dir: str = "auto"
    petsc_arch: str = ""
    runtime_options: list[str] = []
    partition: str = ""
    provides: list[str] = []  # extra features beyond what petscconf.h says (e.g. gpu)


class SiteConfig(Strict):
    name: str
    description: str = ""
    scheduler: Literal["local", "slurm", "pbs"] = "local"
    partitions: list[Partition] = []
    setup: list[str] = []  # shell lines run before each job (modules, env)
    launcher: Launcher = Launcher()
    variants: list[VariantConfig] = Field(default_factory=lambda: [VariantConfig(name="cpu")])
    limits: Limits = Limits()
    storage_root: str = "./campaigns"
    cores: int = 0  # 0: os.cpu_count()
    timing_repeats: int = 3
    valgrind: bool = True

    def variant(self, name: str) -> VariantConfig:
        for v in self.variants:
            if v.name == name:
                return v
        raise KeyError(name)

    def total_cores(self) -> int:
        return self.cores or os.cpu_count() or 1


def site_configs_dir() -> Path:
    from hpcbench.resources import data_path

    return data_path("site_configs")


def list_sites() -> list[str]:
    return sorted(p.stem for p in site_configs_dir().glob("*.yaml"))


def load_site(name_or_path: str) -> SiteConfig:
    """A bundled site by name, or any YAML file by path."""
    p = Path(name_or_path)
    path = p if (p.suffix in (".yaml", ".yml") or p.is_file()) else site_configs_dir() / f"{name_or_path}.yaml"
    if not path.is_file():
        raise ConfigError(path, None, f"no such site config; bundled sites: {', '.join(list_sites())}")
    try:
        raw = yaml.safe_load(path.read_text())
    except yaml.YAMLError as e:
        raise ConfigError(path, None, f"malformed YAML: {e}") from None
    if not isinstance(raw, dict):
        raise ConfigError(path, None, "must be a YAML mapping")
    try:
        return SiteConfig.model_validate(raw)
    except ValidationError as e:
        raise ConfigError(path, *format_validation_error(e)) from None
