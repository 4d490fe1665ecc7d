"""The official corpus checker over ``mariabinlog dump``: every manifest entry must pass.

Runs ``../shared/corpus/compare.py check`` exactly as the project requires
(GTIDs printed, ``###`` row lines and exit status of ~360 recorded runs of the
real ``mariadb-binlog``), from the repository root, with this interpreter.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_compare_py_check_passes(corpus_dir: Path) -> None:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO_ROOT / "src") + os.pathsep + env.get("PYTHONPATH", "")
    result = subprocess.run(
        [
            sys.executable,
            str(corpus_dir / "compare.py"),
            "check",
            "--tool",
            f"{sys.executable} -m mariabinlog dump {{options}} {{files}}",
            "--manifest",
            str(corpus_dir / "manifest.tsv"),
            "-q",
        ],
        cwd=REPO_ROOT,
        env=env,
        check=False,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=1800,
    )
    assert result.returncode == 0, result.stdout[-4000:]
    assert " 0 failed" in result.stdout
