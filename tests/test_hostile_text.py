"""Text an agent controls (program output, compiler errors, source, submission.json)
shown to people: report.md rendered as CommonMark carries none of its HTML, links or
emphasis, and no control sequence of it reaches the operator's terminal.

The unit tests feed hostile strings to the escaping functions and render the result
with markdown-it-py (CommonMark, with and without GFM tables); the end-to-end test
runs a campaign of hostile programs through `hpcbench run` (real PETSc, real builds)
and renders its report.md in markdown-it-py and in headless Chromium."""

from __future__ import annotations

import html.parser
import io
import json
import re
import shutil
import subprocess
import sys

import pytest
from markdown_it import MarkdownIt

from hpcbench.cli.terminal import SafeStream, guarded, raw
from hpcbench.safetext import md_block, md_code, one_line, visible
from tests.conftest import hpcbench

MARK = "PWNED"
HOSTILE = [
    f"<img src=x onerror=\"document.title='{MARK}'\">",
    f"<script>document.title='{MARK}'</script>",
    f"[{MARK}](javascript:alert(1))",
    f"![{MARK}](http://evil.example/x.png)",
    f"<http://{MARK}.example>",
    f"*{MARK}* **{MARK}** _{MARK}_ ~~{MARK}~~",
    f"`{MARK}` `` {MARK} `` ```{MARK}```",
    f"a | {MARK} | b",
    f"&lt;img src=x onerror=alert(1)&gt; &#60;{MARK}&#62;",
    f"line one\n# {MARK}\n<div onclick=x>{MARK}</div>",
    f"\\`{MARK}\\` \\| trailing backslash\\",
    f"www.{MARK}.example and https://{MARK}.example/",
]
ESCAPES = ["\x1b]0;" + MARK + "\x07", "\x1b]52;c;UFdORUQ=\x07", "\x1b[2J\x1b[H", "\x9b31m", "a\rb", "\u202eevil",
           "\x1bP+q\x1b\\", "zero\u200bwidth", "\x08\x7f"]


