"""Every worked example of the course text (its four chapters) as a named, runnable setup.

Each Example holds tokens, embeddings, per-head projections, W_O and options, and
``run()`` reproduces the chapter's printed numbers. Where a chapter leaves something
unspecified, the choice is documented in the example's ``choices`` text.

Score-level examples (C to G) give only a row of scores and the values. They are
built as one query attending over keys whose embedding is [score, value]:
the query x = [1, 0]; W_Q = W_K = [[1], [0]] read the score, W_V = [[0], [1]] reads
the value, and W_O = [[0, 1]] writes the blended value into the output's second column.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from course.i18n import N_, translator
from mha_core.init import random_weights, select_matrix
from mha_core.setup import Scaling, Setup, setup_fields


@dataclass(frozen=True)
class Lesson:
    """How a class meets an example: the point to find, the presenter screen that shows it, and the
    chapter's own Forecast box (a question to ask before that screen, and the chapter's answer)."""

    look_for: str  # the chapter's point and the numbers to find on the page
    screen: str  # the presenter screen where the point appears: its key (course/steps.py SCREENS)
    forecast: str = ""  # asked before `screen` is revealed
    forecast_answer: str = ""  # the chapter's forecast, shown on Reveal
    from_chapter: bool = True  # False: the example and its forecast are ours, beyond the chapters


@dataclass(frozen=True, kw_only=True)
class Example(Setup):
    """A worked example: its inputs (a Setup: tokens, matrices, mask, scale) and what it teaches."""

    key: str
    title: str
    source: str  # which chapter and example
    story: str  # what the example teaches, in the chapter's words where possible
    focus_query: int = 0  # the query row the chapter talks about
    choices: str = ""  # what we chose where the chapter is silent
    expected: dict = field(default_factory=dict)  # the chapter's printed numbers, for tests and captions
    recipe: str = ""  # NumPy statements that rebuild the arrays (an exported script's, for big examples)
    lesson: Lesson | None = None  # what to look for, for the presenter and the workbench

    def __post_init__(self):
        object.__setattr__(self, "origin", self.key)  # an example's setup says which example it is

    @property
    def n_heads(self) -> int:
        return self.w_q.shape[0]

    @property
    def d_model(self) -> int:
        return self.x.shape[1]

    def setup(self) -> Setup:
        """The inputs alone, as the page holds them."""
        return Setup(**{name: getattr(self, name) for name in setup_fields()})


SCORE_LEVEL_CHOICES = N_("Score-level example: each key's embedding is [its score, its value]; x_kv column 1 "
                         "holds the chapter's scores and column 2 its values.")  # then the example's own
NO_SCALING = Scaling("none")  # the score-level examples give their scores as they enter the softmax


def choices_in(choices: str, language: str = "en") -> str:
    """An example's ``choices`` in ``language``: a score-level example's are the common sentence, then its own
    (a setup from a file or a link may carry any text: gettext returns what it does not know unchanged)."""
    _ = translator(language)
    common = SCORE_LEVEL_CHOICES + " "
    if choices.startswith(common):
        own = choices[len(common):]
        return _(SCORE_LEVEL_CHOICES) + " " + (_(own) if own else "")
    return _(choices)


def _heads(*matrices) -> np.ndarray:  # h x [d_model, d] -> [h, d_model, d]
    return np.stack([np.asarray(m, dtype=float) for m in matrices])


def _score_level(key, title, source, story, query, keys, scores, values, *, scaling=NO_SCALING,
                 choices="", expected=None) -> Example:
    """One query over keys embedded as [score, value] (see the module docstring)."""
    pick_score = [[1.0], [0.0]]
    return Example(
        key=key, title=title, source=source, story=story,
        tokens=(query,), x=np.array([[1.0, 0.0]]),
        kv_tokens=tuple(keys), x_kv=np.column_stack([scores, values]).astype(float),
        w_q=_heads(pick_score), w_k=_heads(pick_score), w_v=_heads([[0.0], [1.0]]),
        w_o=np.array([[0.0, 1.0]]), scaling=scaling,
        choices=SCORE_LEVEL_CHOICES + " " + choices,
        expected=expected or {},
    )


def _cat_chases_mouse() -> Example:
    keep_first_two = [[1, 0], [0, 1], [0, 0], [0, 0]]
    keep_last_two = [[0, 0], [0, 0], [1, 0], [0, 1]]
    return Example(
        key="cat_chases_mouse",
        title=N_("Cat chases mouse: tracing two heads"),
        source=N_("Chapter 000, worked example: tracing through two heads"),
        story=N_("Head 1 keeps the first two embedding dimensions for queries and keys and the last two "
               "for values. 'mouse' attends most strongly to itself; 'cat' splits its attention between "
               "itself and 'mouse'; 'chases' between itself and 'mouse'. Head 2 uses different "
               "projections and computes a completely different set of scores from the same X."),
        tokens=("cat", "chases", "mouse"),
        x=np.array([[1, 0, 1, 0], [0, 1, 0, 1], [1, 1, 0, 0]], dtype=float),
        w_q=_heads(keep_first_two, keep_last_two),
        w_k=_heads(keep_first_two, keep_last_two),
        w_v=_heads(keep_last_two, keep_first_two),
        w_o=np.eye(4),
        focus_query=2,
        choices=N_("The chapter leaves head 2 open. We mirror head 1: head 2's queries and keys keep the "
                   "last two dimensions and its values the first two. 'mouse' = [1, 1, 0, 0] has nothing "
                   "there, so its head-2 row is flat: a head with nothing to say. W_O is the identity, so "
                   "the output is the concatenation itself."),
        expected={"scores_head1": [[1, 0, 1], [0, 1, 1], [1, 1, 2]],
                  "scaled_head1": [[0.71, 0, 0.71], [0, 0.71, 0.71], [0.71, 0.71, 1.41]]},
    )


def _the_cat_sat(two_heads: bool) -> Example:
    x = np.array([[2, 0], [0, 2], [1, 1]], dtype=float)  # the, cat, sat as points in 2-D
    horizontal, vertical = [[1.0], [0.0]], [[0.0], [1.0]]
    common = dict(tokens=("the", "cat", "sat"), x=x, w_o=np.eye(2), focus_query=2,
                  source=N_("Chapter 002, self-attention & multi-head attention"))
    if not two_heads:
        return Example(
            key="the_cat_sat_one_head", title=N_("The cat sat: one head, 'sat' is uniform"),
            story=N_("Row 'sat' is exactly uniform: it sits equally close to both 'the' and 'cat', so it has "
                   "no reason to favor either. 'The' mostly attends to itself."),
            w_q=_heads(np.eye(2)), w_k=_heads(np.eye(2)), w_v=_heads(np.eye(2)),
            choices=N_("The chapter draws the tokens as points: the = (2, 0), cat = (0, 2), sat = (1, 1); "
                       "all projections are the identity."),
            expected={"sat_row": [1 / 3, 1 / 3, 1 / 3]}, **common,
        )
    return Example(
        key="the_cat_sat_two_heads", title=N_("The cat sat: two heads that disagree"),
        story=N_("Head A projects each token onto its horizontal axis, head B onto its vertical axis. For "
               "'the' and 'cat' one head goes flat while the other has a clear opinion: that head simply "
               "has nothing to say, not a real disagreement. For 'sat' both heads have a strong, opposite "
               "opinion about where to look."),
        w_q=_heads(horizontal, vertical), w_k=_heads(horizontal, vertical),
        w_v=_heads(horizontal, vertical),
        choices=N_("The chapter leaves the values open: each head's value is the same coordinate it scores "
                 "on (d_v = 1), and W_O is the identity, so the output is (head A, head B)."),
        expected={"sat_head_a": [0.67, 0.09, 0.24], "sat_head_b": [0.09, 0.67, 0.24],
                  "sat_softmax_a": [0.665, 0.090, 0.245], "disagreement": 0.813},
        **common,
    )


def _example_a() -> Example:
    return Example(
        key="ex_a_single_head", title=N_("A: single head, the bare core"),
        source=N_("Chapter 001, example A"),
        story=N_("h = 1, d_k = 2: strip away parallelism to see the core. The diagonal score is 1 "
               "(self-match), off-diagonal 0; scaled by 1/sqrt(2) it is 0.707; each output row is a "
               "convex mix of the values (2, 0) and (0, 4)."),
        tokens=("t1", "t2"), x=np.eye(2),
        w_q=_heads(np.eye(2)), w_k=_heads(np.eye(2)), w_v=_heads(np.diag([2.0, 4.0])),
        w_o=np.eye(2),
        choices=N_("The chapter gives Q K^T = I and values (2, 0), (0, 4): X = I, W_Q = W_K = I, "
                   "W_V = diag(2, 4), W_O = I."),
        expected={"scaled_diag": 0.707, "row1": [0.6698, 0.3302],
                  "head1": [[1.3396, 1.3208], [0.6604, 2.6792]]},
    )


def _example_b() -> Example:
    return Example(
        key="ex_b_two_heads_one_token", title=N_("B: two heads split then re-join (one token)"),
        source=N_("Chapter 001, example B"),
        story=N_("With a single token attention cannot gather anything from neighbours: each softmax row "
               "is [1], each head outputs its own value slice, concatenation rebuilds (1, 2, 3, 4), and "
               "W_O = I changes nothing."),
        tokens=("token",), x=np.array([[1.0, 2.0, 3.0, 4.0]]),
        w_q=select_matrix((2, 4, 2)), w_k=select_matrix((2, 4, 2)), w_v=select_matrix((2, 4, 2)),
        w_o=np.eye(4),
        choices=N_("Select matrices: head 1 keeps dimensions 1-2, head 2 dimensions 3-4."),
        expected={"head1": [1, 2], "head2": [3, 4], "output": [1, 2, 3, 4]},
    )


def _random_recipe(seed: int, d_model: int, h: int, d: int, rows: dict[str, int]) -> str:
    """The NumPy statements that draw what random_weights and then the rows' standard_normal drew."""
    draw = f"rng.standard_normal(({h}, {d_model}, {d})) / np.sqrt({d_model})  # [h, d_model, d]"
    weights = "".join(f"{name} = {draw}\n" for name in ("w_q", "w_k", "w_v"))
    w_o = f"w_o = rng.standard_normal(({h * d}, {d_model})) / np.sqrt({h * d})  # [h * d_v, d_model]\n"
    inputs = "".join(f"{name} = rng.standard_normal(({n}, {d_model}))\n" for name, n in rows.items())
    return f"rng = np.random.default_rng({seed})  # the example's own random numbers\n{weights}{w_o}{inputs}"


