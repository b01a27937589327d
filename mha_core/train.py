"""A tiny decoder-only transformer trained in NumPy: what the heads of the workbench look like when
nobody chose their matrices.

Tokens and learned positions are embedded; L layers each add causal multi-head attention (through
``multi_head_attention``, so every layer's ``MHAResult`` is the workbench's) and, optionally, an MLP to
the residual stream, each after an optional layer norm; an unembedding gives next-token logits, the
loss is their cross-entropy where a task says the next token can be known, and Adam learns.
Each backward step is written next to its forward step's name, in reverse order, with shapes.

Parameters live in one dict of arrays (``Model.params``) that every call reads: ``embed [V, D]``,
``position [T, D]``, per layer ``l`` ``l.w_q``, ``l.w_k``, ``l.w_v`` ``[h, D, d_k]`` and ``l.w_o
[h·d_k, D]``, with an MLP ``l.w_in [D, 4D]``, ``l.b_in [4D]``, ``l.w_out [4D, D]``, ``l.b_out [D]``,
with layer norms ``l.norm_attn.gain``/``.bias`` (and ``l.norm_mlp``, ``final``) ``[D]``, and
``unembed [D, V]``.
"""

from __future__ import annotations

import json
import math
import string
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields, replace

import numpy as np

from mha_core.attention import MHAResult, attention, multi_head_attention
from mha_core.setup import Scaling, Setup
from mha_core.tasks import TASKS, Batch

NORM_EPS = 1e-5
ADAM_BETAS = (0.9, 0.98)
ADAM_EPS = 1e-8
CHECKPOINTS = 24  # snapshots kept over a run (plus the first and the last)


@dataclass(frozen=True)
class Config:
    """A model and its training run. The defaults train the induction task: two attention-only layers
    of two heads form a previous-token head and an induction head."""

    task: str = "induction"
    layers: int = 2
    d_model: int = 32
    heads: int = 2
    vocab: int = 24
    seq_len: int = 24
    mlp: bool = False
    scaling: str = "sqrt"  # "sqrt": scores times 1/√d_k; "none": unscaled (example F)
    steps: int = 600
    batch: int = 32
    lr: float = 3e-3
    seed: int = 0
    layer_norm: bool = False

    def __post_init__(self):
        task = TASKS.get(self.task)
        if task is None:
            raise ValueError(f"task must be one of {', '.join(TASKS)}, got {self.task!r}")
        checks = [
            (1 <= self.layers <= 4, f"layers must be 1 to 4, got {self.layers}"),
            (1 <= self.heads <= 8, f"heads must be 1 to 8, got {self.heads}"),
            (self.d_model % self.heads == 0 and 2 <= self.d_model <= 256,
             f"d_model must be 2 to 256 and a multiple of heads ({self.heads}), got {self.d_model}"),
            (task.min_vocab <= self.vocab <= 64, f"vocab must be {task.min_vocab} to 64, got {self.vocab}"),
            (task.min_seq_len <= self.seq_len <= 64,
             f"seq_len must be {task.min_seq_len} to 64, got {self.seq_len}"),
            (self.scaling in ("sqrt", "none"), f"scaling must be 'sqrt' or 'none', got {self.scaling!r}"),
            (1 <= self.steps <= 20_000, f"steps must be 1 to 20,000, got {self.steps}"),
            (1 <= self.batch <= 256, f"batch must be 1 to 256, got {self.batch}"),
            (0 < self.lr <= 1, f"lr must be in (0, 1], got {self.lr}"),
        ]
        for ok, message in checks:
            if not ok:
                raise ValueError(message)

    @property
    def d_k(self) -> int:
        return self.d_model // self.heads

    @property
    def scale(self) -> float:
        return 1 / math.sqrt(self.d_k) if self.scaling == "sqrt" else 1.0


def token_names(vocab: int) -> tuple[str, ...]:
    """Readable names for token ids: A, B, …, Z, then t26, t27, …"""
    return tuple(string.ascii_uppercase[i] if i < 26 else f"t{i}" for i in range(vocab))


