import os
import tempfile

import numpy as np
import pytest

# A live class's embedded store writes under MHA_DATA_DIR: tests keep it out of the home directory.
os.environ.setdefault("MHA_DATA_DIR", tempfile.mkdtemp(prefix="mha-tests-"))


@pytest.fixture
def rng():
    return np.random.default_rng(0)
