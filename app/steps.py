"""The page's eight steps: title, formula and the course's what/why (chapter 004's walkthrough)."""

from dataclasses import dataclass


@dataclass(frozen=True)
class Step:
    title: str
    formula: str  # LaTeX
    what: str
    why: str


STEPS = {
    1: Step("A sentence is a grid: the embeddings X", r"X \in \mathbb{R}^{n \times d_{model}}",
            "Each token is already a row of d_model numbers; stacked, they make a grid: rows = tokens, "
            "columns = features.",
            "Attention never sees letters. It sees this grid: everything downstream is reshaping it."),
    2: Step("Three questions: Query, Key, Value (per head)",
            r"Q_i = X W_i^Q,\quad K_i = X_{kv} W_i^K,\quad V_i = X_{kv} W_i^V",
            "Each head multiplies the grid by its own three learned matrices (in self-attention "
            "X_kv = X).",
            "Each token has three jobs: ask 'what am I looking for?' (Q), advertise 'what do I offer?' "
            "(K), carry its content (V). Different W_i per head force different questions."),
    3: Step("One dot product per pair: raw scores", r"S_i = Q_i K_i^{\top},\quad s_{jk} = q_j \cdot k_k",
            "Compare every query row with every key row: multiply matching entries and add them up.",
            "The dot product is large when two arrows point the same way and small or negative when they "
            "point apart: the cheapest 'does this key answer this query?' meter."),
    4: Step("Scale, then softmax: a fair split of attention",
            r"A_i = \operatorname{softmax}\!\left(\frac{Q_i K_i^{\top}}{\sqrt{d_k}}\right)",
            "Divide every score by √d_k, then turn each row into positive weights that add up to 1.",
            "Long rows make dot products large, and huge scores make softmax spike onto one token so "
            "gradients die; dividing by √d_k keeps them in a healthy range. Softmax gives a soft blend, "
            "not a hard pick, so the network can learn through it."),
    5: Step("Weighted sum of values: each head's answer", r"\text{head}_i = A_i V_i",
            "Row j of a head's output is a blend of all value rows, weighted by how much token j "
            "attended to each.",
            "Keys were only for matching; once we know how much to listen, we gather the content, which "
            "lives in V. Splitting 'who to listen to' from 'what you hear' lets them be tuned apart."),
    6: Step("Heads side by side: do they disagree?",
            r"D_{ab} = \lVert A_a[j,:] - A_b[j,:] \rVert_2",
            "Pick a query token and lay every head's attention row next to the others; a number says how "
            "far apart they are, and the entropy says whether a head has an opinion at all.",
            "Each head learns its own view, so no single head does all the work. A flat (uniform) head "
            "has nothing to say; that is not a disagreement."),
    7: Step("Concatenate, then one final mix W_O",
            r"\text{MultiHead} = \operatorname{Concat}(\text{head}_1, \dots, \text{head}_h)\, W^O "
            r"= \textstyle\sum_i \text{head}_i\, W^O_{[i]}",
            "Lay the h head outputs side by side, then multiply by one last learned matrix.",
            "Averaging would blend the viewpoints into mush; concatenation keeps every head's answer "
            "intact. W_O is the mixer that lets the lanes talk, and it snaps the width back to d_model."),
    8: Step("The output next to the input", r"\text{output} \in \mathbb{R}^{n \times d_{model}}",
            "A grid the same shape as the one we started with.",
            "Every token's row now carries what it gathered from the tokens it attended to."),
}