class Tags(html.parser.HTMLParser):
    """Every element and attribute of a rendered page, and the text inside each element."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict]] = []
        self.stack: list[str] = []
        self.text_in: dict[str, str] = {}

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag not in ("img", "br", "hr", "meta", "input", "link"):
            self.stack.append(tag)

    def handle_endtag(self, tag):
        if tag in self.stack:
            while self.stack.pop() != tag:
                pass

    def handle_data(self, data):
        where = self.stack[-1] if self.stack else ""
        self.text_in[where] = self.text_in.get(where, "") + data


def rendered(md: str, tables: bool = True) -> Tags:
    parser = MarkdownIt("commonmark")
    if tables:
        parser.enable("table")
    t = Tags()
    t.feed(parser.render(md))
    return t


def assert_inert(t: Tags, allowed: set[str]) -> None:
    """No element or attribute from the hostile text: the marker appears only as the
    text of a code element, never in an attribute, never in an element of its own."""
    assert {tag for tag, _ in t.tags} <= allowed, {tag for tag, _ in t.tags} - allowed
    for tag, attrs in t.tags:
        assert not any(MARK in (v or "") or k.startswith("on") for k, v in attrs.items()), (tag, attrs)
    assert MARK in t.text_in.get("code", ""), "the hostile text must still be shown (as text)"
    assert all(MARK not in text for where, text in t.text_in.items() if where != "code"), t.text_in


@pytest.mark.parametrize("tables", [True, False])
@pytest.mark.parametrize("text", HOSTILE)
def test_a_code_span_in_a_table_cell_carries_no_markup(text, tables):
    md = f"| agent | why |\n|---|---|\n| a | {md_code(text)} |\n"
    assert_inert(rendered(md, tables), {"table", "thead", "tbody", "tr", "th", "td", "code", "p"})


def test_a_code_span_keeps_the_text_readable_and_its_backticks():
    for text in ("`", "``a``", "x ` y", "`lead", "trail`"):
        out = MarkdownIt("commonmark").render(md_code(text))
        assert html.unescape(re.sub(r"</?(p|code)>", "", out)).strip() == text, (text, out)
    assert md_code("") == "" and md_code("   ") == ""
    assert md_code("a" * 500, 140).count("a") == 140


def test_a_code_block_cannot_be_closed_from_inside():
    text = f"```\n<img src=x onerror=alert(1)>{MARK}\n````\n# {MARK}"
    t = rendered("\n".join(["before", *md_block(text), "after"]))
    assert {tag for tag, _ in t.tags} <= {"p", "pre", "code"}
    assert MARK in t.text_in["code"] and "after" in t.text_in["p"]


@pytest.mark.parametrize("seq", ESCAPES)
def test_control_and_format_characters_are_shown_not_obeyed(seq):
    shown = visible(f"x{seq}y\n\tz")
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069]", shown), shown
    assert shown.endswith("y\n\tz") and ("\\x" in shown or "\\u" in shown)
    assert "\n" not in one_line("a\nb\tc") and visible("é ü 中") == "é ü 中"


def test_every_command_writes_through_the_safe_stream(capsys):
    buf = io.StringIO()
    s = SafeStream(buf)
    s.write("a\x1b]0;t\x07b")
    assert buf.getvalue() == "a\\x1b]0;t\\x07b" and raw(s) is buf
    with guarded():
        assert isinstance(sys.stdout, SafeStream)
        print("\x1b[31mred")
    assert capsys.readouterr().out == "\\x1b[31mred\n"


def test_lint_and_an_error_message_print_no_escape_sequence(tmp_path):
    bad = tmp_path / "x.c"
    bad.write_text("/* \x1b]0;" + MARK + "\x07 */\n#include <petscvec.h>\nint main(int argc, char **argv)\n"
                   "{\n  Vec x;\n  PetscInitialize(&argc, &argv, NULL, NULL);\n  VecCreate(PETSC_COMM_WORLD, &x);"
                   "\x1b[2J\n  return PetscFinalize();\n}\n")
    exe = [sys.executable, "-m", "hpcbench.cli"]
    for args in (["lint", str(bad)], ["lint", str(tmp_path / "no\x1b]0;t\x07such.c")],
                 ["explain", str(tmp_path), "/x\x1b[2J"]):
        p = subprocess.run(exe + args, capture_output=True)
        assert b"\x1b" not in p.stdout + p.stderr and b"\x07" not in p.stdout + p.stderr, (args, p.stderr)
        assert p.stdout + p.stderr, args


# ----------------------------------------------------------------------------- a real campaign of hostile programs


@pytest.mark.slow
def test_report_md_of_hostile_programs_renders_inert_in_markdown_it_and_chromium(adversarial_campaign, tmp_path):
    out, _ = adversarial_campaign
    md = (out / "report" / "report.md").read_text()
    assert "\x1b" not in md and "\x07" not in md
    for tables in (True, False):
        t = rendered(md, tables)
        imgs = [a for tag, a in t.tags if tag == "img"]
        assert all(a.get("src", "").endswith("-profile.png") or not a for a in imgs), imgs
        assert not any(tag in ("script", "a", "iframe", "div", "svg", "em", "del", "s") for tag, _ in t.tags), \
            {tag for tag, _ in t.tags}
        for tag, attrs in t.tags:
            assert not any(MARK in (v or "") or k.startswith("on") or "javascript" in (v or "").lower()
                           for k, v in attrs.items()), (tag, attrs)
        # the hostile text is there, shown as text inside code elements only
        assert MARK in t.text_in.get("code", "") and "onerror" in t.text_in.get("code", "")
        assert all(MARK not in text for where, text in t.text_in.items() if where != "code"), t.text_in.keys()
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    assert exe, "headless Chromium is needed: scripts/setup.sh installs Debian's chromium package"
    page = tmp_path / "report-md.html"
    page.write_text("<!DOCTYPE html><html><head><meta charset='utf-8'><title>clean</title></head><body>"
                    + MarkdownIt("commonmark").enable("table").render(md) + "</body></html>")
    flags = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
             "--virtual-time-budget=3000"]
    dom = subprocess.run([exe, *flags, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert "<title>clean</title>" in dom.stdout  # no onerror ran (it would set the title)
    assert "&lt;img src=x onerror=" in dom.stdout and '<img src="x"' not in dom.stdout


@pytest.mark.slow
def test_no_escape_sequence_of_a_program_reaches_the_terminal(adversarial_campaign):
    out, run = adversarial_campaign
    assert "\x1b" not in run.stdout + run.stderr and "\x07" not in run.stdout + run.stderr
    # shown, not obeyed: `run` ends with a brief summary; the report (piped: to stdout) has the build error
    assert "\\x1b]0;PWNED\\x07" in hpcbench("report", str(out), "--format", "md").stdout
    rows = {(r["agent"], r["attempt"]): r for r in json.loads(hpcbench("report", str(out), "--format", "json")
                                                                   .stdout)["submissions"]}
    evil = rows[("www.PWNED.example", "html-run")]
    for args in (["explain", str(out), f"{evil['source']}/evaluators/execution"],
                 ["explain", str(out), f"{evil['source']}/evaluators/execution", "--full"],
                 ["explain", str(out), evil["submission"]],
                 ["explain", str(out), f"{rows[('www.PWNED.example', 'html-build')]['source']}/evaluators/compilation"],
                 ["explain", str(out), f"{rows[('www.PWNED.example', 'html-refusal')]['source']}"],
                 ["report", str(out)], ["report", str(out), "--format", "csv"], ["status", str(out)],
                 ["collect", str(out)],
                 ["lint", str(out / "submissions/www.PWNED.example/rosenbrock/html-build/main.c")],
                 ["lint", str(out / "submissions/www.PWNED.example/rosenbrock/html-run/main.c")]):
        p = hpcbench(*args, check=False)
        text = p.stdout + p.stderr
        assert "\x1b" not in text and "\x07" not in text and "\x9b" not in text, args
    shown = hpcbench("explain", str(out), f"{evil['source']}/evaluators/execution", "--full").stdout
    assert "\\x1b]0;PWNED" in shown or "\\\\x1b" in shown or "\\u001b" in shown, shown[-2000:]