# --- Layer norm ------------------------------------------------------------------------------------

def _norm_forward(x, gain, bias):  # x [..., D] -> (y [..., D], cache)
    mean = x.mean(axis=-1, keepdims=True)
    centred = x - mean
    inv_std = 1 / np.sqrt((centred ** 2).mean(axis=-1, keepdims=True) + NORM_EPS)
    normed = centred * inv_std
    return normed * gain + bias, (normed, inv_std)


def _norm_backward(dy, gain, cache):  # dy [..., D] -> (dx, dgain, dbias)
    normed, inv_std = cache
    dgain = (dy * normed).reshape(-1, dy.shape[-1]).sum(axis=0)
    dbias = dy.reshape(-1, dy.shape[-1]).sum(axis=0)
    dn = dy * gain
    mean_dn = dn.mean(axis=-1, keepdims=True)
    dx = inv_std * (dn - mean_dn - normed * (dn * normed).mean(axis=-1, keepdims=True))
    return dx, dgain, dbias


# --- The model -------------------------------------------------------------------------------------

@dataclass
class Model:
    config: Config
    params: dict[str, np.ndarray] = field(default_factory=dict)

    @classmethod
    def init(cls, config: Config) -> Model:
        """Weights drawn from the config's seed: normal, scaled by 1/√fan-in; gains 1, biases 0."""
        rng = np.random.default_rng(config.seed)
        d, h, dk, v = config.d_model, config.heads, config.d_k, config.vocab

        def normal(*shape, fan_in):
            return rng.normal(0.0, 1 / math.sqrt(fan_in), size=shape)

        params = {"embed": normal(v, d, fan_in=d) * math.sqrt(d) * 0.5,
                  "position": normal(config.seq_len, d, fan_in=d) * math.sqrt(d) * 0.5}
        for layer in range(config.layers):
            for name in ("w_q", "w_k", "w_v"):
                params[f"{layer}.{name}"] = normal(h, d, dk, fan_in=d)
            params[f"{layer}.w_o"] = normal(h * dk, d, fan_in=h * dk)
            if config.mlp:
                params[f"{layer}.w_in"] = normal(d, 4 * d, fan_in=d)
                params[f"{layer}.b_in"] = np.zeros(4 * d)
                params[f"{layer}.w_out"] = normal(4 * d, d, fan_in=4 * d)
                params[f"{layer}.b_out"] = np.zeros(d)
        for norm in _norm_names(config):
            params[f"{norm}.gain"] = np.ones(d)
            params[f"{norm}.bias"] = np.zeros(d)
        params["unembed"] = normal(d, v, fan_in=d)
        return cls(config, params)

    # --- forward -----------------------------------------------------------------------------------

    def _forward(self, tokens: np.ndarray):
        """tokens [B, T] -> (logits [B, T, V], caches for the backward pass)."""
        c, p = self.config, self.params
        x = p["embed"][tokens] + p["position"][: tokens.shape[1]]  # [B, T, D]
        layers = []
        for layer in range(c.layers):
            cache = {}
            attn_in, cache["norm_attn"] = self._norm(x, f"{layer}.norm_attn")  # [B, T, D]
            cache["attn_in"] = attn_in
            cache["attn"] = self._attention(attn_in, layer)
            x = x + cache["attn"]["output"]  # residual [B, T, D]
            if c.mlp:
                mlp_in, cache["norm_mlp"] = self._norm(x, f"{layer}.norm_mlp")
                pre = mlp_in @ p[f"{layer}.w_in"] + p[f"{layer}.b_in"]  # [B, T, 4D]
                hidden = np.maximum(pre, 0.0)
                x = x + hidden @ p[f"{layer}.w_out"] + p[f"{layer}.b_out"]
                cache.update(mlp_in=mlp_in, pre=pre, hidden=hidden)
            layers.append(cache)
        final, final_cache = self._norm(x, "final")
        logits = final @ p["unembed"]  # [B, T, V]
        return logits, (layers, final, final_cache)

    def _norm(self, x, name):
        if not self.config.layer_norm:
            return x, None
        return _norm_forward(x, self.params[f"{name}.gain"], self.params[f"{name}.bias"])

    def _attention(self, x: np.ndarray, layer: int) -> dict[str, np.ndarray]:
        """multi_head_attention's steps for a whole batch x [B, T, D] at once, causal (``trace`` runs
        the core itself on one sequence, and the tests hold the two equal)."""
        p, c = self.params, self.config
        q, k, v = (x[:, None] @ p[f"{layer}.{name}"][None] for name in ("w_q", "w_k", "w_v"))  # [B, h, T, dk]
        length = x.shape[1]
        causal = np.tril(np.ones((length, length), dtype=bool))  # [T, T]: no later token
        heads, weights = attention(q, k, v, c.scale, causal)  # [B, h, T, dk], [B, h, T, T]
        concat = heads.transpose(0, 2, 1, 3).reshape(x.shape[0], length, -1)  # [B, T, h·dk]
        return {"q": q, "k": k, "v": v, "weights": weights, "concat": concat,
                "output": concat @ p[f"{layer}.w_o"]}

    # --- loss and backward -------------------------------------------------------------------------

    def loss_and_grads(self, tokens: np.ndarray, scored: np.ndarray | None = None
                       ) -> tuple[float, dict[str, np.ndarray]]:
        """Mean next-token cross-entropy over the scored predictions (all of them by default) of
        tokens [B, T], and its gradient for every parameter (same keys and shapes as params)."""
        tokens = np.asarray(tokens)
        scored = np.ones((tokens.shape[0], tokens.shape[1] - 1), bool) if scored is None else scored
        logits, (layers, final, final_cache) = self._forward(tokens)
        c, p = self.config, self.params
        # Loss: softmax cross-entropy of logits[:, t] against tokens[:, t + 1] where scored.
        predicted = logits[:, :-1]  # [B, T-1, V]
        shifted = predicted - predicted.max(axis=-1, keepdims=True)
        log_probs = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
        targets = tokens[:, 1:]  # [B, T-1]
        count = max(int(scored.sum()), 1)
        picked = np.take_along_axis(log_probs, targets[..., None], axis=-1)[..., 0]  # [B, T-1]
        loss = float(-(picked * scored).sum() / count)
        # d loss / d logits: (softmax - one-hot) / count where scored, 0 elsewhere.
        dlogits = np.zeros_like(logits)
        dpred = np.exp(log_probs)  # softmax [B, T-1, V]
        at_target = targets[..., None]
        np.put_along_axis(dpred, at_target, np.take_along_axis(dpred, at_target, -1) - 1, -1)
        dlogits[:, :-1] = dpred * (scored[..., None] / count)
        grads = {name: np.zeros_like(value) for name, value in p.items()}
        # logits = final @ unembed
        grads["unembed"] = _flat(final).T @ _flat(dlogits)
        dx = dlogits @ p["unembed"].T  # [B, T, D]
        dx = self._norm_back(dx, "final", final_cache, grads)
        for layer in reversed(range(c.layers)):
            cache = layers[layer]
            if c.mlp:
                # x = x + relu(mlp_in @ w_in + b_in) @ w_out + b_out
                grads[f"{layer}.w_out"] = _flat(cache["hidden"]).T @ _flat(dx)
                grads[f"{layer}.b_out"] = dx.sum(axis=(0, 1))
                dpre = (dx @ p[f"{layer}.w_out"].T) * (cache["pre"] > 0)  # [B, T, 4D]
                grads[f"{layer}.w_in"] = _flat(cache["mlp_in"]).T @ _flat(dpre)
                grads[f"{layer}.b_in"] = dpre.sum(axis=(0, 1))
                dx = dx + self._norm_back(dpre @ p[f"{layer}.w_in"].T, f"{layer}.norm_mlp",
                                          cache["norm_mlp"], grads)
            # x = x + attention(norm(x))
            dattn_in = self._attention_back(dx, cache, layer, grads)
            dx = dx + self._norm_back(dattn_in, f"{layer}.norm_attn", cache["norm_attn"], grads)
        # x = embed[tokens] + position[:T]
        np.add.at(grads["embed"], tokens, dx)
        grads["position"][: tokens.shape[1]] = dx.sum(axis=0)
        return loss, grads

    def _norm_back(self, dy, name, cache, grads):
        if cache is None:
            return dy
        gain = self.params[f"{name}.gain"]
        dx, grads[f"{name}.gain"], grads[f"{name}.bias"] = _norm_backward(dy, gain, cache)
        return dx

    def _attention_back(self, dout, cache, layer, grads):
        """The backward of Concat(head_1 … head_h) W_O, head_i = softmax(scale · Q_i K_i^T + mask) V_i,
        Q_i = x W_Q,i (K, V alike), for the batch: dout [B, T, D] -> d attn_in [B, T, D]."""
        p, c = self.params, self.config
        x = cache["attn_in"]  # [B, T, D]
        q, k, v, weights = (cache["attn"][name] for name in ("q", "k", "v", "weights"))  # [B, h, T, dk|T]
        # output = concat @ w_o
        grads[f"{layer}.w_o"] = _flat(cache["attn"]["concat"]).T @ _flat(dout)
        dconcat = dout @ p[f"{layer}.w_o"].T  # [B, T, h·dk]
        dheads = dconcat.reshape(*dconcat.shape[:2], c.heads, c.d_k).transpose(0, 2, 1, 3)  # [B, h, T, dk]
        # head = weights @ v
        dweights = dheads @ v.transpose(0, 1, 3, 2)  # [B, h, T, T]
        dv = weights.transpose(0, 1, 3, 2) @ dheads  # [B, h, T, dk]
        # weights = softmax(scaled) by rows; masked weights are 0, so their gradient is 0 too
        dscaled = weights * (dweights - (dweights * weights).sum(axis=-1, keepdims=True))
        dscores = dscaled * c.scale  # scaled = scores · scale
        # scores = q @ k^T
        dq = dscores @ k  # [B, h, T, dk]
        dk = dscores.transpose(0, 1, 3, 2) @ q
        dx = np.zeros_like(x)
        for name, d in (("w_q", dq), ("w_k", dk), ("w_v", dv)):
            # q = x @ w_q (per head)
            by_head = d.transpose(1, 0, 2, 3).reshape(c.heads, -1, c.d_k)  # [h, B·T, dk]
            grads[f"{layer}.{name}"] = _flat(x).T @ by_head  # [h, D, dk]
            dx += (d @ p[f"{layer}.{name}"].transpose(0, 2, 1)).sum(axis=1)  # [B, T, D]
        return dx

    # --- reading a trained model -------------------------------------------------------------------

    def trace(self, tokens) -> list[MHAResult]:
        """One sequence tokens [T]: each layer's attention result, causal, in layer order."""
        _, (layers, _, _) = self._forward(np.asarray(tokens)[None, :])
        weights = [[self.params[f"{layer}.{name}"] for name in ("w_q", "w_k", "w_v", "w_o")]
                   for layer in range(self.config.layers)]
        return [multi_head_attention(cache["attn_in"][0], *weights[layer], mask="causal",
                                     scale=self.config.scaling, max_bytes=None)
                for layer, cache in enumerate(layers)]

    def logits(self, tokens) -> np.ndarray:  # tokens [T] -> [T, V]
        return self._forward(np.asarray(tokens)[None, :])[0][0]

    def generate(self, prompt, n: int) -> list[int]:
        """The prompt's tokens followed by n greedy predictions (the window is the last seq_len tokens)."""
        tokens = [int(t) for t in prompt]
        for _ in range(n):
            window = tokens[-self.config.seq_len:]
            tokens.append(int(np.argmax(self.logits(window)[-1])))
        return tokens

    def layer_setup(self, tokens, layer: int) -> Setup:
        """The workbench's Setup of one layer's attention for a sequence: its input (the residual stream
        after the layer norm, if any) and its learned matrices, causal, scaled as trained."""
        tokens = np.asarray(tokens)
        _, (layers, _, _) = self._forward(tokens[None, :])
        names = token_names(self.config.vocab)
        p = self.params
        return Setup(tokens=tuple(names[t] for t in tokens), x=layers[layer]["attn_in"][0].copy(),
                     w_q=p[f"{layer}.w_q"].copy(), w_k=p[f"{layer}.w_k"].copy(),
                     w_v=p[f"{layer}.w_v"].copy(), w_o=p[f"{layer}.w_o"].copy(), mask="causal",
                     scaling=Scaling(self.config.scaling), origin="learned")

    def copy(self) -> Model:
        return Model(self.config, {name: value.copy() for name, value in self.params.items()})


