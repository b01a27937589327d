"""What grouped-query attention costs the core: one call's time and peak memory with g key/value heads.

    PYTHONPATH=. .venv/bin/python bench/grouped.py

float32 self-attention, h = 8 query heads, d_model = 512, at n = 512 and n = 2048, with g = 8 (standard),
2 and 1 (multi-query). The core projects g key/value heads and repeats them for the h query heads, so
the score grids, the largest arrays, are the same size whatever g is: what g saves is the projections'
work and, in a decoder, the KV cache (Labs → Size and cost), not this call's memory. Times are medians
of alternating batches; memory is tracemalloc's peak of one call.
"""

from __future__ import annotations

import gc
import statistics
import time
import tracemalloc

import numpy as np

from mha_core import attention_bytes, multi_head_attention, random_weights

H, D_MODEL, GROUPS, LENGTHS, BATCHES = 8, 512, (8, 2, 1), (512, 2048), 9


def case(n: int, g: int) -> dict:
    rng = np.random.default_rng(0)
    weights = random_weights(rng, D_MODEL, H, D_MODEL // H, D_MODEL // H)
    weights["w_k"], weights["w_v"] = weights["w_k"][:g], weights["w_v"][:g]
    arrays = dict(x=rng.standard_normal((n, D_MODEL)), **weights)
    return {name: a.astype(np.float32) for name, a in arrays.items()}


def seconds(call, repeat: int) -> float:
    start = time.perf_counter()
    for _ in range(repeat):
        call()
    return (time.perf_counter() - start) / repeat


def peak(call) -> int:
    gc.collect()
    tracemalloc.start()
    call()
    _, top = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return top


def caller(arrays: dict):
    return lambda: multi_head_attention(**arrays, max_bytes=None)


def main() -> None:
    for n in LENGTHS:
        calls = {g: caller(case(n, g)) for g in GROUPS}
        for call in calls.values():
            call()  # warm-up
        repeat = 10 if n <= 512 else 2
        times = {g: [] for g in GROUPS}
        for _ in range(BATCHES):  # alternating, so a slow moment of the machine hits every g alike
            for g, call in calls.items():
                times[g].append(seconds(call, repeat))
        for g, call in calls.items():
            estimate = attention_bytes(n, n, H, D_MODEL // H, D_MODEL // H, D_MODEL, 4, kv_heads=g)
            print(f"n = {n:5d}, h = {H}, g = {g}: {statistics.median(times[g]) * 1e3:7.2f} ms per call, "
                  f"peak {peak(call) / 2**20:6.1f} MiB (estimate {estimate / 2**20:6.1f} MiB)")


if __name__ == "__main__":
    main()
