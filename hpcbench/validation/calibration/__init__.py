"""Judge calibration: the probe set (probes.py: programs with planted defects and
their labels) is built once as a small campaign, scored by a judge K times, and
measured (metrics.py: detection, false alarms, accuracy, bias, leakage,
stability); the stored result lowers the confidence of weak dimensions in that
judge's later scorings (hpcbench/judge/calibrations.py stores and finds them; score/judge_trust.py)."""

from hpcbench.validation.calibration.calibrate import calibration_markdown, run_calibration
from hpcbench.validation.calibration.probes import load_probes

__all__ = ["calibration_markdown", "load_probes", "run_calibration"]
