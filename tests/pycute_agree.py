#!/usr/bin/env python3
"""Random expressions of every operation, evaluated by `tessel eval` and by CUTLASS's own Python
reference (pycute, from the `nvidia-cutlass` package), compared as functions and mode by mode.

usage: pycute_agree.py TESSEL_BINARY [COUNT] [SEED]

Operations pycute lacks (flat_divide, flat_product, blocked_product, raked_product, tile_to_shape,
make_ordered_layout) are written here from pycute's primitives, following CuTe's C++ definitions.
Where tessel rejects an expression that pycute evaluates, pycute's answer must break the
operation's post-condition (tessel checks the divisibility conditions that pycute only asserts in
part); otherwise that is a disagreement.
Prints one line per disagreement and a last line 'N passed, M failed'.

One deliberate difference is patched into pycute's composition: a one-element A (size 1) extends
past its domain along its last stride, where pycute's `coalesce` makes it `1:0` (tiles past a
size-1 mode would all alias its element 0; tessel's docs/design.md).
"""
import random
import subprocess
import sys

from pycute import (Layout, coalesce, complement, composition, filter as lfilter, flatten,
                    left_inverse, logical_divide, logical_product, make_layout, right_inverse,
                    size, tiled_divide, tiled_product, zipped_divide, zipped_product, cosize)


import pycute.layout as _pl

_coalesce = _pl.coalesce


def _coalesce_keeping_stride(layout, profile=None):
    """pycute's coalesce, except that a one-element layout keeps its last stride (see above)."""
    c = _coalesce(layout, profile) if profile is not None else _coalesce(layout)
    if profile is None and size(layout) == 1:
        return Layout(1, flatten(layout.stride)[-1] if isinstance(layout.stride, tuple) else layout.stride)
    return c


_orig_composition = _pl.composition


def _composition(a, b):
    _pl.coalesce = _coalesce_keeping_stride
    try:
        return _orig_composition(a, b)
    finally:
        _pl.coalesce = _coalesce


_pl.composition = _composition
composition = _composition


# ---- pycute completions (CuTe C++ definitions) ---------------------------------------------------

def modes(l):
    return [l[i] for i in range(len(l))]


def flat_of_zipped(z):
    return make_layout(modes(z[0]) + modes(z[1]))


def flat_divide(a, t):
    return flat_of_zipped(zipped_divide(a, t))


def flat_product(a, t):
    return flat_of_zipped(zipped_product(a, t))


def append_to(l, r):
    ms = modes(l) if isinstance(l.shape, tuple) else [l]
    return make_layout(ms + [Layout(1, 0)] * (r - len(ms)))


def zip_product(a, b, raked):
    r = max(len(a), len(b))
    p = logical_product(append_to(a, r), append_to(b, r))
    return make_layout(make_layout(p[1][i], p[0][i]) if raked else make_layout(p[0][i], p[1][i])
                       for i in range(r))


def make_ordered_layout(shape, order):
    fs, fo = flatten(shape), flatten(order)
    strides = [0] * len(fs)
    acc = 1
    for i in sorted(range(len(fs)), key=lambda k: (fo[k], k)):
        strides[i] = acc
        acc *= fs[i]
    it = iter(strides)

    def unflat(s):
        return tuple(unflat(x) for x in s) if isinstance(s, tuple) else next(it)
    return Layout(shape, unflat(shape))


