"""What the agreement tests (pycute_agree.py, cute_agree.py) share: random layouts, one random
case of each operation with the post-condition its answer must meet, `tessel eval`'s notation
both ways, running `tessel eval` on a batch, and comparing two answers.

A case is drawn by `draw(rng, op)`: its expression for `tessel eval`, the inputs each reference
evaluates in its own way, and a post-condition, used where one side refuses. The same seed gives
the same cases in every test, so keep the order of the random draws when changing this file.
Layouts are pycute's `Layout` (from the `nvidia-cutlass` package, which ships CuTe's C++ headers
too), used here only as a value that can be evaluated.
"""
import subprocess
from collections import namedtuple

import pycute.layout as _pl
from pycute import Layout, coalesce, cosize, flatten, size

# the operations, in the order `rng.choice` draws them
OPS = [
    "coalesce", "coalesce_p", "filter", "composition", "composition_pow2", "composition_tiler",
    "complement", "right_inverse", "left_inverse", "logical_divide", "zipped_divide",
    "tiled_divide", "flat_divide", "logical_product", "zipped_product", "tiled_product",
    "flat_product", "blocked_product", "raked_product", "tile_to_shape", "make_ordered_layout",
    "size", "cosize"]

DIVIDES = ("logical_divide", "zipped_divide", "tiled_divide", "flat_divide")
PRODUCTS = ("logical_product", "zipped_product", "tiled_product", "flat_product")

_coalesce = _pl.coalesce
_composition = _pl.composition


def _coalesce_keeping_stride(layout, profile=None):
    """pycute's coalesce, except that a last leaf of size 1 is kept as CuTe C++'s `coalesce_x`
    keeps it: as a placeholder of size 2 (only its stride matters, to composition)."""
    if profile is None:
        shape, stride = flatten(layout.shape), flatten(layout.stride)
        shape, stride = (shape if isinstance(shape, tuple) else (shape,)), (
            stride if isinstance(stride, tuple) else (stride,))
        if shape[-1] == 1:
            return _coalesce(Layout(shape[:-1] + (2,), stride))
        return _coalesce(layout)
    return _coalesce(layout, profile)


def composition_cpp(a, b):
    """pycute's composition, except that past its domain A extends as its formula does, along its
    last leaf also when that leaf has size 1, as tessel and CuTe C++ (`coalesce_x`) do; pycute's
    `coalesce` drops the leaf first (docs/design.md). Raises where pycute's asserts fail."""
    _pl.coalesce = _coalesce_keeping_stride
    try:
        return _composition(a, b)
    finally:
        _pl.coalesce = _coalesce


# op: a name from OPS; expr: the text for `tessel eval`; args: the inputs (layouts, tuples of
# layouts for by-mode tilers, int tuples, ints); post: a check of an answer, or None
Case = namedtuple("Case", "op expr args post")


# ---- random inputs --------------------------------------------------------------------------------

def nest(xs, rng):
    if len(xs) == 1:
        return xs[0]
    out, i = [], 0
    while i < len(xs):
        k = min(rng.randint(1, 3), len(xs) - i)
        out.append(xs[i] if k == 1 else tuple(xs[i:i + k]))
        i += k
    return tuple(out)


def unflat_like(shape, vals):
    it = iter(vals)

    def go(s):
        return tuple(go(x) for x in s) if isinstance(s, tuple) else next(it)
    return go(shape)


def rand_layout(rng, n_max=4, pow2=False, injective=False, rank_min=1):
    n = rng.randint(rank_min, n_max)
    if pow2:
        s = [1 << rng.randint(0, 3) for _ in range(n)]
        d = [1 << rng.randint(0, 5) for _ in range(n)]
    else:
        s = [rng.randint(1, 6) for _ in range(n)]
        d = [rng.randint(0, 24) for _ in range(n)]
    if injective:
        order = list(range(n))
        rng.shuffle(order)
        ext = 1
        for i in order:
            d[i] = ext * rng.randint(1, 2)
            ext = d[i] * s[i]
    shape = nest(s, rng) if n > 1 else s[0]
    if n > 1 and not isinstance(shape, tuple):
        shape = (shape,)
    if rank_min > 1 and len(shape if isinstance(shape, tuple) else (shape,)) < rank_min:
        shape = tuple(s)
    return Layout(shape, unflat_like(shape, d))


