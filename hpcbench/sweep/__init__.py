"""Scaling sweeps (`hpcbench sweep`, docs/sweeps.md): plan.py (points from each problem's
`scaling` field, refusals), run.py (a sweep campaign through the site's executor),
analysis.py (speedup, efficiencies, Karp-Flatt, event shares, correctness of every point;
pure), store.py (the /sweep tables of campaign.h5), explain.py (their derivations)."""
