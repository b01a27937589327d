"""Benchmark of the NumPy core against torch.nn.MultiheadAttention, measured side by side.

    PYTHONPATH=. .venv/bin/python bench/core.py

float32 self-attention with biases on both sides (torch's default bias=True, ours given the same
numbers), torch asked for the per-head weights like our core always returns them
(need_weights=True, average_attn_weights=False).  For each size, after a warm-up, ours and torch's
calls are timed in alternating batches (see time_side_by_side for the pause before each batch and
for batches disturbed by other processes) and the medians are reported.  torch runs under no_grad
with its default thread count.  Then the peak memory of one call of ours at the largest size is
measured with tracemalloc (NumPy reports its array allocations to it).

torch is optional: without it only our timings are printed.
"""

from __future__ import annotations

import datetime
import gc
import os
import platform
import resource
import statistics
import time
import tracemalloc

import numpy as np

from mha_core import mha_flops, multi_head_attention, random_weights
from tests.torch_reference import torch_mha

try:
    import torch
except ImportError:
    torch = None

SIZES = [(8, 16, 2), (64, 64, 4), (512, 512, 8), (2048, 512, 8)]  # (n, d_model, h)
SMALL = {(8, 16, 2), (64, 64, 4)}  # target: ours faster than torch
LARGE_RATIO_TARGET = 1.25  # target at the other sizes: ours at most 1.25x torch's time
SAMPLES = 21  # timed batches per implementation and size (15 at n >= 512)
MIN_BATCH_SECONDS = 0.02  # a batch repeats the call until it lasts at least this long
SETTLE_SECONDS = 0.2  # pause before each batch (see time_side_by_side)
MAX_OTHER_LOAD = 0.1  # CPUs other processes may keep busy during a batch that counts
MAX_RETRIES = 20
MEMORY_SIZE = (2048, 512, 8)


def cpu_model() -> str:
    """'model name' from /proc/cpuinfo, with the family/model numbers (VMs often hide the name)."""
    try:
        with open("/proc/cpuinfo") as f:
            info = dict(
                (key.strip(), value.strip())
                for key, _, value in (line.partition(":") for line in f.read().split("\n\n")[0].splitlines())
            )
    except OSError:
        return platform.processor() or "unknown"
    return f"{info.get('model name', 'unknown')} (family {info.get('cpu family')}, model {info.get('model')})"


def machine() -> list[str]:
    cpu = cpu_model()
    blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
    lines = [
        f"date:    {datetime.datetime.now().astimezone().isoformat(timespec='seconds')}",
        f"cpu:     {cpu}, {os.cpu_count()} logical cores",
        f"python:  {platform.python_version()}; numpy {np.__version__} "
        f"({blas.get('name')} {blas.get('version')})",
    ]
    if torch is not None:
        lines.append(f"torch:   {torch.__version__}, {torch.get_num_threads()} threads (default)")
    else:
        lines.append("torch:   not installed (pip install torch==2.13.0 to compare)")
    try:
        lines.append(f"load:    {' '.join(f'{x:.2f}' for x in os.getloadavg())} (1/5/15 min)")
    except OSError:
        pass
    return lines


def make_case(n: int, d_model: int, h: int, seed: int = 0) -> dict:
    """float32 inputs for one self-attention call, d_k = d_v = d_model / h, with biases."""
    rng = np.random.default_rng(seed)
    d_head = d_model // h
    args = random_weights(rng, d_model, h, d_head, d_head)
    args.update(
        x=rng.standard_normal((n, d_model)),
        b_q=0.1 * rng.standard_normal((h, d_head)),
        b_k=0.1 * rng.standard_normal((h, d_head)),
        b_v=0.1 * rng.standard_normal((h, d_head)),
        b_o=0.1 * rng.standard_normal(d_model),
    )
    return {name: a.astype(np.float32) for name, a in args.items()}


def torch_module(args: dict, d_model: int, h: int):
    """nn.MultiheadAttention holding the same weights (its packed [out, in] layout)."""
    return torch_mha(args, d_model, h)