def _flat(a: np.ndarray) -> np.ndarray:  # [B, T, n] -> [B·T, n]
    return a.reshape(-1, a.shape[-1])


def _norm_names(config: Config) -> list[str]:
    if not config.layer_norm:
        return []
    names = [f"{layer}.norm_attn" for layer in range(config.layers)]
    names += [f"{layer}.norm_mlp" for layer in range(config.layers)] if config.mlp else []
    return names + ["final"]


# --- Training --------------------------------------------------------------------------------------

@dataclass
class History:
    losses: list[float] = field(default_factory=list)  # one per step
    checkpoints: list[tuple[int, Model]] = field(default_factory=list)  # (steps done, the model then)
    stopped: bool = False  # on_step asked to stop before the last step


class Adam:
    def __init__(self, params: dict[str, np.ndarray], lr: float):
        self.lr, self.t = lr, 0
        self.m = {name: np.zeros_like(value) for name, value in params.items()}
        self.v = {name: np.zeros_like(value) for name, value in params.items()}

    def step(self, params: dict[str, np.ndarray], grads: dict[str, np.ndarray]) -> None:
        """Updates params in place."""
        self.t += 1
        b1, b2 = ADAM_BETAS
        rate = self.lr * math.sqrt(1 - b2 ** self.t) / (1 - b1 ** self.t)
        for name, grad in grads.items():
            self.m[name] = b1 * self.m[name] + (1 - b1) * grad
            self.v[name] = b2 * self.v[name] + (1 - b2) * grad * grad
            params[name] -= rate * self.m[name] / (np.sqrt(self.v[name]) + ADAM_EPS)


