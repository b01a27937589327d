"""Pre-trained runs of the Learn page's default models, made by the project's own ``train`` with the
Config's fixed seeds and cached on disk (never downloaded), so a class does not wait for them.

    python -m mha_core.checkpoints [--dir DIR] [--only NAME ...] [--steps N] [--force]

trains each of PRETRAINED (the default Config of every task, and example F's two models) and writes
one file per run into DIR (default: the writable cache below), saying what it made and how long each
took. A run already there and readable is kept unless --force.

Where runs are cached: ``MHA_CHECKPOINT_DIR``, one directory or several separated by ``os.pathsep``
(":"). Runs are read from each directory in order and written to the last one only. The container
sets ``/app/checkpoints:/data/checkpoints``: the runs made at build time (read-only, the image's)
first, then the server's own directory, where a default run trained live and missing from both is
kept for the next start. Unset: ``checkpoints/`` inside ``MHA_DATA_DIR`` if that is set, otherwise
``~/.cache/mha-visualizer/checkpoints``.

A cached file is named after a hash of its Config (every field) and the file format, so a changed
setting or format never reads an old run; its contents are checked by ``load_history`` before use.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from mha_core.tasks import TASKS
from mha_core.train import HISTORY_FORMAT, Config, History, config_json, load_history, save_history, train

ENV = "MHA_CHECKPOINT_DIR"
EXAMPLE_F = Config(heads=1, d_model=64, steps=400)  # d_k = 64, as in the chapter's example F (Learn page)
PRETRAINED: dict[str, Config] = {
    **{task: Config(task=task) for task in TASKS},  # the Learn page's default settings for each task
    "example-f-scaled": EXAMPLE_F,
    "example-f-unscaled": replace(EXAMPLE_F, scaling="none"),
}


def cache_dirs() -> list[Path]:
    """The directories runs are read from, in order; the last is where new runs are written."""
    listed = [Path(part).expanduser() for part in os.environ.get(ENV, "").split(os.pathsep) if part]
    if listed:
        return listed
    if os.environ.get("MHA_DATA_DIR"):
        return [Path(os.environ["MHA_DATA_DIR"]) / "checkpoints"]
    return [Path.home() / ".cache" / "mha-visualizer" / "checkpoints"]


def file_name(config: Config) -> str:
    """e.g. ``induction-3f2a….npz``: the task for a reader, then a hash of every field and the format."""
    key = f"{HISTORY_FORMAT}\n{config_json(config)}".encode()
    return f"{config.task}-{hashlib.sha256(key).hexdigest()[:24]}.npz"


def cached_files(config: Config) -> list[Path]:
    """The files that may hold a run of config, in reading order (only those that exist)."""
    return [path for folder in cache_dirs() if (path := folder / file_name(config)).is_file()]


def is_pretrained(config: Config) -> bool:
    return config in PRETRAINED.values()


def store(config: Config, history: History, folder: Path | None = None) -> Path:
    """Save a run into folder (default: the writable cache) atomically: a temporary file in the same
    folder, then os.replace, so a reader never sees half a file. Raises OSError when it cannot."""
    folder = folder if folder is not None else cache_dirs()[-1]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / file_name(config)
    handle, temporary = tempfile.mkstemp(dir=folder, prefix=f".{path.stem}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as file:
            save_history(history, config, file)
        os.chmod(temporary, 0o644)  # readable by the server's user when made by root at build time
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path


def readable(path: Path, config: Config) -> bool:
    try:
        stored, history = load_history(path)
    except (OSError, ValueError):
        return False
    return stored == config and not history.stopped


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mha_core.checkpoints",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", type=Path, help=f"where to write (default: the last directory of {ENV}, "
                        "or its default)")
    parser.add_argument("--only", action="append", choices=sorted(PRETRAINED), metavar="NAME",
                        help=f"train only these (repeatable): {', '.join(PRETRAINED)}")
    parser.add_argument("--steps", type=int, help="train this many steps instead (a quick check; the page "
                        "uses such a run only for a config with these steps)")
    parser.add_argument("--force", action="store_true", help="train again even when a readable run is there")
    args = parser.parse_args(argv)
    folder = args.dir if args.dir is not None else cache_dirs()[-1]
    started = time.perf_counter()
    for name in args.only or PRETRAINED:
        config = PRETRAINED[name] if args.steps is None else replace(PRETRAINED[name], steps=args.steps)
        path = folder / file_name(config)
        if not args.force and readable(path, config):
            print(f"kept  {path} ({name}: already there)", flush=True)
            continue
        began = time.perf_counter()
        history = train(config)
        trained = time.perf_counter() - began
        store(config, history, folder)
        print(f"made  {path} ({name}: {config.steps} steps, loss {history.losses[0]:.3f} -> "
              f"{history.losses[-1]:.3f}) in {trained:.1f} s, {path.stat().st_size / 1e6:.1f} MB", flush=True)
    print(f"done in {time.perf_counter() - started:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
