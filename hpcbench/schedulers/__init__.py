"""Each scheduler's compute-side face: its allocation view (hosts, cores, job id, the variables a
step keeps, a step on some hosts) and its settings model; read by jobs/ through `view_for`, by
the site loader through `settings_model` (base.py). Its login-side executor: hpcbench/executors/."""

from hpcbench.schedulers.base import (
    SCHEDULERS,
    AllocationView,
    register_scheduler,
    settings_model,
    view_class,
    view_for,
)
from hpcbench.schedulers.settings import BatchConfig

__all__ = ["SCHEDULERS", "AllocationView", "BatchConfig", "register_scheduler", "settings_model", "view_class",
           "view_for"]