def batch_size(call) -> int:
    """How many calls make one batch of at least MIN_BATCH_SECONDS."""
    number = 1
    while True:
        start = time.perf_counter()
        for _ in range(number):
            call()
        if time.perf_counter() - start >= MIN_BATCH_SECONDS:
            return number
        number *= 2


def busy_cpu_seconds() -> float | None:
    """CPU seconds all processes have spent busy since boot (/proc/stat), None if unknown."""
    try:
        with open("/proc/stat") as f:
            fields = [int(v) for v in f.readline().split()[1:9]]
    except (OSError, ValueError):
        return None
    user, nice, system, idle, iowait, irq, softirq, steal = fields
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def timed_batch(call, number: int) -> tuple[float, float, float]:
    """(seconds per call, page faults per call, CPUs other processes kept busy during the batch)."""
    busy, ours = busy_cpu_seconds(), time.process_time()
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    start = time.perf_counter()
    for _ in range(number):
        call()
    wall = time.perf_counter() - start
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
    others = 0.0
    if busy is not None:
        others = max(0.0, (busy_cpu_seconds() - busy) - (time.process_time() - ours)) / wall
    return wall / number, faults / number, others


def time_side_by_side(calls: dict, samples: int) -> tuple[dict, dict, int]:
    """Median seconds and page faults per call of each callable, timed in alternating batches.

    Before each batch: a pause so the other library's worker threads stop spinning (OpenBLAS and
    OpenMP threads busy-wait after a call and would slow the next library down), then one untimed
    call to wake this library's threads.  A batch during which other processes kept more than
    MAX_OTHER_LOAD of a CPU busy is thrown away and retaken (up to MAX_RETRIES times).
    Returns the median times, the median page faults and the number of disturbed batches.
    """
    for call in calls.values():  # warm-up: caches, thread pools, allocator
        for _ in range(3):
            call()
    numbers = {name: batch_size(call) for name, call in calls.items()}
    times = {name: [] for name in calls}
    faults = {name: [] for name in calls}
    disturbed = 0
    for _ in range(samples):
        for name, call in calls.items():
            for _attempt in range(MAX_RETRIES + 1):
                time.sleep(SETTLE_SECONDS)
                call()
                per_call, faults_per_call, others = timed_batch(call, numbers[name])
                if others <= MAX_OTHER_LOAD:
                    break
                disturbed += 1
            times[name].append(per_call)
            faults[name].append(faults_per_call)
    median = statistics.median
    return (
        {name: median(t) for name, t in times.items()},
        {name: median(f) for name, f in faults.items()},
        disturbed,
    )


def check_agreement(args: dict, mha) -> float:
    """Largest |ours - torch| over the output and the weights: both compute the same thing."""
    ours = multi_head_attention(**args)
    x = torch.from_numpy(args["x"])[None]
    with torch.no_grad():
        out, attn = mha(x, x, x, need_weights=True, average_attn_weights=False)
    return max(
        float(np.max(np.abs(ours.output - out[0].numpy()))),
        float(np.max(np.abs(ours.weights - attn[0].numpy()))),
    )