def tile_to_shape(block, shape):
    r = len(shape)
    pb = append_to(block, r)
    ps = tuple(size(shape[i]) // size(pb[i]) for i in range(r))
    assert all(size(shape[i]) % size(pb[i]) == 0 for i in range(r))
    return coalesce(zip_product(pb, Layout(ps), False), ps)


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


def fmt_t(t):
    return "(" + ",".join(fmt_t(x) for x in t) + ")" if isinstance(t, tuple) else str(t)


def fmt(l):
    return fmt_t(l.shape) + ":" + fmt_t(l.stride)


def fmt_tiler(ts):
    return "<" + ",".join(fmt(t) for t in ts) + ">"


def tiler_for(rng, a):
    r = len(a)
    k = rng.randint(1, min(r, 2))
    return tuple(rand_layout(rng, 2, pow2=True) for _ in range(k))


def gen(rng):
    """(expression text, pycute thunk, post-condition check for a rejected expression or None)."""
    op = rng.choice([
        "coalesce", "coalesce_p", "filter", "composition", "composition_pow2", "composition_tiler",
        "complement", "right_inverse", "left_inverse", "logical_divide", "zipped_divide",
        "tiled_divide", "flat_divide", "logical_product", "zipped_product", "tiled_product",
        "flat_product", "blocked_product", "raked_product", "tile_to_shape", "make_ordered_layout",
        "size", "cosize"])
    if op == "coalesce":
        a = rand_layout(rng)
        return f"coalesce({fmt(a)})", lambda: coalesce(a), None
    if op == "coalesce_p":
        a = rand_layout(rng, rank_min=2)
        p = tuple(1 for _ in range(len(a)))
        return f"coalesce({fmt(a)},{fmt_t(p)})", lambda: coalesce(a, p), None
    if op == "filter":
        a = rand_layout(rng)
        return f"filter({fmt(a)})", lambda: lfilter(a), None
    if op in ("composition", "composition_pow2"):
        a = rand_layout(rng, pow2=op.endswith("pow2"))
        b = rand_layout(rng, 3, pow2=op.endswith("pow2"))

        def post(r, a=a, b=b):
            if size(r) != size(b):
                return False
            # along each leaf of B alone (the by-mode definition), and everywhere for injective B
            for c in leaf_coords(b.shape):
                if b(c) < size(a) and r(c) != a(b(c)):
                    return False
            if injective(b) or not isinstance(b.shape, tuple):
                return all(r(i) == a(b(i)) for i in range(size(b)) if b(i) < size(a))
            return True
        # with two or more moving leaves, tessel asks the divisibility conditions of each mode
        post.strict = (sum(1 for x, y in zip(flatten(b.shape), flatten(b.stride)) if x > 1 and y != 0) > 1
                       and cosize(b) > flatten(coalesce(a).shape)[0])
        return f"composition({fmt(a)},{fmt(b)})", lambda: composition(a, b), post
    if op == "composition_tiler":
        a = rand_layout(rng, pow2=True, rank_min=2)
        t = tiler_for(rng, a)
        return f"composition({fmt(a)},{fmt_tiler(t)})", lambda: composition(a, t), None
    if op == "complement":
        a = rand_layout(rng, 3, injective=True)
        m = cosize(a) * rng.randint(1, 4)
        return f"complement({fmt(a)},{m})", lambda: complement(a, m), None
    if op == "right_inverse":
        a = rand_layout(rng, 3, injective=rng.random() < 0.5)

        def post(r, a=a):
            return all(a(r(i)) == i for i in range(size(r)))
        # tessel follows C++ CuTe: stride-0 modes do not end the chain (pycute stops there)
        post.larger_ok = True
        return f"right_inverse({fmt(a)})", lambda: right_inverse(a), post
    if op == "left_inverse":
        a = rand_layout(rng, 3, injective=True)
        return f"left_inverse({fmt(a)})", lambda: left_inverse(a), None
    if op in ("logical_divide", "zipped_divide", "tiled_divide", "flat_divide"):
        a = rand_layout(rng, pow2=True, rank_min=2)
        if rng.random() < 0.5:
            t = tiler_for(rng, a)
            txt = fmt_tiler(t)
        else:
            t = rand_layout(rng, 2, pow2=True)
            txt = fmt(t)
        f = {"logical_divide": logical_divide, "zipped_divide": zipped_divide,
             "tiled_divide": tiled_divide, "flat_divide": flat_divide}[op]
        tilers = list(t) if isinstance(t, tuple) else [t]

        def post(r, tilers=tilers):
            # a divide needs injective tilers (their complement); a zero shape is no layout
            return all(injective(x) for x in tilers) and min(flatten(r.shape)) > 0
        return f"{op}({fmt(a)},{txt})", lambda: f(a, t), post
    if op in ("logical_product", "zipped_product", "tiled_product", "flat_product"):
        a = rand_layout(rng, 3, injective=True, rank_min=2)
        if rng.random() < 0.5:
            t = tuple(rand_layout(rng, 2, injective=True) for _ in range(rng.randint(1, 2)))
            txt = fmt_tiler(t)
        else:
            t = rand_layout(rng, 2, injective=True)
            txt = fmt(t)
        f = {"logical_product": logical_product, "zipped_product": zipped_product,
             "tiled_product": tiled_product, "flat_product": flat_product}[op]
        n = size(a) * (size(t) if not isinstance(t, tuple) else
                       eval_prod([size(x) for x in t]))
        # by mode, each mode's replicas are unique but modes may overlap one another
        return f"{op}({fmt(a)},{txt})", lambda: f(a, t), product_post(n, not isinstance(t, tuple))
    if op in ("blocked_product", "raked_product"):
        a = rand_layout(rng, 3, injective=True, rank_min=2)
        b = rand_layout(rng, 3, injective=True, rank_min=2)
        return (f"{op}({fmt(a)},{fmt(b)})", lambda: zip_product(a, b, op == "raked_product"),
                product_post(size(a) * size(b)))
    if op == "tile_to_shape":
        b = Layout((rng.randint(1, 4), rng.randint(1, 4)))
        if rng.random() < 0.5:
            b = Layout(b.shape, (b.shape[1], 1))
        shape = (b.shape[0] * rng.randint(1, 3), b.shape[1] * rng.randint(1, 3))
        return f"tile_to_shape({fmt(b)},{fmt_t(shape)})", lambda: tile_to_shape(b, shape), None
    if op == "make_ordered_layout":
        n = rng.randint(1, 4)
        s = tuple(rng.randint(1, 6) for _ in range(n))
        o = tuple(rng.sample(range(n), n))
        return f"make_ordered_layout({fmt_t(s)},{fmt_t(o)})", lambda: make_ordered_layout(s, o), None
    a = rand_layout(rng)
    return f"{op}({fmt(a)})", (lambda: size(a)) if op == "size" else (lambda: cosize(a)), None


# ---- reading tessel's answers ----------------------------------------------------------------------

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


def agrees(ours, ref):
    """As a function of 1-D coordinates, and mode by mode."""
    if isinstance(ref, int):
        return int(ours) == ref
    mine = parse_layout(ours)
    if size(mine) != size(ref) or any(mine(i) != ref(i) for i in range(size(ref))):
        return False
    rr = len(ref) if isinstance(ref.shape, tuple) else 1
    rm = len(mine) if isinstance(mine.shape, tuple) else 1
    if rr != rm:
        return False
    for k in range(rr):
        a, b = (mine[k], ref[k]) if rr > 1 or isinstance(ref.shape, tuple) else (mine, ref)
        if size(a) != size(b) or any(a(i) != b(i) for i in range(size(b))):
            return False
    return True


def main():
    exe = sys.argv[1]
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 3000
    seed = int(sys.argv[3]) if len(sys.argv) > 3 else random.randrange(1 << 30)
    rng = random.Random(seed)
    cases = [gen(rng) for _ in range(count)]
    out = subprocess.run([exe, "eval"], input="\n".join(c[0] for c in cases) + "\n",
                         capture_output=True, text=True, check=True).stdout.splitlines()
    assert len(out) == len(cases), (len(out), len(cases))
    passed = failed = exact = rejected_both = rejected_ours = rejected_pycute = 0
    conservative = larger = 0
    for (expr, ref_fn, post), ours in zip(cases, out):
        try:
            ref = ref_fn()
        except (AssertionError, ZeroDivisionError, IndexError, TypeError, StopIteration):
            ref = None
        ok = True
        if ours.startswith("error:"):
            if ref is None:
                rejected_both += 1
            elif post is not None and not post(ref):
                rejected_ours += 1  # pycute's answer breaks the post-condition
            elif getattr(post, "strict", False):
                conservative += 1  # a multi-mode B outside the divisibility conditions
            else:
                ok = False
        elif ref is None:
            # pycute asserts; tessel's answer must then meet the post-condition itself
            ok = post is not None and post(parse_layout(ours))
            rejected_pycute += ok
        else:
            try:
                ok = agrees(ours, ref)
                if not ok and getattr(post, "larger_ok", False):
                    mine = parse_layout(ours)
                    ok = post(mine) and size(mine) >= size(ref)
                    larger += ok
            except Exception:  # noqa: BLE001 -- an unreadable answer is a disagreement
                ok = False
            if ok and str(ours).replace(" ", "") == (str(ref) if isinstance(ref, int) else fmt(ref)):
                exact += 1
        if ok:
            passed += 1
        else:
            failed += 1
            print(f"DISAGREE {expr}\n  tessel: {ours}\n  pycute: {ref if ref is None or isinstance(ref, int) else fmt(ref)}")
    print(f"seed {seed}: {exact} identical strings, {rejected_both} rejected by both, "
          f"{rejected_ours} rejected by tessel where pycute's answer breaks the post-condition, "
          f"{rejected_pycute} rejected by pycute where tessel's answer meets it, "
          f"{conservative} multi-mode compositions outside the divisibility conditions rejected by "
          f"tessel only, {larger} right inverses larger than pycute's (stride-0 modes)")
    print(f"pycute: {passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