def batches(config: Config, rng: np.random.Generator) -> Batch:
    return TASKS[config.task].make(config.batch, config.seq_len, config.vocab, rng)


def checkpoint_steps(steps: int) -> set[int]:
    return {0, steps} | {round(steps * i / CHECKPOINTS) for i in range(1, CHECKPOINTS)}


def train(config: Config, on_step: Callable[[int, float, Model], bool | None] | None = None,
          model: Model | None = None, history: History | None = None) -> History:
    """Train a model (a new one from the config, or ``model``, changed in place) for config.steps
    steps. ``on_step(step, loss, model)`` is called after each step; returning False stops the run
    (the last model is then a checkpoint too). ``history``, when given, is filled as the run goes, so
    a caller whose run is interrupted keeps what was done."""
    model = model or Model.init(config)
    rng = np.random.default_rng(config.seed + 1)
    adam = Adam(model.params, config.lr)
    history = history if history is not None else History()
    history.checkpoints.append((0, model.copy()))
    keep = checkpoint_steps(config.steps)
    for step in range(1, config.steps + 1):
        batch = batches(config, rng)
        loss, grads = model.loss_and_grads(batch.tokens, batch.scored)
        adam.step(model.params, grads)
        history.losses.append(loss)
        stop = on_step is not None and on_step(step, loss, model) is False
        if step in keep or stop:
            history.checkpoints.append((step, model.copy()))
        if stop:
            history.stopped = True
            break
    return history


