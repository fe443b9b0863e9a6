"""The results browser in a real headless Chromium (Debian's, driven by Playwright): the
static folder written beside report.html (opened from file://, no server, nothing fetched
from outside) and `hpcbench view`'s server. Filter, sort, open a submission; agent text
is shown as text, never parsed as HTML."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hpcbench.report.browser import write_static
from hpcbench.report.browser.server import BrowserServer

pytestmark = [pytest.mark.slow, pytest.mark.petsc]

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    assert CHROMIUM, "headless Chromium is needed: scripts/setup.sh installs Debian's chromium package"
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
            "--no-first-run", "--disable-sync"])
        yield b
        b.close()


def _open(browser, url: str, outside: list):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.on("request", lambda r: outside.append(r.url) if not r.url.startswith(("file:", "http://127.0.0.1")) else None)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(url)
    page.wait_for_selector("body[data-ready='1']", timeout=20000)
    return page, errors


def _agents(page) -> list[str]:
    return page.eval_on_selector_all("#subs tbody tr", "rows => rows.map(r => r.cells[0].textContent)")


def _exercise(page, n_rows: int) -> None:
    assert page.text_content("#count") == f"{n_rows} of {n_rows} submissions"
    assert page.locator("#subs tbody tr").count() == min(100, n_rows)
    assert page.locator("table.leaderboard tbody tr").count() >= 2
    assert page.locator("table.heatmap").count() == 1

    page.select_option("#f-agent", "reference")  # filter
    page.wait_for_function("document.querySelector('#count').textContent.startsWith("
                           "String(document.querySelectorAll('#subs tbody tr').length))")
    assert set(_agents(page)) == {"reference"}
    n_ref = page.locator("#subs tbody tr").count()
    assert page.text_content("#count") == f"{n_ref} of {n_rows} submissions" and 0 < n_ref < n_rows

    page.select_option("#f-agent", "")
    page.click("th[data-col='composite']")  # sort ascending, then descending (two quick clicks:
    page.click("th[data-col='composite']")  # the second must see the first's sort, drawn or not)
    page.wait_for_selector("th[data-col='composite'].sorted-desc")
    comps = page.eval_on_selector_all(
        "#subs tbody tr", "rows => rows.map(r => r.cells[4].textContent)")
    nums = [float(c) for c in comps if c != "–"]
    assert nums == sorted(nums, reverse=True) and len(nums) >= 2
    # a sort and a filter in one task, before any redraw: the filter must keep the new sort (it
    # read the query the table was drawn with, and dropped it), and so must the pager's buttons
    page.evaluate("""() => { document.querySelector("th[data-col='stage']").click();
        const s = document.querySelector('#f-agent'); s.value = 'reference'; s.dispatchEvent(new Event('change')); }""")
    page.wait_for_function("location.hash.includes('agent=reference')")
    assert "sort=stage" in page.evaluate("location.hash")
    page.select_option("#f-agent", "")
    page.wait_for_function(f"document.querySelector('#count').textContent.startsWith('{n_rows} of')")

    page.fill("#f-q", "wrong answer")
    page.press("#f-q", "Enter")
    # the hash changes at once, the table when it is drawn again (served: after a fetch)
    page.wait_for_function("location.hash.includes('q=wrong') && (r => r.length > 0 && r.every(t => "
                           "t.includes('wrong answer')))([...document.querySelectorAll('#subs tbody tr')]"
                           ".map(r => r.cells[6].textContent))")
    reasons = page.eval_on_selector_all("#subs tbody tr", "rows => rows.map(r => r.cells[6].textContent)")
    assert reasons and all("wrong answer" in r for r in reasons)

    page.goto(page.url.split("#")[0] + "#/?agent=reference")  # a reference: it reaches every evaluator
    page.wait_for_selector("#subs tbody tr")
    first = page.locator("#subs tbody tr").first
    who = first.locator("td").nth(0).text_content(), first.locator("td").nth(1).text_content()
    first.click()  # a submission's page
    page.wait_for_selector("table.evaluators tbody tr", timeout=20000)
    head = page.text_content("#detail h2")
    assert head.startswith(f"{who[0]} / {who[1]} / attempt")
    assert page.locator("table.evaluators tbody tr").count() >= 5
    src = page.locator("pre.code").first.text_content()
    assert "#include <petsc" in src  # angle brackets of the source shown as text
    assert page.locator("pre.code *").evaluate_all("els => els.filter(e => e.tagName !== 'SPAN').length") == 0
    page.locator("table.evaluators td.src").first.click()  # a number: the command that re-derives it
    assert page.text_content("#explain").startswith("re-derive: hpcbench explain ")


def test_static_browser_beside_the_report(sample_campaign, browser, tmp_path):
    index = write_static(sample_campaign / "campaign.h5", tmp_path / "browse")
    rows = json.loads((tmp_path / "browse/data/index.js").read_text()[len("HPCB.index("):-3])["rows"]
    outside: list = []
    page, errors = _open(browser, index.as_uri(), outside)
    _exercise(page, len(rows))
    assert not errors and not outside, (errors, outside)


def test_static_browser_past_its_details_limit_points_to_view(sample_campaign, browser, tmp_path):
    index = write_static(sample_campaign / "campaign.h5", tmp_path / "browse", details_limit=0)
    page, errors = _open(browser, index.as_uri() + "#/sub/3", [])
    page.wait_for_selector("#detail.warn")
    assert f"hpcbench view {sample_campaign}" in page.text_content("#detail") and not errors


def test_view_serves_the_same_browser(sample_campaign, browser):
    srv = BrowserServer(sample_campaign / "campaign.h5", port=0).start()
    try:
        outside: list = []
        page, errors = _open(browser, srv.url, outside)
        _exercise(page, len(srv.index["rows"]))
        assert not errors and not outside, (errors, outside)
        status, _, body = srv.answer("/api/sub/999999.json")
        assert status == 404
    finally:
        srv.stop()


def test_view_command_starts_and_names_its_url(sample_campaign):
    p = subprocess.Popen([str(Path(sys.executable).parent / "hpcbench"), "view", str(sample_campaign), "--port", "0"],
                         stderr=subprocess.PIPE, text=True)
    try:
        line = p.stderr.readline()
        assert line.startswith("hpcbench view: http://127.0.0.1:") and "submissions" in line
        import urllib.request

        url = line.split()[2]
        data = json.loads(urllib.request.urlopen(url + "api/index.json", timeout=30).read())
        assert data["rows"] and data["details"] == "server"
    finally:
        p.terminate()
        p.wait(timeout=30)


def test_view_answers_only_requests_that_name_it(sample_campaign):
    """A page the operator visits can point its own name at 127.0.0.1 (DNS rebinding): its
    requests carry that name as Host, and another site's Origin."""
    import http.client

    srv = BrowserServer(sample_campaign / "campaign.h5", port=0).start()
    port = srv.httpd.server_address[1]

    def get(headers: dict[str, str]) -> tuple[int, bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        conn.putrequest("GET", "/api/index.json", skip_host=True)
        for k, v in headers.items():
            conn.putheader(k, v)
        conn.endheaders()
        r = conn.getresponse()
        return r.status, r.read()

    try:
        assert get({"Host": f"127.0.0.1:{port}"})[0] == 200
        assert get({"Host": f"localhost:{port}", "Origin": f"http://localhost:{port}"})[0] == 200
        status, body = get({"Host": f"rebound.example:{port}"})
        assert status == 403 and b"rebound.example" in body and b"rows" not in body
        status, body = get({"Host": f"127.0.0.1:{port}", "Origin": "http://rebound.example"})
        assert status == 403 and b"another site" in body
        assert get({})[0] == 403  # no Host at all (HTTP/1.0 tools): not this server's name either
    finally:
        srv.stop()


def test_view_beyond_loopback_needs_public_and_warns(sample_campaign):
    p = subprocess.run([str(Path(sys.executable).parent / "hpcbench"), "view", str(sample_campaign),
                        "--host", "0.0.0.0", "--port", "0"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "--public" in p.stderr and "Traceback" not in p.stderr, p.stderr
    q = subprocess.Popen([str(Path(sys.executable).parent / "hpcbench"), "view", str(sample_campaign),
                          "--host", "0.0.0.0", "--port", "0", "--public"], stderr=subprocess.PIPE, text=True)
    try:
        warning = q.stderr.readline()
        assert "warning" in warning and "beyond this machine" in warning, warning
        assert q.stderr.readline().startswith("hpcbench view: http://0.0.0.0:")
    finally:
        q.terminate()
        q.wait(timeout=30)