def _example_h(rng: np.random.Generator) -> Example:
    weights = random_weights(rng, d_model=512, n_heads=8, d_k=64, d_v=64)
    return Example(
        key="ex_h_cross_attention", title=N_("H: cross-attention, 3 queries over 5 keys"),
        source=N_("Chapter 001, example H"),
        story=N_("Queries come from the decoder (3 tokens), keys and values from the encoder (5 tokens): "
               "each head's score grid is 3 x 5, not square, and its output 3 x 64; 8 x 64 = 512 = "
               "d_model after concatenation."),
        tokens=("le", "chat", "dort"), kv_tokens=("the", "cat", "is", "sleeping", "."),
        x=rng.standard_normal((3, 512)), x_kv=rng.standard_normal((5, 512)), **weights,
        choices=N_("The chapter gives only the shapes (d_model 512, h 8, d_k = d_v = 64): embeddings and "
                   "weights are random (random seed 1), std 1/sqrt(fan_in)."),
        expected={"scores_shape": (8, 3, 5), "head_shape": (3, 64), "concat_shape": (3, 512)},
        recipe=_random_recipe(1, 512, 8, 64, {"x": 3, "x_kv": 5}),
    )


def _example_i(rng: np.random.Generator) -> Example:
    weights = random_weights(rng, d_model=512, n_heads=8, d_k=64, d_v=64)
    return Example(
        key="ex_i_parameter_count", title=N_("I: count the parameters (d_model 512, h 8)"),
        source=N_("Chapter 001, example I"),
        story=N_("Each W_i^Q is 512 x 64 = 32768 numbers; 3 x 8 of them make 786432; W_O adds 262144; "
               "the total 1048576 = 4 x 512^2. All heads' W^Q together equal one 512 x 512 matrix."),
        tokens=("the", "cat", "sat", "on", "the", "mat"), x=rng.standard_normal((6, 512)), **weights,
        choices=N_("Random weights (random seed 2) of the chapter's sizes; the count is of these very "
                   "arrays."),
        expected={"per_head_projection": 32768, "projections": 786432, "w_o": 262144,
                  "total": 1048576},
        recipe=_random_recipe(2, 512, 8, 64, {"x": 6}),
    )


