"""make fuzz: the stateful test of tests/app/test_stateful.py for a while, with a fresh seed.

    FUZZ_SECONDS=300 (default) how long to generate; FUZZ_SEED=N replays a seed it printed.
    FUZZ_SHRINK_SECONDS=900 (default) how long Hypothesis may then shrink a failure it found.
    FUZZ_SAME_AS=<examples.txt> a run of the same seed noted there must have noted the same examples
    (outcome, steps, digest of what every step left), as far as both went: the determinism check.

Prints the seed first; the machine is deterministic, so the same seed generates the same examples
and meets the same failure (on a slower machine, later: give the replay more FUZZ_SECONDS). When the
time is up and no example has failed, pytest is stopped and the run passes. When one has failed
(the machine notes every example's end in FUZZ_DIR), Hypothesis is left to shrink and report it; if that
takes longer than FUZZ_SHRINK_SECONDS, the failure as first met is printed. Exits non-zero on a
failure.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import tempfile
import time
from pathlib import Path

seconds = float(os.environ.get("FUZZ_SECONDS", "300"))
shrink_seconds = float(os.environ.get("FUZZ_SHRINK_SECONDS", "900"))
seed = int(os.environ.get("FUZZ_SEED") or secrets.randbelow(2**32))


def stop(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def finished(process: subprocess.Popen, within: float) -> int | None:
    """The exit code, or None if the process is still running after `within` seconds."""
    try:
        return process.wait(timeout=max(within, 0))
    except subprocess.TimeoutExpired:
        return None


def examples(notes: Path) -> int:
    """How many examples the machine ran to their end."""
    ended = notes / "examples.txt"
    return len(ended.read_text(encoding="utf-8").splitlines()) if ended.exists() else 0


def compare(mine: Path, theirs: Path) -> int:
    """0 if the examples both runs noted are the same, as far as the shorter one went."""
    ours = mine.read_text(encoding="utf-8").splitlines() if mine.exists() else []
    earlier = theirs.read_text(encoding="utf-8").splitlines()
    both = min(len(ours), len(earlier))
    differ = next((i for i in range(both) if ours[i] != earlier[i]), None)
    if differ is not None:
        print(f"fuzz: NOT deterministic: example {differ + 1} differs ({ours[differ]!r} here, "
              f"{earlier[differ]!r} in {theirs})")
        return 1
    print(f"fuzz: the same examples as {theirs} ({both} compared: {len(ours)} here, {len(earlier)} there)")
    return 0


def main() -> int:
    notes = Path(tempfile.mkdtemp(prefix="mha-fuzz-"))
    print(f"fuzz: seed {seed}, {seconds:.0f} s; replay with: make fuzz FUZZ_SEED={seed}; examples noted in "
          f"{notes / 'examples.txt'}", flush=True)
    steps = os.environ.get("STATEFUL_STEPS", "30")
    env = {**os.environ, "STATEFUL_EXAMPLES": "1000000", "STATEFUL_STEPS": steps,
           "FUZZ_DIR": str(notes)}
    command = [sys.executable, "-m", "pytest", "tests/app/test_stateful.py::TestWorkbench", "-x", "-q",
               "-p", "no:cacheprovider", f"--hypothesis-seed={seed}", "--hypothesis-show-statistics"]
    started = time.monotonic()
    process = subprocess.Popen(command, env=env)
    code = run(process, notes, started)
    same_as = os.environ.get("FUZZ_SAME_AS")
    if same_as:
        same = compare(notes / "examples.txt", Path(same_as))
        code = code or same
    return code


def run(process: subprocess.Popen, notes: Path, started: float) -> int:
    """pytest's exit code, or 0 when the time is up without a failure."""
    failures = notes / "failures.txt"
    steps = os.environ.get("STATEFUL_STEPS", "30")
    code = finished(process, seconds)
    if code is None and failures.exists():
        met = time.monotonic() - started
        print(f"fuzz: an example failed by {met:.0f} s ({examples(notes)} examples ended by then); "
              f"Hypothesis shrinks it for at most {shrink_seconds:.0f} s", flush=True)
        code = finished(process, shrink_seconds)
    if code is None:
        stop(process)
        if not failures.exists():
            print(f"fuzz: no failure in {time.monotonic() - started:.0f} s, {examples(notes)} examples of "
                  f"{steps} steps (seed {seed})")
            return 0
        first = failures.read_text(encoding="utf-8")
        print(f"fuzz: shrinking took too long; the failure as first met:\n{first}")
        code = 1
    if code != 0:
        print(f"fuzz: FAILED (seed {seed}); replay with: make fuzz FUZZ_SEED={seed}")
    return code


if __name__ == "__main__":
    sys.exit(main())