# --- What the heads became -------------------------------------------------------------------------

def previous_token_score(weights: np.ndarray) -> float:
    """weights [T, T] of one head: the mean weight each position t >= 1 puts on position t - 1."""
    t = np.arange(1, weights.shape[0])
    return float(weights[t, t - 1].mean())


def induction_score(weights: np.ndarray, tokens) -> float:
    """weights [T, T] of one head on tokens [T]: the mean weight a position puts on the token after the
    current token's previous occurrence (over positions whose token occurred before, not just before)."""
    tokens = list(tokens)
    picked = []
    for t, token in enumerate(tokens):
        earlier = [i for i in range(t - 1) if tokens[i] == token]
        if earlier:
            picked.append(weights[t, earlier[-1] + 1])
    return float(np.mean(picked)) if picked else 0.0


def head_scores(model: Model, tokens) -> list[list[tuple[float, float]]]:
    """For each layer and head: (previous-token score, induction score) on one sequence."""
    return [[(previous_token_score(w), induction_score(w, tokens)) for w in result.weights]
            for result in model.trace(tokens)]


def mean_head_scores(model: Model, sequences) -> np.ndarray:
    """head_scores averaged over sequences [S, T]: [layers, heads, 2] (previous-token, induction)."""
    return np.mean([head_scores(model, tokens) for tokens in sequences], axis=0)


