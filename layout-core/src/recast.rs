//! Changing the unit a layout counts in: CuTe's `upcast<N>`, `downcast<N>` and
//! `recast_layout<Old, New>`, on the leaves of a layout.
//!
//! A layout whose codomain is in units of `b` bits (e.g. a copy atom's bit layout, `b = 1`) is
//! re-expressed in units of `c` bits: `upcast` merges `N` consecutive units into one (a unit
//! stride's mode shrinks by `N`, every other stride is divided by `N`), `downcast` splits each unit
//! into `N` (the unit-stride mode grows by `N`, the other strides are multiplied by `N`).

use crate::error::{LayoutError, Result};
use crate::layout::Layout;
use crate::tri;

const fn ceil_div(a: i64, b: i64) -> i64 {
    (a + b - 1) / b
}

/// `upcast<N>(L)`, leaf by leaf: a stride-0 leaf is kept; a leaf `s:d` becomes
/// `ceil(s / ceil(N / |d|)) : sign(d) ceil(|d| / N)`.
///
/// Post-condition: on a layout that counts in units where each run of `N` consecutive units
/// starts at a multiple of `N` (e.g. `(32,128):(128,1)` bits, `N = 16`), `R(i)` is `L`'s index
/// divided by `N` for the first unit of each run. Errors: `NonPositiveShape` for `N < 1`,
/// `NotDivisible` where neither `d` divides `N` nor `N` divides `d` (CuTe's divisibility
/// assertion).
pub const fn upcast(l: &Layout, n: i64) -> Result<Layout> {
    if n < 1 {
        return Err(LayoutError::NonPositiveShape { value: n });
    }
    let s = l.shapes();
    let d = l.strides();
    let mut ns = [0i64; crate::MAX_LEAVES];
    let mut nd = [0i64; crate::MAX_LEAVES];
    let mut i = 0;
    while i < s.len() {
        if d[i] == 0 {
            ns[i] = s[i];
            nd[i] = 0;
        } else {
            let a = d[i].saturating_abs();
            if a % n != 0 && n % a != 0 {
                return Err(LayoutError::NotDivisible { value: a, by: n });
            }
            ns[i] = ceil_div(s[i], ceil_div(n, a));
            nd[i] = d[i].signum() * ceil_div(a, n);
        }
        i += 1;
    }
    Layout::from_parts(l.shape().with_leaves(&ns), &nd)
}

/// `downcast<N>(L)`, leaf by leaf: a leaf of stride `±1` becomes `N s : ±1`, every other leaf
/// `s : N d`.
///
/// Post-condition: `R` counts in units `N` times smaller, each of `L`'s units now `N`
/// consecutive ones. Errors: `NonPositiveShape` for `N < 1`; `NotDivisible { value: 1, by: N }`
/// when no leaf has stride `±1` (CuTe asserts "Downcast requires adjacent elements").
pub const fn downcast(l: &Layout, n: i64) -> Result<Layout> {
    if n < 1 {
        return Err(LayoutError::NonPositiveShape { value: n });
    }
    let s = l.shapes();
    let d = l.strides();
    let mut ns = [0i64; crate::MAX_LEAVES];
    let mut nd = [0i64; crate::MAX_LEAVES];
    let mut unit = false;
    let mut i = 0;
    while i < s.len() {
        if d[i] == 1 || d[i] == -1 {
            unit = true;
            ns[i] = match s[i].checked_mul(n) {
                Some(v) => v,
                None => return Err(LayoutError::Overflow),
            };
            nd[i] = d[i];
        } else {
            ns[i] = s[i];
            nd[i] = match d[i].checked_mul(n) {
                Some(v) => v,
                None => return Err(LayoutError::Overflow),
            };
        }
        i += 1;
    }
    if !unit {
        return Err(LayoutError::NotDivisible { value: 1, by: n });
    }
    Layout::from_parts(l.shape().with_leaves(&ns), &nd)
}

const fn gcd(mut a: i64, mut b: i64) -> i64 {
    while b != 0 {
        let t = a % b;
        a = b;
        b = t;
    }
    a
}

/// `recast_layout<Old, New>(L)` for element types of `old_bits` and `new_bits` bits: with
/// `new / old = num / den` in lowest terms, `L` itself (`1/1`), `downcast<den>` (`num == 1`),
/// `upcast<num>` (`den == 1`), else `downcast<den>(upcast<num>(L))`.
///
/// E.g. an ldmatrix's bit layout `(32,(32,4)):(32,(1,1024))` in 16-bit elements is
/// `(32,(2,4)):(2,(1,64))`. Errors: `NonPositiveShape` for a width below 1, and those of
/// [`upcast`] / [`downcast`].
pub const fn recast_layout(old_bits: i64, new_bits: i64, l: &Layout) -> Result<Layout> {
    if old_bits < 1 {
        return Err(LayoutError::NonPositiveShape { value: old_bits });
    }
    if new_bits < 1 {
        return Err(LayoutError::NonPositiveShape { value: new_bits });
    }
    let g = gcd(new_bits, old_bits);
    let (num, den) = (new_bits / g, old_bits / g);
    if num == 1 && den == 1 {
        Ok(*l)
    } else if num == 1 {
        downcast(l, den)
    } else if den == 1 {
        upcast(l, num)
    } else {
        downcast(&tri!(upcast(l, num)), den)
    }
}
