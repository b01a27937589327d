"""figure_spec's own typed arrays are what plotly.py makes of the same arrays."""

import numpy as np
import pytest
from _plotly_utils.utils import to_typed_array_spec

from app.charts.figure_spec import typed_array

ARRAYS = {
    "float32 grid": np.arange(12, dtype=np.float32).reshape(3, 4) / 7,
    "float64 row": np.linspace(-1, 1, 5),
    "small int64": np.array([0, 1, -3, 100]),
    "int64 past int16": np.array([0, 40_000]),
    "int64 past int32": np.array([0, 2**40]),
    "uint64": np.array([1, 300], dtype=np.uint64),
    "bool": np.array([True, False]),
    "3-d int32": np.arange(24, dtype=np.int32).reshape(2, 3, 4),
    "strided": np.arange(20, dtype=np.float32).reshape(4, 5)[:, ::2],
    "empty": np.zeros((0, 3), dtype=np.float32),
}


@pytest.mark.parametrize("name", ARRAYS)
def test_typed_arrays_are_plotlys(name):
    ours, theirs = typed_array(ARRAYS[name]), to_typed_array_spec(ARRAYS[name])
    if isinstance(theirs, dict):
        assert ours == theirs
    else:  # plotly keeps what it cannot type as it is
        assert isinstance(ours, np.ndarray) and np.array_equal(ours, theirs)