def _visual_walkthrough(rng: np.random.Generator) -> Example:
    weights = random_weights(rng, d_model=6, n_heads=3, d_k=2, d_v=2)
    return Example(
        key="visual_walkthrough", title=N_("Visual walkthrough: 'the cat sat', 6 columns, 3 heads"),
        source=N_("Chapter 004, visual walkthrough"),
        story=N_("A sentence is a stack of arrows: 'the cat sat' becomes 3 rows of d_model = 6 numbers. "
               "The wide grid is sliced into h = 3 coloured bands of width d_k = 2; each band is an "
               "independent little attention machine, then W_O mixes the lanes back to width 6."),
        tokens=("the", "cat", "sat"), x=np.round(rng.standard_normal((3, 6)), 2),
        **{name: np.round(w, 2) for name, w in weights.items()},
        choices=N_("The chapter draws the grid without numbers: random values (random seed 4), rounded to 2 "
                   "decimals "
                   "so they can be read and typed."),
    )


def _decoder(rng: np.random.Generator) -> Example:
    """A decoder layer as today's language models have it: causal, with grouped key/value heads."""
    weights = random_weights(rng, d_model=8, n_heads=4, d_k=2, d_v=2)
    weights["w_k"], weights["w_v"] = weights["w_k"][::2], weights["w_v"][::2]  # [2, 8, 2]: g = 2 groups
    return Example(
        key="decoder_gqa", title=N_("A decoder: causal, 4 query heads sharing 2 key/value heads"),
        source=N_("Beyond the chapters: a decoder layer of today's language models"),
        story=N_("A decoder (GPT, Llama, Mistral) writes one token at a time, so each token may look only at "
                 "itself and the tokens before it: the causal mask. Its 4 query heads share 2 key/value "
                 "heads (grouped-query attention): heads 1 and 2 score against the same keys and blend the "
                 "same values, as do heads 3 and 4, so the cache of keys and values kept while generating is "
                 "half the size."),
        tokens=("the", "cat", "sat"), x=np.round(rng.standard_normal((3, 8)), 2),
        **{name: np.round(w, 2) for name, w in weights.items()}, mask="causal", focus_query=2,
        choices=N_("Random values (random seed 493, picked so that every score is large enough to print), "
                   "rounded to 2 decimals; the causal mask is on, as in every decoder."),
    )