def injective(l):
    im = [l(i) for i in range(size(l))]
    return len(set(im)) == len(im)


def eval_prod(xs):
    p = 1
    for x in xs:
        p *= x
    return p


def leaf_coords(shape):
    """Natural coordinates of `shape` with a single non-zero leaf, for every value of that leaf."""
    leaves = flatten(shape)
    for k, n in enumerate(leaves):
        for j in range(n):
            vals = [0] * len(leaves)
            vals[k] = j
            yield unflat_like(shape, vals) if isinstance(shape, tuple) else j


def product_post(n, whole=True):
    """A product of injective layouts: the right size, and (as a whole) injective."""
    def post(r):
        return min(flatten(r.shape)) > 0 and size(r) == n and (not whole or injective(r))
    return post


def tiler_for(rng, a):
    r = len(a)
    k = rng.randint(1, min(r, 2))
    return tuple(rand_layout(rng, 2, pow2=True) for _ in range(k))


def composition_post(a, b):
    """R = A o B: the size of B, A(B(c)) along each leaf of B alone (the by-mode definition),
    and everywhere for an injective B."""
    def post(r):
        if size(r) != size(b):
            return False
        for c in leaf_coords(b.shape):
            if b(c) < size(a) and r(c) != a(b(c)):
                return False
        if injective(b) or not isinstance(b.shape, tuple):
            return all(r(i) == a(b(i)) for i in range(size(b)) if b(i) < size(a))
        return True
    # with two or more moving leaves, tessel asks the divisibility conditions of each mode
    post.strict = (sum(1 for x, y in zip(flatten(b.shape), flatten(b.stride)) if x > 1 and y != 0) > 1
                   and cosize(b) > flatten(coalesce(a).shape)[0])
    return post


def divide_post(tilers):
    # a divide needs injective tilers (their complement); a zero shape is no layout
    def post(r):
        return all(injective(x) for x in tilers) and min(flatten(r.shape)) > 0
    return post


def draw(rng, op):
    """One random case of `op` (see Case)."""
    if op == "coalesce":
        a = rand_layout(rng)
        return Case(op, f"coalesce({fmt(a)})", (a,), None)
    if op == "coalesce_p":
        a = rand_layout(rng, rank_min=2)
        p = tuple(1 for _ in range(len(a)))
        return Case(op, f"coalesce({fmt(a)},{fmt_t(p)})", (a, p), None)
    if op == "filter":
        a = rand_layout(rng)
        return Case(op, f"filter({fmt(a)})", (a,), None)
    if op in ("composition", "composition_pow2"):
        a = rand_layout(rng, pow2=op.endswith("pow2"))
        b = rand_layout(rng, 3, pow2=op.endswith("pow2"))
        return Case(op, f"composition({fmt(a)},{fmt(b)})", (a, b), composition_post(a, b))
    if op == "composition_tiler":
        a = rand_layout(rng, pow2=True, rank_min=2)
        t = tiler_for(rng, a)
        return Case(op, f"composition({fmt(a)},{fmt_tiler(t)})", (a, t), None)
    if op == "complement":
        a = rand_layout(rng, 3, injective=True)
        m = cosize(a) * rng.randint(1, 4)
        return Case(op, f"complement({fmt(a)},{m})", (a, m), None)
    if op == "right_inverse":
        a = rand_layout(rng, 3, injective=rng.random() < 0.5)

        def post(r, a=a):
            return all(a(r(i)) == i for i in range(size(r)))
        # tessel follows C++ CuTe: stride-0 modes do not end the chain (pycute stops there)
        post.larger_ok = True
        return Case(op, f"right_inverse({fmt(a)})", (a,), post)
    if op == "left_inverse":
        a = rand_layout(rng, 3, injective=True)
        return Case(op, f"left_inverse({fmt(a)})", (a,), None)
    if op in DIVIDES:
        a = rand_layout(rng, pow2=True, rank_min=2)
        if rng.random() < 0.5:
            t = tiler_for(rng, a)
            txt = fmt_tiler(t)
        else:
            t = rand_layout(rng, 2, pow2=True)
            txt = fmt(t)
        tilers = list(t) if isinstance(t, tuple) else [t]
        return Case(op, f"{op}({fmt(a)},{txt})", (a, t), divide_post(tilers))
    if op in PRODUCTS:
        a = rand_layout(rng, 3, injective=True, rank_min=2)
        if rng.random() < 0.5:
            t = tuple(rand_layout(rng, 2, injective=True) for _ in range(rng.randint(1, 2)))
            txt = fmt_tiler(t)
        else:
            t = rand_layout(rng, 2, injective=True)
            txt = fmt(t)
        n = size(a) * (size(t) if not isinstance(t, tuple) else
                       eval_prod([size(x) for x in t]))
        # by mode, each mode's replicas are unique but modes may overlap one another
        return Case(op, f"{op}({fmt(a)},{txt})", (a, t), product_post(n, not isinstance(t, tuple)))
    if op in ("blocked_product", "raked_product"):
        a = rand_layout(rng, 3, injective=True, rank_min=2)
        b = rand_layout(rng, 3, injective=True, rank_min=2)
        return Case(op, f"{op}({fmt(a)},{fmt(b)})", (a, b), product_post(size(a) * size(b)))
    if op == "tile_to_shape":
        b = Layout((rng.randint(1, 4), rng.randint(1, 4)))
        if rng.random() < 0.5:
            b = Layout(b.shape, (b.shape[1], 1))
        shape = (b.shape[0] * rng.randint(1, 3), b.shape[1] * rng.randint(1, 3))
        return Case(op, f"tile_to_shape({fmt(b)},{fmt_t(shape)})", (b, shape), None)
    if op == "make_ordered_layout":
        n = rng.randint(1, 4)
        s = tuple(rng.randint(1, 6) for _ in range(n))
        o = tuple(rng.sample(range(n), n))
        return Case(op, f"make_ordered_layout({fmt_t(s)},{fmt_t(o)})", (s, o), None)
    assert op in ("size", "cosize"), op
    a = rand_layout(rng)
    return Case(op, f"{op}({fmt(a)})", (a,), None)