def probes(config: Config, count: int = 16, seed: int = 12345) -> np.ndarray:
    """Sequences of the config's task, the same for every checkpoint: tokens [count, T]."""
    return batches(replace(config, batch=count), np.random.default_rng(seed)).tokens


def probe(config: Config, seed: int = 12345) -> np.ndarray:
    """One sequence of the config's task, the same for every checkpoint: tokens [T]."""
    return probes(config, 1, seed)[0]


# --- Saving a run ----------------------------------------------------------------------------------
# One .npz file per run (np.savez_compressed, read back with allow_pickle=False): "config" holds the
# Config as JSON text, "steps" [C] the checkpoints' steps, "losses" [S], "stopped" a bool, and
# "c{index}/{name}" each checkpoint's parameters. A file is outside input (a cache on a disk others
# may write): load_history checks everything against the Config it names before a Model is made.

HISTORY_FORMAT = 1  # bumped when the file's layout or what a Config trains changes
_HEADER_BYTES = 4096  # allowance for the .npy header of one array in the file


def save_history(history: History, config: Config, path) -> None:
    """Write a run (its checkpoints, losses, and the config that made it) to path, a file name or an
    open binary file."""
    arrays = {"format": np.array(HISTORY_FORMAT), "config": np.array(config_json(config)),
              "steps": np.array([step for step, _ in history.checkpoints], dtype=np.int64),
              "losses": np.array(history.losses, dtype=np.float64), "stopped": np.array(history.stopped)}
    for index, (_, model) in enumerate(history.checkpoints):
        for name, value in model.params.items():
            arrays[f"c{index}/{name}"] = np.asarray(value, dtype=np.float64)
    if hasattr(path, "write"):
        np.savez_compressed(path, **arrays)
    else:
        with open(path, "wb") as file:  # a name without ".npz" is kept as given (numpy would add it)
            np.savez_compressed(file, **arrays)


def config_json(config: Config) -> str:
    """The config's fields as JSON, keys sorted: the same text for equal configs."""
    return json.dumps(asdict(config), sort_keys=True)


def config_from_json(text: str) -> Config:
    """A Config from config_json's text; ValueError for anything else (a missing or unknown field, a
    wrong type, a value Config refuses)."""
    try:
        values = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"the config is not JSON: {error}") from None
    names = {f.name: f.type for f in fields(Config)}
    if not isinstance(values, dict) or set(values) != set(names):
        raise ValueError(f"the config must have exactly the fields {', '.join(sorted(names))}")
    for name, value in values.items():
        kind = {"str": str, "int": int, "bool": bool, "float": (int, float)}[names[name]]
        if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
            raise ValueError(f"the config's {name} must be a {names[name]}, got {value!r}")
    return Config(**{**values, "lr": float(values["lr"])})  # its own checks raise ValueError


