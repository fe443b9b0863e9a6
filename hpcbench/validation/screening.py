"""Screening: deciding a wrong program's verdict from a cheap part of its runs.

validate-checks runs hundreds of programs, most of them wrong everywhere, on a shared 2-core
machine. Two screens let a cheap campaign decide what the full one would, and only the
programs it leaves undecided run every case at every rank count. Each screen is a profile
whose `cases` selection planning applies (hpcbench/plan/cases.py), so the campaign's snapshot
holds the problem as it ran:

- generated mutants, at the problem's cheapest published case alone (profile
  generated-screen, cases `cheapest`): a mutant is killed as soon as one hidden check fails
  (mutation/verdict.py), and a check's score at a case depends only on that case's output and
  the reference's, so a check below full marks there keeps the full run below full marks; a
  gate failed there is failed in the full run;
- the library's wrong programs, at every published case at its smallest rank count and no
  held-out case (profile checks-screen, cases `one-rank`): the library's bar is accuracy below
  0.5, and the full run's accuracy is at most the screen's. A compare or sanity check scores
  each case at its worst rank count (more rank counts can only lower it), a refinement check
  reads each case's smallest rank count (the one the screen runs), every published check is
  scored in both (so the weights' sum is the same), and the held-out cases only lower a score
  ((1 - share) P + share min(H, P) <= P).

What screening gives up is the full run's accuracy of a program it decided: the screen's
figure is an upper bound, reported as such (report.Outcome.screened)."""

from hpcbench.plan.cases import cheapest_case, one_rank, screening_case

__all__ = ["cheapest_case", "one_rank", "screening_case"]
