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

One deliberate difference is patched into pycute's composition: past its domain A extends as its
formula does, along its last leaf also when that leaf has size 1, as tessel and CuTe C++
(`coalesce_x`) do; pycute's `coalesce` drops the leaf first (tiles past a size-1 mode would all
alias its element 0; tessel's docs/design.md).
"""
import os
import random
import sys

from pycute import (Layout, coalesce, complement, composition, filter as lfilter, flatten,
                    left_inverse, logical_divide, logical_product, make_layout, right_inverse,
                    size, tiled_divide, tiled_product, zipped_divide, zipped_product, cosize)
import pycute.layout as _pl

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from layout_cases import (OPS, agrees, composition_cpp, draw, fmt, parse_layout,  # noqa: E402
                          run_tessel)

_pl.composition = composition_cpp
composition = composition_cpp


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


# ---- the cases, evaluated by pycute ---------------------------------------------------------------

PYCUTE = {
    "coalesce": coalesce, "coalesce_p": coalesce, "filter": lfilter,
    "composition": composition, "composition_pow2": composition, "composition_tiler": composition,
    "complement": complement, "right_inverse": right_inverse, "left_inverse": left_inverse,
    "logical_divide": logical_divide, "zipped_divide": zipped_divide,
    "tiled_divide": tiled_divide, "flat_divide": flat_divide,
    "logical_product": logical_product, "zipped_product": zipped_product,
    "tiled_product": tiled_product, "flat_product": flat_product,
    "blocked_product": lambda a, b: zip_product(a, b, False),
    "raked_product": lambda a, b: zip_product(a, b, True),
    "tile_to_shape": tile_to_shape, "make_ordered_layout": make_ordered_layout,
    "size": size, "cosize": cosize,
}


def gen(rng):
    """(expression text, pycute thunk, post-condition check for a rejected expression or None)."""
    case = draw(rng, rng.choice(OPS))
    return case.expr, lambda: PYCUTE[case.op](*case.args), case.post


def main():
    exe = sys.argv[1]
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 3000
    seed = int(sys.argv[3]) if len(sys.argv) > 3 else random.randrange(1 << 30)
    rng = random.Random(seed)
    cases = [gen(rng) for _ in range(count)]
    out = run_tessel(exe, [c[0] for c in cases])
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
