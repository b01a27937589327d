"""Benchmark of all-MiniLM-L6-v2 in NumPy (mha_core.pretrained) against transformers' BertModel.

    PYTHONPATH=. .venv/bin/python bench/model.py

First the load, in a fresh process without torch: the time of load_minilm() (safetensors and
tokenizers imported, weights read and split per head, tokenizer built) and the resident memory
before and after it.  Then, for 16, 128 and 512 word pieces, Model.trace(text) (tokenizing
included) against BertModel(ids, output_attentions=True, output_hidden_states=True) with eager
attention under no_grad, both float32, timed in alternating batches by bench/core.py's
time_side_by_side (medians; batches disturbed by other processes are retaken).  Both libraries use
their default thread counts (the machine's cores).  Last, the bytes one trace holds and the
resident memory after the largest one.

torch and transformers are optional: without them only our timings are printed.
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np

from bench.core import machine, mib, time_side_by_side, unique_nbytes
from mha_core.pretrained import load_minilm
from tests.minilm_reference import reference_bert, reference_trace, text_of_pieces

SIZES = (16, 128, 512)  # word pieces, [CLS] and [SEP] included
RATIO_TARGET = {128: 1.5}  # ours at most 1.5x torch's time at 128 word pieces
SAMPLES = {16: 15, 128: 15, 512: 9}


def rss_bytes() -> int:
    """The resident set size of this process (VmRSS in /proc/self/status)."""
    with open("/proc/self/status") as f:
        kib = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
    return kib * 1024


def trace_nbytes(trace) -> int:
    """Bytes of every array a trace holds (the attentions' buffers once each, the hidden states)."""
    fields = ("q", "k", "v", "scores", "scaled", "weights", "head_outputs", "concat", "output")
    arrays = [getattr(r, f) for r in trace.attentions for f in fields] + [trace.hidden_states]
    return unique_nbytes(arrays)


# Run in a fresh interpreter, so that the figures are the model's alone (this process has torch).
LOAD_SCRIPT = """
import json, time
def rss():
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS:"))
import numpy, mha_core.pretrained
before = rss()
start = time.perf_counter()
mha_core.pretrained.load_minilm()
seconds = time.perf_counter() - start
print(json.dumps({"seconds": seconds, "before": before, "after": rss()}))
"""


def measure_load() -> dict:
    """load_minilm()'s time and the resident memory before and after it, in a fresh process
    (numpy and mha_core imported first; safetensors and tokenizers are imported by the load)."""
    done = subprocess.run([sys.executable, "-c", LOAD_SCRIPT], capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def reference_calls(model):
    """transformers' BertModel, or None when torch or transformers is missing."""
    try:
        import torch
        import transformers  # noqa: F401
    except ImportError:
        return None, None
    return torch, reference_bert(model.folder)


def bench_size(model, torch, bert, n: int) -> dict:
    text = text_of_pieces(model, n)
    trace = model.trace(text)
    calls = {"ours": lambda: model.trace(text)}
    row = {"n": n, "bytes": trace_nbytes(trace)}
    if bert is not None:
        ids = torch.from_numpy(np.array(trace.ids, dtype=np.int64))[None]

        def torch_call():
            with torch.no_grad():
                return bert(ids, output_attentions=True, output_hidden_states=True)

        calls["torch"] = torch_call
        hidden, weights = reference_trace(bert, trace.ids)
        row["max_diff"] = max(float(np.abs(trace.hidden_states - hidden).max()),
                              float(np.abs(np.stack([r.weights for r in trace.attentions]) - weights).max()))
    medians, _, row["disturbed"] = time_side_by_side(calls, SAMPLES[n])
    row.update(medians)
    return row


def main() -> None:
    load = measure_load()
    model = load_minilm()
    torch, bert = reference_calls(model)
    print("all-MiniLM-L6-v2: mha_core.pretrained (NumPy) vs transformers BertModel (eager attention)")
    print("float32, one text, every attention and hidden state returned; median wall time per call")
    for line in machine():
        print(line)
    if bert is not None:
        import transformers

        print(f"transformers: {transformers.__version__}")
    print()
    print(f"load_minilm() in a fresh process: {load['seconds'] * 1e3:.0f} ms; resident memory "
          f"{mib(load['before'])} with numpy and mha_core imported, {mib(load['after'])} with the model "
          f"loaded (+{mib(load['after'] - load['before'])})")
    print()
    print("| word pieces | ours ms | torch ms | ours/torch | target | max abs diff | one trace holds "
          "| redone |")
    print("|---:|---:|---:|---:|---|---:|---:|---:|")
    verdicts = []
    for n in SIZES:
        row = bench_size(model, torch, bert, n)
        cells = [str(n), f"{row['ours'] * 1e3:.1f}"]
        if "torch" in row:
            ratio = row["ours"] / row["torch"]
            target = RATIO_TARGET.get(n)
            met = target is None or ratio <= target
            verdicts.append(met)
            verdict = "" if target is None else f"<= {target} {'met' if met else 'NOT met'}"
            cells += [f"{row['torch'] * 1e3:.1f}", f"{ratio:.2f}", verdict, f"{row['max_diff']:.1e}"]
        else:
            cells += ["-", "-", "", "-"]
        cells += [mib(row["bytes"]), str(row["disturbed"])]
        print("| " + " | ".join(cells) + " |", flush=True)
    print()
    print(f"resident memory after the runs (model, torch if any, the last trace): {mib(rss_bytes())}")
    print("redone = batches thrown away because other processes kept the CPUs busy (bench/core.py)")
    if bert is None:
        print("(torch or transformers not installed: only our timings)")
    else:
        print(f"all targets met: {'yes' if all(verdicts) else 'NO'}")


if __name__ == "__main__":
    main()