def load_history(path) -> tuple[Config, History]:
    """A run written by save_history: (its Config, its History). Raises ValueError when the file is not
    such a run: unreadable or truncated, a config Config refuses, a parameter missing, extra or not
    of the shape Model.init(config) gives, a value not finite, steps or losses that do not agree."""
    with open(path, "rb") as file:  # a missing file is FileNotFoundError, not ValueError
        try:
            loaded = np.load(file, allow_pickle=False)
            if not isinstance(loaded, np.lib.npyio.NpzFile):
                raise ValueError("it is a single array, not an .npz archive")
            with loaded as npz:
                return _read_history(npz)
        except ValueError as error:
            raise ValueError(f"{path}: not a saved run: {error}") from None
        except (OSError, EOFError, KeyError, zipfile.BadZipFile, zlib.error) as error:
            raise ValueError(f"{path}: not a saved run (unreadable or truncated): {error}") from None


def _read_history(npz) -> tuple[Config, History]:
    def array(name: str, kinds: str, shape: tuple[int, ...] | None = None, most: int = 0) -> np.ndarray:
        """npz[name], of a dtype kind in kinds and this shape (or at most `most` elements)."""
        if name not in npz.files:
            raise ValueError(f"{name} is missing")
        limit = math.prod(shape) if shape is not None else most
        size = npz.zip.getinfo(f"{name}.npy").file_size  # before reading: nothing inflates past its size
        if size > 8 * limit + _HEADER_BYTES:
            raise ValueError(f"{name} holds {size} bytes, more than {limit} numbers")
        value = npz[name]
        if value.dtype.kind not in kinds or (shape is not None and value.shape != shape) or (
                shape is None and (value.ndim != 1 or not 1 <= value.size <= most)):
            wanted = shape if shape is not None else f"1 to {most} values"
            raise ValueError(f"{name} is {value.dtype} of shape {value.shape}, not {kinds!r} of {wanted}")
        return value

    if int(array("format", "iu", ())) != HISTORY_FORMAT:
        raise ValueError(f"its format is not {HISTORY_FORMAT}")
    config = config_from_json(str(array("config", "U", ())[()]))
    stopped = bool(array("stopped", "b", ()))
    steps = [int(step) for step in array("steps", "iu", most=config.steps + 1)]
    rising = all(a < b for a, b in zip(steps, steps[1:], strict=False))
    if steps[0] != 0 or not rising or steps[-1] > config.steps:
        raise ValueError(f"the checkpoints' steps must rise from 0 to at most {config.steps}")
    if not stopped and steps[-1] != config.steps:
        raise ValueError(f"a finished run ends at step {config.steps}, not {steps[-1]}")
    losses = array("losses", "f", (steps[-1],))
    if not np.isfinite(losses).all():
        raise ValueError("a loss is not finite")
    shapes = {name: value.shape for name, value in Model.init(config).params.items()}
    expected = {"format", "config", "stopped", "steps", "losses"}
    expected |= {f"c{index}/{name}" for index in range(len(steps)) for name in shapes}
    if set(npz.files) != expected:
        unknown, missing = sorted(set(npz.files) - expected)[:3], sorted(expected - set(npz.files))[:3]
        raise ValueError(f"its arrays do not match the config (unknown: {unknown}, missing: {missing})")
    checkpoints = []
    for index, step in enumerate(steps):
        params = {name: array(f"c{index}/{name}", "f", shape).astype(np.float64)
                  for name, shape in shapes.items()}
        for name, value in params.items():
            if not np.isfinite(value).all():
                raise ValueError(f"checkpoint {index} (step {step}): {name} has a value that is not finite")
        checkpoints.append((step, Model(config, params)))
    return config, History(losses=[float(loss) for loss in losses], checkpoints=checkpoints, stopped=stopped)