def bench_size(n: int, d_model: int, h: int) -> dict:
    args = make_case(n, d_model, h)
    calls = {"ours": lambda: multi_head_attention(**args)}
    row = {"size": (n, d_model, h), "flops": mha_flops(n, n, d_model, h, d_model // h, d_model // h)}
    if torch is not None:
        mha = torch_module(args, d_model, h)
        x = torch.from_numpy(args["x"])[None]  # [1, n, d_model]

        def torch_call():
            with torch.no_grad():
                return mha(x, x, x, need_weights=True, average_attn_weights=False)

        calls["torch"] = torch_call
        row["max_diff"] = check_agreement(args, mha)
    samples = SAMPLES if n < 512 else 15
    medians, row["faults"], row["disturbed"] = time_side_by_side(calls, samples)
    row.update(medians)
    return row


def unique_nbytes(arrays) -> int:
    """Bytes held by the arrays, counting a buffer shared by several views once."""
    owners = {}
    for a in arrays:
        while isinstance(a.base, np.ndarray):
            a = a.base
        owners[id(a)] = a.nbytes
    return sum(owners.values())


def measure_memory(n: int, d_model: int, h: int) -> dict:
    args = make_case(n, d_model, h)
    multi_head_attention(**args)  # warm-up outside the trace
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        result = multi_head_attention(**args)
        after, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    fields = ("q", "k", "v", "scores", "scaled", "weights", "head_outputs", "concat", "output", "mask")
    returned = unique_nbytes(getattr(result, f) for f in fields if getattr(result, f) is not None)
    return {
        "peak_extra": peak - before,
        "retained": after - before,
        "returned": returned,
        "temporary": h * n * n * np.dtype(np.float32).itemsize,  # one [h, n, n] float32 array
    }


def mib(nbytes: float) -> str:
    return f"{nbytes / 2**20:.1f} MiB"


def main() -> None:
    print("mha_core.multi_head_attention vs torch.nn.MultiheadAttention")
    print("float32, self-attention, biases, per-head weights returned; median wall time per call")
    for line in machine():
        print(line)
    print()
    have_torch = torch is not None
    header = f"{'n':>5} {'d_model':>7} {'h':>2} | {'ours ms':>9} {'GFLOP/s':>7}"
    if have_torch:
        header += f" | {'torch ms':>9} {'GFLOP/s':>7} | {'ours/torch':>10} {'target':>8} {'met':>3}"
        header += f" | {'max|diff|':>9}"
    header += f" | {'faults/call':>11} | {'redone':>6}"
    print(header)
    print("-" * len(header))
    verdicts = []
    for n, d_model, h in SIZES:
        row = bench_size(n, d_model, h)
        gflops = {name: row["flops"] / row[name] / 1e9 for name in ("ours", "torch") if name in row}
        line = f"{n:>5} {d_model:>7} {h:>2} | {row['ours'] * 1e3:>9.3f} {gflops['ours']:>7.2f}"
        if have_torch:
            ratio = row["ours"] / row["torch"]
            small = (n, d_model, h) in SMALL
            target = "< 1" if small else f"<= {LARGE_RATIO_TARGET}"
            met = ratio < 1 if small else ratio <= LARGE_RATIO_TARGET
            verdicts.append(met)
            line += f" | {row['torch'] * 1e3:>9.3f} {gflops['torch']:>7.2f}"
            line += f" | {ratio:>10.2f} {target:>8} {'yes' if met else 'NO':>3} | {row['max_diff']:>9.1e}"
        faults = "/".join(f"{row['faults'][name]:.0f}" for name in row["faults"])
        line += f" | {faults:>11} | {row['disturbed']:>6}"
        print(line, flush=True)
    if not have_torch:
        print("(torch not installed: only our timings; pip install torch==2.13.0 to compare)")
    print("GFLOP/s = mha_core.mha_flops(n, n, d_model, h, d_model/h, d_model/h) / median time")
    print("faults/call = minor page faults per call (ours/torch), median over the batches")
    print(
        f"redone = batches thrown away because other processes kept > {MAX_OTHER_LOAD} CPU busy "
        f"(each is retried up to {MAX_RETRIES} times)"
    )

    n, d_model, h = MEMORY_SIZE
    mem = measure_memory(n, d_model, h)
    budget = mem["returned"] + mem["temporary"]
    print()
    print(f"memory of one call of ours at n={n}, d_model={d_model}, h={h} (tracemalloc):")
    print(f"  peak extra during the call     {mib(mem['peak_extra']):>12}")
    print(f"  retained after (the result)    {mib(mem['retained']):>12}")
    print(f"  returned arrays                {mib(mem['returned']):>12}")
    print(f"  one [h, n, n] float32 array    {mib(mem['temporary']):>12}")
    mem_met = mem["peak_extra"] <= budget
    print(
        f"  target peak <= returned + one [h,n,n] = {mib(budget)}: "
        f"{'met' if mem_met else 'NOT met'} (peak / budget = {mem['peak_extra'] / budget:.3f})"
    )
    if have_torch:
        print(f"\nall targets met: {'yes' if all(verdicts) and mem_met else 'NO'}")


if __name__ == "__main__":
    main()
