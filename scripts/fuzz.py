"""make fuzz: the stateful test of tests/test_stateful.py for a while, with a fresh seed.

    FUZZ_SECONDS=300 (default) how long to generate; FUZZ_SEED=N replays a seed it printed.

Prints the seed first, so that a failure can be replayed exactly; exits non-zero on a failure.
The run stops generating when the time is up (pytest is stopped), which counts as a pass.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import time

seconds = float(os.environ.get("FUZZ_SECONDS", "300"))
seed = int(os.environ.get("FUZZ_SEED") or secrets.randbelow(2**32))
print(f"fuzz: seed {seed}, {seconds:.0f} s; replay with: make fuzz FUZZ_SEED={seed}", flush=True)
env = {**os.environ, "STATEFUL_EXAMPLES": "1000000", "STATEFUL_STEPS": os.environ.get("STATEFUL_STEPS", "30")}
command = [sys.executable, "-m", "pytest", "tests/test_stateful.py", "-x", "-q", "-p", "no:cacheprovider",
           f"--hypothesis-seed={seed}", "--hypothesis-show-statistics"]
process = subprocess.Popen(command, env=env)
started = time.monotonic()
try:
    code = process.wait(timeout=seconds)
except subprocess.TimeoutExpired:
    process.terminate()
    process.wait(timeout=30)
    print(f"fuzz: no failure in {time.monotonic() - started:.0f} s (seed {seed})")
    sys.exit(0)
if code != 0:
    print(f"fuzz: FAILED (seed {seed}); replay with: make fuzz FUZZ_SEED={seed}")
sys.exit(code)
