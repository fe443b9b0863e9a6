"""Validation: how far hpcbench's own measurements can be trusted, measured on programs whose
right answer is known. One package, one report type (report.py), one shape of driver:

- checks.py: `validate-checks`, the hidden checks by mutation testing (library and generated
  mutants: mutation/), screened first (screening.py);
- performance.py: `validate-performance`, the performance metric on slower and as-fast programs;
- calibration/: `calibrate`, an LLM judge on programs with planted defects.

Every campaign they run goes through pipeline.execute under a named profile (hpcbench/profile.py);
library.py writes the hidden libraries as submission trees, campaigns.py runs and scores one."""

from hpcbench.validation.report import Outcome, ProblemReport, as_json, markdown, summary

__all__ = ["Outcome", "ProblemReport", "as_json", "markdown", "summary"]