def _score_examples() -> list[Example]:
    return [
        _score_level(
            "ex_c_equal_scores", N_("C: all scores equal -> uniform weights"), N_("Chapter 001, example C"),
            N_("Identical scores mean no token is preferred: attention is uniform (1/3 each) and the output "
               "is the plain average, 20. This is the maximum-entropy, 'I don't know who matters' case."),
            "q", ("k1", "k2", "k3"), [2, 2, 2], [10, 20, 30],
            expected={"weights": [1 / 3, 1 / 3, 1 / 3], "output": 20},
        ),
        _score_level(
            "ex_d_one_huge_score", N_("D: one huge score -> one-hot"), N_("Chapter 001, example D"),
            N_("Exponentials magnify gaps: e^20 dwarfs e^0, so softmax collapses onto token 3 and the "
               "output is 29.99999994, glued to v_3 = 30. This is the hard-attention limit."),
            "q", ("k1", "k2", "k3"), [0, 0, 20], [10, 20, 30],
            expected={"w3": 0.99999999588, "w1": 0.0000000021, "output": 29.99999994},
        ),
        _score_level(
            "ex_e_negative_score", N_("E: zero and negative scores"), N_("Chapter 001, example E"),
            N_("e^-3 is small but positive: a negative score means 'listen less', never a negative "
               "amount. Token 2 wins most attention and the output, 198.20, lies between 100 and 200."),
            "q", ("k1", "k2"), [-3, 1], [100, 200],
            expected={"weights": [0.01799, 0.98201], "output": 198.20},
        ),
        _score_level(
            "ex_f_unscaled", N_("F: scaling matters (unscaled)"), N_("Chapter 001, example F"),
            N_("Unscaled, the gap 32 makes softmax nearly one-hot on token 1 (w_1 = 1 - e^-32): "
               "gradients die. Compare with the scaled version."),
            "q", ("k1", "k2"), [40, 8], [1, 0], scaling=Scaling("none"),
            choices=N_("Values 1 and 0 (unspecified in the chapter) make the output equal w_1."),
            expected={"w1": 0.99999999999999},
        ),
        _score_level(
            "ex_f_scaled", N_("F: scaling matters (divided by sqrt(64) = 8)"), N_("Chapter 001, example F"),
            N_("Divided by sqrt(d_k) = 8 for d_k = 64, the scores become (5, 1), gap 4: w_1 = 0.982 "
               "leaves real weight (0.018) on token 2, so gradients flow to it."),
            "q", ("k1", "k2"), [40, 8], [1, 0], scaling=Scaling("sqrt_of", 64),
            choices=N_("The text's d_k = 64 is the scaling 'divide by √64' (= × 1/8) on this one-column "
                       "toy; values 1 and 0 make the output equal w_1."),
            expected={"scaled": [5, 1], "w1": 0.9820},
        ),
        _score_level(
            "ex_g_coreference", N_("G: pronoun co-reference, one head specialises"),
            N_("Chapter 001, example G"),
            N_("This head's scores for the query 'it' favour 'cat' (3.0): most of the attention of 'it' "
               "(about 70%) lands on 'cat' -- the head has learned co-reference."),
            "it", ("cat", "ate", "the", "fish", "because", "it"), [3.0, 0.5, 0.2, 1.0, 0.3, 0.6],
            [1, 0, 0, 0, 0, 0],
            choices=N_("The chapter gives six scores but not the sentence; we chose the words. Value 1 "
                       "marks 'cat', so the output is the weight on 'cat'."),
            expected={"w_cat": 0.6963},
        ),
    ]


