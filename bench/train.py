"""Issue 18's training figures: the default induction run (time, loss on the repeated half, when an
induction head forms) and one training step against the same model in PyTorch.

Run: PYTHONPATH=. .venv/bin/python bench/train.py [--steps N] [--repeats 30] [--no-torch]

1. ``train(Config())``: wall time and ms per step; the loss on the scored (repeated) half of 256 fixed
   sequences at the start and the end; each checkpoint's best previous-token and induction scores
   (mean over 32 fixed sequences) and the first checkpoint with an induction head (score > 0.4).
2. One step (forward, backward and Adam) at the default size and at 4x the width, ours (float64, as
   trained) against torch (the same model in torch ops, tests/torch_reference.py, float64 and
   float32, torch.optim.Adam), median of --repeats, on the same threads (torch's own count is printed).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from dataclasses import replace

import numpy as np

from mha_core.train import Adam, Config, Model, batches, mean_head_scores, train

INDUCTION_HEAD = 0.4


def induction_run(config: Config) -> None:
    started = time.perf_counter()
    history = train(config)
    seconds = time.perf_counter() - started
    held_out = batches(replace(config, batch=256), np.random.default_rng(99))
    probes = batches(replace(config, batch=32), np.random.default_rng(98)).tokens
    first = history.checkpoints[0][1].loss_and_grads(held_out.tokens, held_out.scored)[0]
    last = history.checkpoints[-1][1].loss_and_grads(held_out.tokens, held_out.scored)[0]
    print(f"train({config})")
    print(f"  {seconds:.1f} s, {seconds / config.steps * 1000:.1f} ms per step; loss on the repeated half "
          f"{first:.3f} -> {last:.3f} ({last / first:.1%} of the start)")
    formed = None
    print("  | step | loss (mean of 10 steps) | best previous-token score | best induction score |")
    print("  |---|---|---|---|")
    for step, model in history.checkpoints:
        previous, induction = mean_head_scores(model, probes).max(axis=(0, 1))
        recent = history.losses[max(0, step - 10):step] or history.losses[:1]
        print(f"  | {step} | {np.mean(recent):.3f} | {previous:.2f} | {induction:.2f} |")
        if formed is None and induction > INDUCTION_HEAD:
            formed = step
    print(f"  an induction head (score > {INDUCTION_HEAD}) first at the checkpoint of step {formed}")


def our_step(config: Config, repeats: int) -> float:
    model = Model.init(config)
    adam = Adam(model.params, config.lr)
    batch = batches(config, np.random.default_rng(0))
    times = []
    for _ in range(repeats + 3):
        started = time.perf_counter()
        _, grads = model.loss_and_grads(batch.tokens, batch.scored)
        adam.step(model.params, grads)
        times.append(time.perf_counter() - started)
    return statistics.median(times[3:]) * 1000


def torch_step(config: Config, repeats: int, dtype) -> float:
    import torch

    from tests.torch_reference import decoder_loss

    model = Model.init(config)
    params = {name: torch.tensor(value, dtype=dtype, requires_grad=True)
              for name, value in model.params.items()}
    optimizer = torch.optim.Adam(params.values(), lr=config.lr, betas=(0.9, 0.98), eps=1e-8)
    batch = batches(config, np.random.default_rng(0))
    tokens, scored = torch.tensor(batch.tokens), torch.tensor(batch.scored)
    times = []
    for _ in range(repeats + 3):
        started = time.perf_counter()
        optimizer.zero_grad()
        decoder_loss(config, params, tokens, scored).backward()
        optimizer.step()
        times.append(time.perf_counter() - started)
    return statistics.median(times[3:]) * 1000


def step_times(repeats: int, with_torch: bool) -> None:
    threads = ""
    if with_torch:
        import torch
        threads = f", torch threads {torch.get_num_threads()}"
    print(f"\nOne training step (forward, backward, Adam), median of {repeats}, "
          f"{os.cpu_count()} cores{threads}")
    print("| size | ours (float64) | torch float64 | torch float32 | ours / torch float64 |")
    print("|---|---|---|---|---|")
    for name, config in (("default", Config()), ("4x width", Config(d_model=128))):
        ours = our_step(config, repeats)
        if with_torch:
            import torch
            t64, t32 = torch_step(config, repeats, torch.float64), torch_step(config, repeats, torch.float32)
            print(f"| {name} (d_model {config.d_model}) | {ours:.2f} ms | {t64:.2f} ms | {t32:.2f} ms | "
                  f"{ours / t64:.2f}x |")
        else:
            print(f"| {name} (d_model {config.d_model}) | {ours:.2f} ms | | | |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=Config().steps)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--no-torch", action="store_true")
    args = parser.parse_args()
    induction_run(Config(steps=args.steps))
    step_times(args.repeats, not args.no_torch)


if __name__ == "__main__":
    main()