# ---- tessel's notation ----------------------------------------------------------------------------

def fmt_t(t):
    return "(" + ",".join(fmt_t(x) for x in t) + ")" if isinstance(t, tuple) else str(t)


def fmt(l):
    return fmt_t(l.shape) + ":" + fmt_t(l.stride)


def fmt_tiler(ts):
    return "<" + ",".join(fmt(t) for t in ts) + ">"


def parse_t(s, i=0):
    if s[i] == "(":
        out, i = [], i + 1
        while s[i] != ")":
            v, i = parse_t(s, i)
            out.append(v)
            if s[i] == ",":
                i += 1
        return tuple(out), i + 1
    j = i + 1 if s[i] == "-" else i
    while j < len(s) and s[j].isdigit():
        j += 1
    return int(s[i:j]), j


def parse_layout(s):
    sh, i = parse_t(s)
    assert s[i] == ":"
    st, _ = parse_t(s, i + 1)
    return Layout(sh, st)


def run_tessel(exe, exprs):
    """`tessel eval` on one expression per line: one answer line per expression."""
    out = subprocess.run([exe, "eval"], input="\n".join(exprs) + "\n",
                         capture_output=True, text=True, check=True).stdout.splitlines()
    assert len(out) == len(exprs), (len(out), len(exprs))
    return out


# ---- comparing answers ----------------------------------------------------------------------------

def same_function(a, b):
    return size(a) == size(b) and all(a(i) == b(i) for i in range(size(b)))


def agrees(ours, ref, by_mode=True):
    """tessel's answer (text) against a reference (a Layout or an int): as a function of 1-D
    coordinates and, with `by_mode`, mode by mode (the same rank, each top mode the same
    function)."""
    if isinstance(ref, int):
        return int(ours) == ref
    mine = parse_layout(ours)
    if not same_function(mine, ref):
        return False
    if not by_mode:
        return True
    rr = len(ref) if isinstance(ref.shape, tuple) else 1
    rm = len(mine) if isinstance(mine.shape, tuple) else 1
    if rr != rm:
        return False
    for k in range(rr):
        a, b = (mine[k], ref[k]) if rr > 1 or isinstance(ref.shape, tuple) else (mine, ref)
        if not same_function(a, b):
            return False
    return True