def all_examples() -> dict[str, Example]:
    """Every example by key, in the order a class would meet them."""
    examples = [
        _the_cat_sat(two_heads=True),
        _the_cat_sat(two_heads=False),
        _cat_chases_mouse(),
        _example_a(),
        _example_b(),
        *_score_examples(),
        _example_h(np.random.default_rng(1)),
        _example_i(np.random.default_rng(2)),
        _visual_walkthrough(np.random.default_rng(4)),
        _decoder(np.random.default_rng(493)),
    ]
    return {example.key: replace(example, lesson=LESSONS[example.key]) for example in examples}


LESSONS = {  # each names the presenter screen of its point (course/steps.py SCREENS)
    "the_cat_sat_two_heads": Lesson(
        N_("Row 'sat': head 1 puts 0.67 on 'the', head 2 puts 0.67 on 'cat' (each 0.24 on 'sat' itself): "
           "two strong, opposite opinions, L2 distance 0.813. For 'the' and 'cat' one head is flat instead."),
        "disagreement",
        N_("'sat' = (1, 1) sits between 'the' = (2, 0) and 'cat' = (0, 2). Head 1 sees only the "
           "horizontal axis, head 2 only the vertical one. Where will 'sat' look in each head?"),
        N_("Head 1 looks mostly at 'the' (0.67), head 2 mostly at 'cat' (0.67): they disagree.")),
    "the_cat_sat_one_head": Lesson(
        N_("Row 'sat' is exactly uniform, 1/3 = 0.33 on each key: it is as close to 'the' as to 'cat'. "
           "'the' mostly attends to itself."), "softmax",
        N_("'sat' = (1, 1) is equally close to 'the' = (2, 0) and 'cat' = (0, 2). How will it split its "
           "attention?"),
        N_("Evenly: 1/3 on each token, since its scores with 'the', 'cat' and itself are all 2.")),
    "cat_chases_mouse": Lesson(
        N_("Head 1's raw scores: 'mouse' with itself scores 2, the other pairs 0 or 1; scaled by 1/sqrt(2) "
           "they become 1.41 and 0.71. 'mouse' attends most to itself. Head 2's 'mouse' row is flat."),
        "dot_product"),
    "ex_a_single_head": Lesson(
        N_("The scaled diagonal is 1/sqrt(2) = 0.707; row 1's weights are 0.6698 and 0.3302; head output "
           "row 1 = (1.34, 1.32): a convex mix of the values (2, 0) and (0, 4)."), "softmax",
        N_("Q K^T = I and the values are (2, 0) and (0, 4). What will each output row look like?"),
        N_("Close to its own value but blurred: each row is a convex mix of (2, 0) and (0, 4), so both "
           "coordinates lie inside [0, 4]; row 1 leans toward (2, 0), row 2 toward (0, 4).")),
    "ex_b_two_heads_one_token": Lesson(
        N_("Every softmax row is [1]: head 1 outputs (1, 2), head 2 (3, 4), and the output is (1, 2, 3, 4), "
           "the input itself."), "concatenate",
        N_("With a single token, what can attention gather, and what will the output be?"),
        N_("Nothing from neighbours: concatenation rebuilds the 4-vector and W_O = I changes nothing, so "
           "the output is (1, 2, 3, 4).")),
    "ex_c_equal_scores": Lesson(
        N_("Equal scores give uniform weights, 1/3 = 0.33 each, and the output 20: the plain average of 10, "
           "20 and 30."), "softmax",
        N_("All three scores are 2. What weights does softmax give, and what is the output?"),
        N_("Uniform, 1/3 each: no token is preferred, so the output is the plain average, 20.")),
    "ex_d_one_huge_score": Lesson(
        N_("The winner takes 1 − 4.1e-9 (hover it: 0.99999999588); the others get 2.1e-9 each; the output "
           "reads 30.00 on its cell and 29.99999994 in its hover: glued to v_3 = 30."), "softmax",
        N_("Scores 0, 0 and 20. Where does the attention go, and what is the output?"),
        N_("Almost all on token 3: softmax collapses towards one-hot, so the output is near 30.")),
    "ex_e_negative_score": Lesson(
        N_("The negative score still gets a positive weight, 0.018; token 2 takes 0.982 and the output is "
           "198.20, between 100 and 200."), "softmax",
        N_("Scores -3 and 1. Can the first weight be negative? Where will the output lie?"),
        N_("Token 2 wins most attention, but both weights stay positive: the output lies between 100 and "
           "200, nearer 200.")),
    "ex_f_unscaled": Lesson(
        N_("Unscaled, the gap of 32 makes the weights (1 - 1.3e-14, 1.3e-14): one-hot, and gradients die. "
           "Compare with 'F: scaling matters (divided by sqrt(64) = 8)': there token 2 keeps real weight."),
        "softmax",
        N_("Scores 40 and 8, not scaled. How peaked will the weights be?"),
        N_("Nearly one-hot on token 1: the gap 32 is huge, so the softmax is 'peaky' and gradients die.")),
    "ex_f_scaled": Lesson(
        N_("Divided by 8 the scores become 5 and 1 (gap 4): w_1 = 0.982 and 0.018 is left for token 2, so "
           "gradients still reach it."), "softmax",
        N_("Scores 40 and 8, divided by sqrt(64) = 8. How peaked will the weights be now?"),
        N_("The gap shrinks from 32 to 4: softer, healthier weights (0.982 and 0.018).")),
    "ex_g_coreference": Lesson(
        N_("The query 'it' puts 0.6963 of its attention on 'cat' (score 3.0): this head has learned "
           "co-reference."), "softmax",
        N_("'cat' has the top score, 3.0; the others are 1.0 or less. Where will 'it' look?"),
        N_("Mostly at 'cat': the head does its co-reference job (about 70 %).")),
    "ex_h_cross_attention": Lesson(
        N_("Each head's score grid is 3 x 5 (3 decoder queries, 5 encoder keys), not square; each head's "
           "output is 3 x 64 and the concatenation 3 x 512 = d_model."), "dot_product",
        N_("3 queries from the decoder, 5 keys from the encoder, d_k = 64. What shape is each head's "
           "score grid, and each head's output?"),
        N_("Scores: one row per query, one column per key, 3 x 5. Output: one row per query, 3 x 64.")),
    "ex_i_parameter_count": Lesson(
        N_("W_Q, W_K and W_V have 262,144 numbers each (8 heads x 512 x 64), W_O 262,144: 1,048,576 in all "
           "= 4 x 512^2."), "cost",
        N_("d_model = 512 and h = 8. About how many parameters does this block have?"),
        N_("The four big matrices are each effectively 512 x 512, so about 4 x 512^2, roughly a million "
           "(exactly 1,048,576).")),
    "visual_walkthrough": Lesson(
        N_("The 6 columns of X are sliced into 3 coloured bands of width 2; each band runs its own "
           "attention, and W_O mixes the three lanes back to width 6."), "split"),
    "decoder_gqa": Lesson(
        N_("Causal: row 1 'the' puts 1.00 on itself in every head, row 3 'sat' spreads over all three "
           "tokens, and every cell above the diagonal is blank: weight 0. Heads 1 and 2 read the same keys "
           "(K/V₁), yet their queries differ, so their weights differ."), "softmax",
        N_("Each token may look only at itself and the tokens before it. How much weight does the first "
           "token, 'the', put on itself?"),
        N_("All of it, 1.00, in every head: it sees no other token."), from_chapter=False),
}


