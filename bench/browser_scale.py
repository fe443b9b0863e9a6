"""Benchmark: the results browser at scale, in headless Chromium (Debian's, through Playwright).

Builds a SYNTHETIC campaign of N submissions from a real one (bench/store_scale.py's
replication: the seed's staged submissions and records, agents renamed), collects and
scores it, then measures:

  report html      `hpcbench report --format html` (report.html + browse/: the index of all
                   N, details of the first 500), wall seconds and the folder's size
  open             page load until the table is drawn (static folder from file://, and
                   `hpcbench view`'s server), milliseconds
  filter           choosing one agent in the filter until the count shows it
  sort             sorting by composite
  open submission  a submission's page drawn (evaluators, runs, sources)

Each browser figure is the median of --repeats page loads. Shared machines are noisy:
compare figures from one run.

Usage: python bench/browser_scale.py SEED_CAMPAIGN [--size 10000] [--repeats 3] [--keep DIR]"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from store_scale import build  # noqa: E402  (a sibling script, not a package)

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or "/usr/bin/chromium"


def cli(*args: str) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "from hpcbench.cli import main; main()", *args], check=True,
                   stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def measure(browser, url: str, agent: str) -> dict[str, float]:
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    out = {}
    t0 = time.perf_counter()
    page.goto(url)
    page.wait_for_selector("body[data-ready='1'] #subs tbody tr", timeout=120000)
    out["open"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    if page.eval_on_selector("#f-agent", "e => e.tagName") == "SELECT":
        page.select_option("#f-agent", agent)
    else:  # thousands of agents: a text box with suggestions
        page.fill("#f-agent", agent)
        page.press("#f-agent", "Enter")
    page.wait_for_function(f"document.querySelector('#subs tbody tr td') && "
                           f"document.querySelector('#subs tbody tr td').textContent === {agent!r}")
    out["filter"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    page.click("th[data-col='composite']")
    page.wait_for_selector("th.sorted-asc[data-col='composite']")
    out["sort"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    page.locator("#subs tbody tr").first.click()
    page.wait_for_selector("table.evaluators tbody tr", timeout=60000)
    out["open submission"] = time.perf_counter() - t0
    page.close()
    return out


def main() -> int:
    from playwright.sync_api import sync_playwright

    from hpcbench.report.browser.server import BrowserServer

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("seed", type=Path)
    ap.add_argument("--size", type=int, default=10000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--keep", type=Path)
    args = ap.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="hpcbench-browser-"))
    camp = work / f"c{args.size}"
    if not (camp / "campaign.h5").is_file():
        camp.mkdir(parents=True, exist_ok=True)
        build(args.seed, camp, args.size)
        print(f"collect: {cli('collect', str(camp)):.1f} s; score: {cli('score', str(camp)):.1f} s", flush=True)
    html = camp / "report" / "report.html"
    html.parent.mkdir(exist_ok=True)
    t = cli("report", str(camp), "--format", "html", "--out", str(html))
    size = sum(p.stat().st_size for p in (html.parent / "browse").rglob("*") if p.is_file())
    print(f"report html: {t:.1f} s, browse/ {size / 2**20:.1f} MiB "
          f"(index {(html.parent / 'browse/data/index.js').stat().st_size / 2**20:.1f} MiB)")
    srv = BrowserServer(camp / "campaign.h5", port=0).start()
    agent = next(r[1] for r in srv.index["rows"] if r[1] != "reference")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu",
                                                             "--disable-background-networking"])
        for name, url in (("static", (html.parent / "browse/index.html").as_uri()), ("view", srv.url)):
            runs = [measure(b, url, agent) for _ in range(args.repeats)]
            print(f"{name:6s} {len(srv.index['rows'])} submissions: " + ", ".join(
                f"{k} {statistics.median(r[k] for r in runs) * 1000:.0f} ms" for k in runs[0]), flush=True)
        b.close()
    srv.stop()
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
