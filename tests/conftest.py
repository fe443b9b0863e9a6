import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.openai_server import openai_server  # noqa: E402,F401  (fixture: local stand-in LLM endpoint)


def hpcbench(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).parent / "hpcbench"
    proc = subprocess.run([str(exe), *args], capture_output=True, text=True, cwd=ROOT, env=os.environ)
    if check and proc.returncode != 0:
        raise AssertionError(f"hpcbench {' '.join(args)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
    return proc


@pytest.fixture(scope="session")
def sample_campaign(tmp_path_factory) -> Path:
    """One real campaign, built and run through the CLI: the references and the
    bundled sample agents on this machine's PETSc and MPI."""
    out = tmp_path_factory.mktemp("campaign") / "c"
    hpcbench("run", "--agent", "reference", "--agent", "samples", "--out", str(out))
    return out


@pytest.fixture(scope="session")
def sample_rows(sample_campaign) -> dict:
    rows = json.loads(hpcbench("report", str(sample_campaign), "--format", "json").stdout)["submissions"]
    return {(r["agent"], r["problem"], r["attempt"]): r for r in rows}