DEFAULT_EXAMPLE = "the_cat_sat_two_heads"


GENERATED = ("random", "blank")  # examples made on demand rather than taken from a chapter


def generated_setup(kind: str, seed: int) -> Setup:
    """The "random" and "blank" examples: 'the cat sat on the mat', d_model 8, h 2, d_k = d_v = 4.

    Random queries and keys are drawn wide enough (scaled scores with a spread of about 2.5)
    that the heads have opinions worth discussing rather than near-uniform rows; numbers are
    rounded to two decimals so that they can be read and typed. Blank is zeros, with W_O the
    identity so that the output still shows the heads.
    """
    if kind not in GENERATED:
        raise ValueError(f"kind must be one of {GENERATED}, got {kind!r}")
    tokens = ("the", "cat", "sat", "on", "the", "mat")
    n, d_model, h, d = len(tokens), 8, 2, 4
    if kind == "blank":
        return Setup(tokens=tokens, x=np.zeros((n, d_model)), w_q=np.zeros((h, d_model, d)),
                     w_k=np.zeros((h, d_model, d)), w_v=np.zeros((h, d_model, d)),
                     w_o=select_matrix((h * d, d_model)), origin="blank")
    rng = np.random.default_rng(seed)
    wide = np.sqrt(2.5 / d_model)  # std of W_Q, W_K: each q, k entry then has variance 2.5
    arrays = dict(x=rng.standard_normal((n, d_model)), w_q=wide * rng.standard_normal((h, d_model, d)),
                  w_k=wide * rng.standard_normal((h, d_model, d)), **{
                      name: w for name, w in random_weights(rng, d_model, h, d, d).items()
                      if name in ("w_v", "w_o")})
    return Setup(tokens=tokens, origin="random", **{name: np.round(a, 2) for name, a in arrays.items()})
