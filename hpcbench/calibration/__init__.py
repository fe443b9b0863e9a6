"""Judge calibration: the probe set (probes.py: programs with planted defects and
their labels) is built once as a small campaign, scored by a judge K times, and
measured (metrics.py: detection, false alarms, accuracy, bias, leakage,
stability); the stored result lowers the confidence of weak dimensions in that
judge's later scorings (calibrate.lookup / trust_summary, score/judge_trust.py)."""

from hpcbench.calibration.calibrate import calibration_dir, lookup, markdown, run, trust_summary
from hpcbench.calibration.probes import load_probes

__all__ = ["calibration_dir", "load_probes", "lookup", "markdown", "run", "trust_summary"]
