//! A fuzz test of layout-core's public API: arbitrary inputs, not only admissible ones — tuples
//! nested past the capacity (`MAX_LEAVES` leaves, `MAX_TOKENS` tokens), leaves at and near 0,
//! negatives, `2^31`, `2^32`, `2^62`, `i64::MIN` and `i64::MAX`, layouts and tilers built from
//! them, swizzles, and text for the parsers — and then every public operation on them, every
//! result formatted. Each call must return `Ok` or `Err(LayoutError)`: a panic fails the test (the
//! release profile checks overflow, so an unchecked overflow panics too). Cheap consistency checks
//! ride along: a printed layout reads back the same, `crd2idx(idx2crd(i)) == call(i)`.
//!
//! The unchecked fast paths are called only inside their documented domain: `Layout::call(i)`,
//! `ComposedLayout::call(i)`, `Tensor::offset`/`value`/`elem_less(i)` and `Tensor<Array>::get`/
//! `set(i)` with `0 <= i < size`; `Layout::dot(c)` with a natural coordinate inside the shape;
//! `FlatLayout::dot(c)` where `contains(c)`; `Codomain::basis(k)`/`get(x, k)` with `k < rank`;
//! `elem_less` with a bound of `rank` entries; `IntTuple::with_leaves` with `num_leaves` values.
//! The unsafe `Tensor<Ptr>::read`/`read_at`/`write` are left out (pointer tensors are moved and
//! printed, never dereferenced).
//!
//! Every test goes through the seeded runner of `common` (`TESSEL_SEED` replays a run);
//! `TESSEL_FUZZ_SCALE=n` runs `n` times the cases, `TESSEL_FUZZ_LINES=1` prints the calls (by
//! line) that never returned `Ok`, or never `Err`.
//!
//! Panics at the sites in [`KNOWN`] (files the lead engineer is changing) are tolerated and
//! counted; each entry names its reproducer.

mod common;

use common::check;
use layout_core::*;
use proptest::prelude::*;
use std::fmt;

// ---- known panics ---------------------------------------------------------------------------

/// A panic site in a file this test may not fix, why it panics, and the smallest call that
/// reaches it (`run` runs it; `repro` is its text).
struct Known {
    file: &'static str,
    line: u32,
    why: &'static str,
    repro: &'static str,
    run: fn(),
}

impl Known {
    /// The reproducer on one line.
    fn repro(&self) -> String {
        let words: Vec<&str> = self.repro.split_whitespace().collect();
        words.join(" ").replace(" .", ".")
    }
}

macro_rules! known {
    ($file:literal : $line:literal, $why:literal, $repro:expr) => {
        Known {
            file: $file,
            line: $line,
            why: $why,
            repro: stringify!($repro),
            run: || {
                let _ = $repro;
            },
        }
    };
}

fn t(s: &str) -> IntTuple {
    IntTuple::parse(s).unwrap()
}
fn l(s: &str) -> Layout {
    Layout::parse(s).unwrap()
}
fn sw0() -> Swizzle {
    Swizzle::new(0, 0, 0).unwrap()
}

/// Sites where a panic is tolerated by the fuzz tests (and counted): none now. Every panic the
/// fuzz found has been fixed; [`FIXED`] keeps their reproducers.
const KNOWN: &[Known] = &[];

/// Panics the fuzz found, now fixed: each reproducer must return (an `Ok` or a named `Err`).
const FIXED: &[Known] = &[
    known!(
        "src/arith.rs": 133,
        "Codomain::path indexed a [usize; 8] by nesting depth",
        make_identity_tensor(&t("(((((((((1)))))))))")).unwrap().to_string()
    ),
    known!(
        "src/arith.rs": 114,
        "Codomain::fits summed the lanes' reach unchecked",
        Codomain::new(&t("0")).unwrap().fits(-1, &l("9223372036854775806:1"))
    ),
    known!(
        "src/coalesce.rs": 44,
        "coalesce multiplied rs * rd unchecked",
        coalesce(&l("(4,2):(2305843009213693952,0)"))
    ),
    known!(
        "src/swizzle.rs": 36,
        "Swizzle::new added bits + base + |shift| unchecked",
        Swizzle::new(0, i64::MAX - 1, 2)
    ),
    // ComposedLayout added its offset unchecked, and slicing took any coordinate
    known!(
        "src/swizzle.rs": 93,
        "ComposedLayout::call added the offset unchecked",
        ComposedLayout::new(sw0(), l("(2,2):(1,2)"))
            .and_then(|c| c.slice(&t("(9223372036854775807,_)")))
            .map(|c| c.call(1))
    ),
    known!(
        "src/swizzle.rs": 108,
        "ComposedLayout::cosize added the offset unchecked",
        ComposedLayout::new(sw0(), l("2:1"))
            .and_then(|c| c.slice(&t("9223372036854775807")))
            .map(|c| c.cosize())
    ),
    known!(
        "src/swizzle.rs": 110,
        "ComposedLayout::cosize rounded up to the block unchecked",
        ComposedLayout::with_offset(Swizzle::new(0, 0, 1).unwrap(), i64::MAX - 1, l("2:1"))
            .map(|c| c.cosize())
    ),
    known!(
        "src/tensor.rs": 48,
        "ThrCopy::partition_S moved the origin with the unchecked Tensor::with_layout",
        make_tiled_copy_tv(&l("(4,4):(1,4)"), &l("1:1"), 32, 32)
            .unwrap()
            .get_slice(15)
            .unwrap()
            .partition_S(&counting(l("(2,2,2):(1,2,4)")))
    ),
];

/// `IntTuple::parse_at` once recursed once per `(` without a bound, and 10,000 of them overflowed
/// a 2 MiB thread stack (the process aborted); it now stops at the capacity's depth.
#[test]
fn parse_of_10_000_parentheses() {
    let deep = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(|| {
            let s = "(".repeat(10_000);
            (
                IntTuple::parse(&s).is_err(),
                Layout::parse(&s).is_err(),
                Tiler::parse(&format!("<{s}")).is_err(),
            )
        })
        .unwrap();
    assert_eq!(deep.join().unwrap(), (true, true, true));
}

/// The panics the fuzz found stay fixed: each reproducer returns.
#[test]
fn fixed_panics_stay_fixed() {
    for k in FIXED {
        let site = guard::panic_site(k.run);
        assert!(
            site.is_none(),
            "{}:{} ({}): the reproducer {} panics again, at {site:?}",
            k.file,
            k.line,
            k.why,
            k.repro()
        );
    }
}

/// Each tolerated panic still happens where [`KNOWN`] says (none now). When this fails, a
/// reproducer no longer panics there (fixed, or moved): remove or update its entry.
#[test]
fn known_panics_reproduce() {
    for k in KNOWN {
        let site = guard::panic_site(k.run);
        assert!(
            matches!(&site, Some((f, l)) if f.ends_with(k.file) && *l == k.line),
            "{}:{} ({}): the reproducer {} panics at {site:?} now; update KNOWN",
            k.file,
            k.line,
            k.why,
            k.repro()
        );
    }
}

mod guard {
    use super::KNOWN;
    use std::cell::{Cell, RefCell};
    use std::panic::{self, AssertUnwindSafe};
    use std::sync::Once;

    thread_local! {
        static ACTIVE: Cell<bool> = const { Cell::new(false) };
        static SITE: RefCell<Option<(String, u32)>> = const { RefCell::new(None) };
        static SEEN: RefCell<Vec<(String, u32)>> = const { RefCell::new(Vec::new()) };
        static COUNTS: RefCell<Counts> = RefCell::new(Counts::default());
    }

    /// Calls that returned `Ok`, `Err`, and the panics at each known site (this thread's test).
    #[derive(Default, Clone, Debug)]
    pub struct Counts {
        pub ok: u64,
        pub err: u64,
        pub known: Vec<u64>,
        /// (Err, Ok) counts by the line of the call in this file
        pub lines: std::collections::BTreeMap<u32, [u64; 2]>,
    }

    pub fn counted(ok: bool, line: u32) {
        COUNTS.with_borrow_mut(|c| {
            if ok {
                c.ok += 1
            } else {
                c.err += 1
            }
            let e = c.lines.entry(line).or_default();
            e[ok as usize] += 1;
        });
    }

    pub fn take_counts() -> Counts {
        COUNTS.with_borrow_mut(std::mem::take)
    }

    fn known(file: &str, line: u32) -> Option<usize> {
        KNOWN
            .iter()
            .position(|k| file.ends_with(k.file) && line == k.line)
    }

    /// Records where a guarded call panicked (and keeps the known ones quiet).
    fn install() {
        static ONCE: Once = Once::new();
        ONCE.call_once(|| {
            let prev = panic::take_hook();
            panic::set_hook(Box::new(move |info| {
                if ACTIVE.get() {
                    if let Some(loc) = info.location() {
                        let site = (loc.file().to_string(), loc.line());
                        SITE.set(Some(site.clone()));
                        // known sites stay quiet; others are printed once (proptest shrinks a
                        // failing case through many more panics at the same site)
                        let seen = SEEN.with_borrow_mut(|s| {
                            s.contains(&site) || {
                                s.push(site);
                                false
                            }
                        });
                        if seen || known(loc.file(), loc.line()).is_some() {
                            return;
                        }
                    }
                }
                prev(info)
            }));
        });
    }

    /// Where `f` panicked (quietly at a known site), or `None`.
    pub fn panic_site(f: impl FnOnce()) -> Option<(String, u32)> {
        install();
        ACTIVE.set(true);
        SITE.set(None);
        let r = panic::catch_unwind(AssertUnwindSafe(f));
        ACTIVE.set(false);
        r.err().and(SITE.take())
    }

    /// `f()`, or `None` when it panicked at a known site; any other panic goes on (and fails the
    /// test case, which proptest then shrinks).
    pub fn guard<R>(f: impl FnOnce() -> R) -> Option<R> {
        install();
        assert!(!ACTIVE.get(), "guards do not nest");
        ACTIVE.set(true);
        SITE.set(None);
        let r = panic::catch_unwind(AssertUnwindSafe(f));
        ACTIVE.set(false);
        match r {
            Ok(v) => Some(v),
            Err(payload) => match SITE.take() {
                Some((f, l)) if known(&f, l).is_some() => {
                    let k = known(&f, l).unwrap();
                    COUNTS.with_borrow_mut(|c| {
                        c.known.resize(KNOWN.len(), 0);
                        c.known[k] += 1;
                    });
                    None
                }
                site => {
                    // the site goes into the failure message proptest reports
                    let msg = payload
                        .downcast_ref::<String>()
                        .map(String::as_str)
                        .or(payload.downcast_ref::<&str>().copied())
                        .unwrap_or("a panic");
                    let at = site.map_or(String::new(), |(f, l)| format!(" at {f}:{l}"));
                    panic::resume_unwind(Box::new(format!("{msg}{at}")))
                }
            },
        }
    }
}

use guard::guard;

/// A fallible operation: `Ok` (formatted with `Debug`) or an error (formatted), never a panic.
#[track_caller]
fn ok<T: fmt::Debug>(f: impl FnOnce() -> Result<T>) -> Option<T> {
    let line = std::panic::Location::caller().line();
    let r = guard(f)?;
    guard::counted(r.is_ok(), line);
    match r {
        Ok(v) => {
            guard(|| format!("{v:?}"))?;
            Some(v)
        }
        Err(e) => {
            let _ = (e.to_string(), e.condition());
            None
        }
    }
}

/// An infallible operation, guarded.
fn val<T>(f: impl FnOnce() -> T) -> Option<T> {
    guard(f)
}

/// `to_string()`, guarded.
fn show(d: &dyn fmt::Display) -> Option<String> {
    guard(|| d.to_string())
}

/// Prints the counts of one fuzz test (shown with `--nocapture`, and on failure).
fn report(name: &str) {
    let c = guard::take_counts();
    eprintln!("{name}: {} calls returned Ok, {} Err", c.ok, c.err);
    // TESSEL_FUZZ_LINES=1: the calls (by line of this file) that never returned Ok, or never Err
    if std::env::var_os("TESSEL_FUZZ_LINES").is_some() {
        for (line, [err, ok]) in &c.lines {
            if *ok == 0 || *err == 0 {
                eprintln!("{name}: line {line}: {ok} Ok, {err} Err");
            }
        }
    }
    for (k, n) in KNOWN.iter().zip(&c.known).filter(|(_, n)| **n > 0) {
        eprintln!(
            "{name}: {n} calls panicked at {}:{} (known: {}; {})",
            k.file,
            k.line,
            k.why,
            k.repro()
        );
    }
}

// ---- values -------------------------------------------------------------------------------

const SPECIAL: &[i64] = &[
    i64::MIN,
    i64::MIN + 1,
    -(1 << 62),
    -(1 << 32),
    -(1 << 31),
    -2,
    -1,
    0,
    1,
    2,
    (1 << 31) - 1,
    1 << 31,
    (1 << 31) + 1,
    (1 << 32) - 1,
    1 << 32,
    (1 << 32) + 1,
    (1 << 62) - 1,
    1 << 62,
    (1 << 62) + 1,
    i64::MAX - 1,
    i64::MAX,
];

/// Small values, 0, negatives, and values at and near the edges.
fn wild() -> BoxedStrategy<i64> {
    prop_oneof![
        4 => -4i64..=16,
        2 => prop::sample::select(SPECIAL),
        1 => (0u32..=62, -1i64..=1).prop_map(|(k, d)| (1i64 << k) + d),
        1 => (0u32..=62, -1i64..=1).prop_map(|(k, d)| d - (1i64 << k)),
        1 => any::<i64>(),
    ]
    .boxed()
}

/// Mostly valid shapes (1..=8), sometimes anything.
fn shape_leaf() -> BoxedStrategy<i64> {
    prop_oneof![12 => 1i64..=8, 1 => wild()].boxed()
}

/// Mostly small strides, powers of two up to 2^62, sometimes anything.
fn stride_leaf() -> BoxedStrategy<i64> {
    prop_oneof![
        8 => -2i64..=16,
        2 => (0u32..=62).prop_map(|k| 1i64 << k),
        1 => wild(),
    ]
    .boxed()
}

/// An integer tuple as a tree, built through the API (so that building can fail).
#[derive(Clone, Debug)]
enum Tree {
    Leaf(i64),
    Hole,
    Node(Vec<Tree>),
}

impl Tree {
    fn build(&self) -> Result<IntTuple> {
        match self {
            Tree::Leaf(v) => Ok(IntTuple::int(*v)),
            Tree::Hole => Ok(IntTuple::hole()),
            Tree::Node(c) => {
                let mut t = IntTuple::empty();
                for x in c {
                    t.push(&x.build()?)?;
                }
                Ok(t)
            }
        }
    }
    fn render(&self) -> String {
        match self {
            Tree::Leaf(v) => v.to_string(),
            Tree::Hole => "_".into(),
            Tree::Node(c) => {
                let inner: Vec<String> = c.iter().map(Tree::render).collect();
                format!("({})", inner.join(","))
            }
        }
    }
}

/// Trees of `leaf`s (and `_` when `holes`): nested up to depth 4, and at times far past the
/// capacity, deep (up to 40 levels) or wide (up to 24 leaves).
fn tree_of(leaf: BoxedStrategy<i64>, holes: bool) -> BoxedStrategy<Tree> {
    let base = if holes {
        prop_oneof![6 => leaf.clone().prop_map(Tree::Leaf), 1 => Just(Tree::Hole)].boxed()
    } else {
        leaf.clone().prop_map(Tree::Leaf).boxed()
    };
    let nested = base
        .prop_recursive(4, 24, 4, |inner| {
            prop::collection::vec(inner, 0..=4).prop_map(Tree::Node)
        })
        .boxed();
    prop_oneof![
        14 => nested.clone(),
        1 => (nested, 1usize..=40)
            .prop_map(|(t, d)| (0..d).fold(t, |t, _| Tree::Node(vec![t]))),
        1 => prop::collection::vec(leaf, 12..=24)
            .prop_map(|v| Tree::Node(v.into_iter().map(Tree::Leaf).collect())),
    ]
    .boxed()
}

/// A layout's ingredients; `make` builds it one of five ways (construction can fail).
#[derive(Clone, Debug)]
struct L {
    shape: Tree,
    strides: Vec<i64>,
    how: u8,
}

fn lcase() -> impl Strategy<Value = L> {
    (
        tree_of(shape_leaf(), false),
        prop::collection::vec(stride_leaf(), 24),
        0u8..5,
    )
        .prop_map(|(shape, strides, how)| L {
            shape,
            strides,
            how,
        })
}

impl L {
    /// `shape:stride` as text (without building it).
    fn render(&self) -> String {
        fn strides(t: &Tree, d: &mut impl Iterator<Item = i64>) -> Tree {
            match t {
                Tree::Node(c) => Tree::Node(c.iter().map(|x| strides(x, d)).collect()),
                _ => Tree::Leaf(d.next().unwrap_or(0)),
            }
        }
        let d = strides(&self.shape, &mut self.strides.iter().copied());
        format!("{}:{}", self.shape.render(), d.render())
    }
    fn make(&self) -> Option<Layout> {
        let s = ok(|| self.shape.build())?;
        let d = &self.strides;
        ok(|| match self.how {
            0 => Layout::from_parts(s, d),
            1 => Layout::new(s, s.with_leaves(d)),
            2 => Layout::parse(&format!("{}:{}", s, s.with_leaves(d))),
            3 => Layout::col_major(s),
            _ => Layout::row_major(s),
        })
    }
}

/// A tiler's ingredients, built through each constructor (and the raw enum, with any `n`).
#[derive(Clone, Debug)]
enum T {
    Layout(L),
    ByMode(Vec<Option<L>>),
    Shape(Tree),
    Raw(usize, Vec<Option<L>>),
}

fn tcase() -> impl Strategy<Value = T> {
    prop_oneof![
        2 => lcase().prop_map(T::Layout),
        4 => prop::collection::vec(prop::option::weighted(0.8, lcase()), 0..=5).prop_map(T::ByMode),
        3 => tree_of(shape_leaf(), true).prop_map(T::Shape),
        1 => (0usize..=6, prop::collection::vec(prop::option::of(lcase()), 4))
            .prop_map(|(n, m)| T::Raw(n, m)),
    ]
}

impl T {
    fn make(&self) -> Option<Tiler> {
        let modes = |m: &[Option<L>]| -> Option<Vec<Option<Layout>>> {
            m.iter()
                .map(|x| match x {
                    None => Some(None),
                    Some(l) => l.make().map(Some),
                })
                .collect()
        };
        let t = match self {
            T::Layout(l) => Tiler::layout(l.make()?),
            T::ByMode(m) => {
                let m = modes(m)?;
                ok(|| Tiler::by_mode(&m))?
            }
            T::Shape(s) => {
                let s = ok(|| s.build())?;
                ok(|| Tiler::shape(&s))?
            }
            T::Raw(n, m) => {
                let m = modes(m)?;
                Tiler::ByMode {
                    n: *n,
                    modes: [m[0], m[1], m[2], m[3]],
                }
            }
        };
        if let Some(s) = show(&t) {
            // a printed tiler reads back (`<>`, the empty by-mode tiler, has no text that reads;
            // a raw one may hold modes past `n`, which are not printed)
            let r = ok(|| Tiler::parse(&s));
            let raw = matches!(self, T::Raw(..));
            let empty = matches!(t, Tiler::ByMode { n: 0, .. });
            if !raw && !empty && !s.contains("-9223372036854775808") {
                assert_eq!(r, Some(t), "{s}");
            }
        }
        Some(t)
    }
}

/// Extra numbers for indices, coordinates and counts.
#[derive(Clone, Debug)]
struct X {
    ints: Vec<i64>,
    picks: Vec<bool>,
    coord: Tree,
    profile: Tree,
}

fn xcase() -> impl Strategy<Value = X> {
    (
        prop::collection::vec(wild(), 8),
        prop::collection::vec(any::<bool>(), 16),
        tree_of(wild(), true),
        tree_of((-1i64..=3).boxed(), true),
    )
        .prop_map(|(ints, picks, coord, profile)| X {
            ints,
            picks,
            coord,
            profile,
        })
}

impl X {
    fn int(&self, k: usize) -> i64 {
        self.ints[k % self.ints.len()]
    }
    fn pick(&self, k: usize) -> bool {
        self.picks[k % self.picks.len()]
    }
    /// `ints[k]` as an index into `0..n` (`n > 0`).
    fn index(&self, k: usize, n: i64) -> i64 {
        self.int(k).rem_euclid(n)
    }
}

/// A coordinate with the nesting of `shape`: leaves inside the shape (`wild` false) or any value,
/// `_` where picked (`holes`), and at times an integer where the shape has a tuple (coarser).
fn coord_like(shape: &IntTuple, x: &X, k: &mut usize, holes: bool, wild: bool) -> Result<IntTuple> {
    let leaf = *k;
    *k += 1;
    if holes && x.pick(leaf) && x.pick(leaf + 7) {
        return Ok(IntTuple::hole());
    }
    if shape.is_int() || (x.pick(leaf + 3) && x.pick(leaf + 5) && x.pick(leaf + 11)) {
        let v = x.int(leaf);
        let size = shape.size().unwrap_or(1).max(1);
        return Ok(IntTuple::int(if wild { v } else { v.rem_euclid(size) }));
    }
    let mut t = IntTuple::empty();
    for i in 0..shape.rank() {
        t.push(&coord_like(&shape.get(i)?, x, k, holes, wild)?)?;
    }
    Ok(t)
}

/// Coordinates for `shape`: the random tree, an integer, and ones shaped like `shape`.
fn coords(shape: &IntTuple, x: &X, holes: bool) -> Vec<IntTuple> {
    let mut v = Vec::new();
    v.extend(ok(|| x.coord.build()));
    v.push(IntTuple::int(x.int(3)));
    for (i, wild) in [(0, false), (5, true)] {
        let mut k = i;
        v.extend(ok(|| coord_like(shape, x, &mut k, holes, wild)));
    }
    v
}

// ---- the operations -------------------------------------------------------------------------

/// Every operation of the tuple API on `t`, and those taking a tuple and a number.
fn exercise_tuple(t: &IntTuple, other: &IntTuple, x: &X) {
    show(t);
    let _ = val(|| {
        (
            t.is_int(),
            t.is_tuple(),
            t.is_hole(),
            t.value(),
            t.num_leaves(),
            t.leaves().len(),
            t.has_hole(),
            t.rank(),
            t.depth(),
            t.congruent(other),
            t.equals(other),
            *t == *other,
        )
    });
    for i in 0..t.num_leaves() + 1 {
        val(|| t.leaf_is_hole(i));
    }
    for i in [0, 1, t.rank(), t.rank() + 1, usize::MAX] {
        ok(|| t.get(i));
    }
    ok(|| t.size());
    if let Some(f) = val(|| t.flatten()) {
        show(&f);
    }
    ok(|| t.product_each());
    ok(|| t.check_shape());
    let vals: Vec<i64> = (0..t.num_leaves()).map(|k| x.int(k)).collect();
    if let Some(w) = val(|| t.with_leaves(&vals)) {
        show(&w);
    }
    for k in 0..3 {
        ok(|| t.shape_div(x.int(k)));
        ok(|| t.shape_mod(x.int(k)));
    }
    let mut p = *t;
    ok(|| p.push(other));
    ok(|| IntTuple::from_ints(&x.ints));
    ok(|| Layout::int(t.value(), other.value()));
    let _ = val(|| (IntTuple::empty(), Layout::empty().to_string()));
    // text: what is printed reads back the same (i64::MIN has no text: its digits overflow)
    if let Some(s) = show(t) {
        let r = ok(|| IntTuple::parse(&s));
        if !s.contains("-9223372036854775808") {
            assert_eq!(r, Some(*t), "{s}");
        }
    }
    // tuples as shapes, orders, tilers, codomains
    ok(|| Layout::col_major(*t));
    ok(|| Layout::row_major(*t));
    ok(|| Layout::ordered(*t, *other));
    ok(|| Layout::new(*t, *other));
    ok(|| Layout::from_parts(*t, &x.ints));
    ok(|| Tiler::shape(t));
    ok(|| make_identity_layout(t));
    if let Some(id) = ok(|| make_identity_tensor(t)) {
        show(&id);
    }
    ok(|| Codomain::new(t));
    ok(|| dice_tuple(t, other));
    ok(|| dice_tuple(other, t));
}

/// Every operation of a single layout (and those taking a layout and numbers or tuples).
fn exercise_layout(l: &Layout, x: &X) {
    let Some(s) = show(l) else { return };
    // what is printed reads back the same (i64::MIN has no text: its digits overflow)
    let r = ok(|| Layout::parse(&s));
    if !s.contains("-9223372036854775808") {
        assert_eq!(r, Some(*l), "{s}");
    }
    let _ = val(|| {
        (
            l.shape(),
            l.stride(),
            l.strides().len(),
            l.shapes().len(),
            l.rank(),
            l.depth(),
            l.size(),
            l.cosize(),
            l.flatten(),
            l.equals(l),
        )
    });
    let size = l.size();
    for i in [0, 1, l.rank(), l.rank() + 1, usize::MAX] {
        ok(|| l.get(i));
    }
    for n in [0, 1, l.rank() + 1, 17, usize::MAX] {
        ok(|| l.append_to_rank(n));
    }
    ok(|| l.append(l));
    ok(|| Layout::concat(&[*l, *l, *l]));
    let mut p = *l;
    ok(|| p.push(l));
    // the 1-D domain: call, idx2crd, crd2idx and dot agree inside it
    for k in 0..4 {
        let i = match k {
            0 => 0,
            1 => size - 1,
            _ => x.index(k, size),
        };
        let Some((v, c)) = val(|| (l.call(i), l.idx2crd(i))) else {
            continue;
        };
        assert_eq!(ok(|| l.crd2idx(&c)), Some(v), "{l} at {i} = {c}");
        assert_eq!(val(|| l.dot(c.leaves())), Some(v), "{l} at {i} = {c}");
        if l.shape().is_tuple() || i == 0 {
            assert_eq!(ok(|| l.crd2idx(&IntTuple::int(i))), Some(v), "{l} at {i}");
        }
    }
    for k in 0..3 {
        val(|| l.idx2crd(x.int(k)));
    }
    // any coordinate: with `_` for slice and dice
    for c in coords(&l.shape(), x, true) {
        ok(|| l.crd2idx(&c));
        if let Some((sl, _)) = ok(|| l.slice(&c)) {
            show(&sl);
        }
        ok(|| l.dice(&c));
    }
    // the unary operations
    for r in [
        ok(|| coalesce(l)),
        ok(|| filter(l)),
        ok(|| right_inverse(l)),
        ok(|| left_inverse(l)),
        ok(|| complement_default(l)),
    ]
    .into_iter()
    .flatten()
    {
        show(&r);
    }
    if let Some(prof) = ok(|| x.profile.build()) {
        ok(|| coalesce_profile(l, &prof));
        ok(|| filter_profile(l, &prof));
        ok(|| complement_shape(l, &prof));
        ok(|| tile_to_shape(l, &prof, None));
        ok(|| tile_to_shape(l, &prof, Some(&prof)));
        ok(|| tile_to_shape(l, &l.shape(), Some(&prof)));
    }
    for k in 0..3 {
        ok(|| complement(l, x.int(k)));
    }
    ok(|| complement(l, x.index(4, 4096) + 1));
    ok(|| tile_to_shape(l, &l.shape(), None));
    ok(|| Layout::ordered(l.shape(), l.stride()));
    // as a flat layout of each rank
    ok(|| FlatLayout::<1>::from_layout(l).and_then(|f| f.to_layout()));
    ok(|| FlatLayout::<2>::from_layout(l).and_then(|f| f.to_layout()));
    ok(|| FlatLayout::<3>::from_layout(l).and_then(|f| f.to_layout()));
    ok(|| FlatLayout::<4>::from_layout(l).and_then(|f| f.to_layout()));
    ok(|| make_fragment_like::<u8, 64>(l, 0));
    // with itself
    ok(|| composition(l, l));
    ok(|| logical_divide(l, l));
    ok(|| logical_product(l, l));
    ok(|| blocked_product(l, l));
    ok(|| raked_product(l, l));
}

/// A derived layout: printed, read back, evaluated at a few points, coalesced.
fn exercise_result(l: &Layout, x: &X) {
    let Some(s) = show(l) else { return };
    let r = ok(|| Layout::parse(&s));
    if !s.contains("-9223372036854775808") {
        assert_eq!(r, Some(*l), "{s}");
    }
    let size = l.size();
    for i in [0, size - 1, x.index(0, size)] {
        if let Some((v, c)) = val(|| (l.call(i), l.idx2crd(i))) {
            assert_eq!(ok(|| l.crd2idx(&c)), Some(v), "{l} at {i} = {c}");
        }
    }
    val(|| l.cosize());
    ok(|| coalesce(l));
    ok(|| filter(l));
}

/// Every operation of two layouts and a tiler, and of swizzled layouts.
fn exercise_pair(a: &Layout, b: &Layout, t: Option<&Tiler>, sw: Option<Swizzle>, x: &X) {
    let mut out = vec![
        ok(|| composition(a, b)),
        ok(|| logical_divide(a, b)),
        ok(|| logical_product(a, b)),
        ok(|| blocked_product(a, b)),
        ok(|| raked_product(a, b)),
        ok(|| Layout::concat(&[*a, *b])),
        ok(|| a.append(b)),
        ok(|| tile_to_shape(a, &b.shape(), None)),
        ok(|| tile_to_shape(a, &b.shape(), Some(&a.shape()))),
        ok(|| complement(a, b.size())),
        ok(|| complement_shape(a, &b.shape())),
        ok(|| coalesce_profile(a, &b.shape())),
        ok(|| filter_profile(a, &b.shape())),
    ];
    if let Some(t) = t {
        show(t);
        let _ = val(|| t.rank());
        out.extend([
            ok(|| composition_tiler(a, t)),
            ok(|| logical_divide_tiler(a, t)),
            ok(|| zipped_divide(a, t)),
            ok(|| tiled_divide(a, t)),
            ok(|| flat_divide(a, t)),
            ok(|| logical_product_tiler(a, t)),
            ok(|| zipped_product(a, t)),
            ok(|| tiled_product(a, t)),
            ok(|| flat_product(a, t)),
        ]);
        for c in coords(&a.shape(), x, true) {
            for r in [
                ok(|| inner_partition(a, t, &c)),
                ok(|| outer_partition(a, t, &c)),
            ]
            .into_iter()
            .flatten()
            {
                out.push(Some(r.0));
            }
        }
    }
    for r in out.into_iter().flatten() {
        exercise_result(&r, x);
    }
    // swizzled layouts
    if let Some(c) = sw.and_then(|sw| ok(|| ComposedLayout::new(sw, *a))) {
        exercise_composed(&c, x);
        if let Some(r) = ok(|| c.compose(b)) {
            exercise_composed(&r, x);
        }
        if let Some(t) = t {
            if let Some(r) = ok(|| c.compose_tiler(t)) {
                exercise_composed(&r, x);
            }
        }
        for i in [0, 1, a.rank()] {
            if let Some(r) = ok(|| c.get(i)) {
                exercise_composed(&r, x);
            }
        }
        for k in coords(&a.shape(), x, true) {
            ok(|| c.crd2idx(&k));
            if let Some(r) = ok(|| c.slice(&k)) {
                exercise_composed(&r, x);
            }
            if let Some(r) = ok(|| c.dice(&k)) {
                exercise_composed(&r, x);
            }
        }
        // any offset: refused where the invariant would not hold
        if let Some(r) = ok(|| ComposedLayout::with_offset(c.swizzle(), x.int(2), *a)) {
            exercise_composed(&r, x);
        }
    }
}

fn exercise_composed(c: &ComposedLayout, x: &X) {
    show(c);
    let size = val(|| c.size()).unwrap_or(1);
    val(|| c.cosize());
    for i in [0, size - 1, x.index(1, size)] {
        val(|| c.call(i));
    }
}

fn exercise_swizzle(b: i64, m: i64, s: i64, x: &X) -> Option<Swizzle> {
    let sw = ok(|| Swizzle::new(b, m, s))?;
    show(&sw);
    let _ = val(|| (sw.params(), sw.block()));
    for k in 0..4 {
        if let Some(y) = val(|| sw.apply(x.int(k))) {
            assert_eq!(val(|| sw.apply(y)), Some(x.int(k)), "{sw} is an involution");
        }
    }
    Some(sw)
}

/// `Display` of `Codomain::fmt_value` / `fmt_stride`.
struct Fmt<'a>(&'a Codomain, i64, bool);

impl fmt::Display for Fmt<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.2 {
            self.0.fmt_stride(f, self.1)
        } else {
            self.0.fmt_value(f, self.1)
        }
    }
}

fn exercise_codomain(profile: &IntTuple, l: Option<&Layout>, x: &X) {
    let Some(cod) = ok(|| Codomain::new(profile)) else {
        return;
    };
    let r = cod.rank();
    let _ = val(|| cod.profile().to_string());
    for k in 0..r {
        let _ = val(|| (cod.basis(k), cod.get(x.int(k), k)));
    }
    for k in 0..4 {
        let v = x.int(k);
        let _ = val(|| cod.decode(v));
        val(|| cod.elem_less(v, &[x.int(4), x.int(5), x.int(6), x.int(7)]));
        show(&Fmt(&cod, v, false));
        show(&Fmt(&cod, v, true));
    }
    let c: Vec<i64> = (0..r).map(|k| x.int(k)).collect();
    if let Some(e) = ok(|| cod.encode(&c)) {
        assert_eq!(val(|| cod.decode(e)[..r].to_vec()), Some(c), "{cod:?}");
    }
    ok(|| cod.encode(&x.ints));
    let small: Vec<i64> = (0..r).map(|k| x.index(k, 1 << 15)).collect();
    ok(|| cod.encode(&small));
    if let Some(l) = l {
        for k in 0..3 {
            ok(|| cod.fits(x.int(k), l));
        }
    }
}

fn exercise_flat<const N: usize>(s: &[i64], d: &[i64], x: &X) {
    let sh: [i64; N] = s[..N].try_into().unwrap();
    let st: [i64; N] = d[..N].try_into().unwrap();
    ok(|| FlatLayout::<N>::row_major(sh));
    let Some(f) = ok(|| FlatLayout::<N>::new(sh, st)) else {
        return;
    };
    let _ = val(|| (f.shape(), f.stride(), f.size()));
    let inside: [i64; N] = std::array::from_fn(|k| x.index(k, sh[k]));
    assert_eq!(val(|| f.contains(inside)), Some(true));
    val(|| f.dot(inside));
    let any: [i64; N] = std::array::from_fn(|k| x.int(k));
    val(|| f.contains(any));
    if let Some(l) = ok(|| f.to_layout()) {
        assert_eq!(ok(|| FlatLayout::<N>::from_layout(&l)), Some(f));
        assert_eq!(
            val(|| f.dot(inside)),
            val(|| l.dot(&inside)),
            "{l} at {inside:?}"
        );
    }
}

/// Every tensor operation on `t`.
fn exercise_tensor<E: Engine + fmt::Debug>(t: &Tensor<E>, p: &TensorArgs, x: &X) -> Vec<Tensor<E>> {
    show(t);
    let l = *t.layout();
    let _ = val(|| (t.engine(), l));
    let size = l.size();
    for i in [0, size - 1, x.index(2, size)] {
        val(|| t.offset(i));
    }
    let mut out = vec![];
    for c in coords(&l.shape(), x, true) {
        // the partitions of the layout alone, then of the tensor
        ok(|| local_tile(&l, &p.tile, &c));
        ok(|| local_tile_proj(&l, &p.tile, &c, &p.proj));
        ok(|| t.offset_of(&c));
        out.extend(ok(|| t.slice(&c)));
        out.extend(ok(|| t.local_tile(&p.tile, &c)));
        out.extend(ok(|| t.local_tile_proj(&p.tile, &c, &p.proj)));
        if let Some(tl) = &p.tiler {
            out.extend(ok(|| t.inner_partition(tl, &c)));
            out.extend(ok(|| t.outer_partition(tl, &c)));
        }
    }
    for i in [0, x.int(1), x.index(1, p.thr.size())] {
        ok(|| local_partition(&l, &p.thr, i));
        ok(|| local_partition_proj(&l, &p.thr, i, &p.proj));
        out.extend(ok(|| t.local_partition(&p.thr, i)));
        out.extend(ok(|| t.local_partition_proj(&p.thr, i, &p.proj)));
        val(|| flat_coord(&p.thr, i));
    }
    for r in &out {
        show(r);
    }
    out
}

/// What the tensor operations take besides the tensor.
struct TensorArgs {
    tile: IntTuple,
    proj: IntTuple,
    thr: Layout,
    tiler: Option<Tiler>,
}

fn exercise_counting(t: &Tensor<Counting>, p: &TensorArgs, x: &X) {
    let bound = [x.int(4), x.int(5), x.int(6), x.int(7)];
    let value = |t: &Tensor<Counting>| {
        let size = t.layout().size();
        for i in [0, size - 1, x.index(3, size)] {
            val(|| (t.value(i), t.elem_less(i, &bound)));
        }
        for c in coords(&t.layout().shape(), x, false) {
            ok(|| t.value_at(&c));
        }
    };
    value(t);
    for r in exercise_tensor(t, p, x) {
        value(&r);
        show(&r);
    }
}

/// Tensors for the tiled copies: `t`, and `t` moved by its slices (any origin).
fn targets(t: &Tensor<Counting>, x: &X) -> Vec<Tensor<Counting>> {
    let mut v = vec![*t];
    for c in coords(&t.layout().shape(), x, true) {
        v.extend(ok(|| t.slice(&c)));
    }
    v
}

fn exercise_copy(
    thr: &Layout,
    v: &Layout,
    bits: i64,
    elem: i64,
    targets: &[Tensor<Counting>],
    x: &X,
) {
    let Some(copy) = ok(|| make_tiled_copy_tv(thr, v, bits, elem)) else {
        return;
    };
    let threads = val(|| copy.threads()).unwrap_or(0);
    let _ = val(|| copy.values());
    for t in targets {
        let l = *t.layout();
        ok(|| copy.partition_modes(&l));
        ok(|| copy.retile(&l));
        for tid in [
            0,
            threads - 1,
            threads,
            x.int(2),
            x.index(2, threads.max(1)),
        ] {
            if let Some(p) = ok(|| copy.partition(&l, tid)) {
                if let Some(r) = ok(|| t.try_with_layout(p)) {
                    show(&r);
                }
            }
            if let Some(s) = ok(|| copy.get_slice(tid)) {
                if let Some(r) = ok(|| s.partition_S(t)) {
                    show(&r);
                }
                ok(|| s.partition_D(t));
            }
        }
    }
}

// ---- the fuzz tests -------------------------------------------------------------------------

/// `n` cases, times `TESSEL_FUZZ_SCALE` (default 1) for a longer run.
fn cases(n: u32) -> u32 {
    let scale = std::env::var("TESSEL_FUZZ_SCALE").map_or(1, |s| {
        s.parse()
            .unwrap_or_else(|_| panic!("TESSEL_FUZZ_SCALE must be a number, found {s:?}"))
    });
    n.saturating_mul(scale)
}

/// A minimum share of the cases must build what the test is about (the generators aim at
/// mostly constructible inputs); measured shares are in each test.
const MIN_SHARE: f64 = 0.5;

#[test]
fn fuzz_int_tuples() {
    let strategy = (tree_of(wild(), true), tree_of(wild(), true), xcase());
    // measured: about 86% of the cases build both tuples (the rest are past the capacity)
    check(
        "fuzz_int_tuples",
        cases(10_000),
        MIN_SHARE,
        &[],
        strategy,
        |(a, b, x), t| {
            let (ta, tb) = (ok(|| a.build()), ok(|| b.build()));
            if let (Some(ta), Some(tb)) = (ta, tb) {
                exercise_tuple(&ta, &tb, &x);
                exercise_tuple(&tb, &ta, &x);
                exercise_codomain(&ta, None, &x);
                t.hit();
            }
            Ok(())
        },
    );
    report("fuzz_int_tuples");
}

/// Text for the parsers: syntax soup, mutated valid text, deep parentheses, digits, unicode and
/// random bytes.
fn text() -> impl Strategy<Value = String> {
    const SYNTAX: &[char] = &[
        '(', ')', '(', ')', ',', ',', ':', '_', 'X', '<', '>', '-', ' ', '0', '1', '2', '4', '9',
        '@',
    ];
    let soup = prop::collection::vec(prop::sample::select(SYNTAX), 0..40)
        .prop_map(|v| v.into_iter().collect::<String>());
    let mutated = (
        lcase(),
        prop::collection::vec(
            (
                any::<prop::sample::Index>(),
                prop::sample::select(SYNTAX),
                0u8..3,
            ),
            0..4,
        ),
    )
        .prop_map(|(l, edits)| {
            let mut s: Vec<char> = l.render().chars().collect();
            for (at, c, op) in edits {
                let i = at.index(s.len() + 1);
                match op {
                    0 => s.insert(i, c),
                    1 if i < s.len() => {
                        s.remove(i);
                    }
                    _ if i < s.len() => s[i] = c,
                    _ => {}
                }
            }
            s.into_iter().collect::<String>()
        });
    // up to 10,000 levels (parsing stops at the capacity's depth)
    let deep = (
        0usize..=10_000,
        0usize..=10_000,
        prop::sample::select(&["", "1", "_", "1,2", "2:1", "),(", "<"][..]),
        any::<bool>(),
    )
        .prop_map(|(open, close, mid, tiler)| {
            let lead = if tiler { "<" } else { "" };
            format!("{lead}{}{mid}{}", "(".repeat(open), ")".repeat(close))
        });
    let digits = "-?_?[0-9]{1,25}(:-?[0-9]{1,25})?";
    prop_oneof![
        4 => soup,
        4 => mutated,
        1 => deep,
        1 => digits,
        1 => any::<String>(),
        1 => prop::collection::vec(any::<u8>(), 0..40)
            .prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
    ]
}

#[test]
fn fuzz_parse() {
    let strategy = (text(), prop::collection::vec(0usize..48, 3));
    // every case parses its text three ways: each one reaches the check
    check(
        "fuzz_parse",
        cases(20_000),
        1.0,
        &[],
        strategy,
        |(s, at), t| {
            let b = s.as_bytes();
            if let Some(v) = ok(|| IntTuple::parse(&s)) {
                let p = show(&v).unwrap_or_default();
                if !p.contains("-9223372036854775808") {
                    assert_eq!(ok(|| IntTuple::parse(&p)), Some(v), "{s:?} -> {p}");
                }
            }
            if let Some(l) = ok(|| Layout::parse(&s)) {
                let p = show(&l).unwrap_or_default();
                if !p.contains("-9223372036854775808") {
                    assert_eq!(ok(|| Layout::parse(&p)), Some(l), "{s:?} -> {p}");
                }
            }
            if let Some(tl) = ok(|| Tiler::parse(&s)) {
                show(&tl);
            }
            for &i in &at {
                ok(|| IntTuple::parse_at(b, i));
                ok(|| Layout::parse_at(b, i));
                ok(|| Tiler::parse_at(b, i));
            }
            t.hit();
            Ok(())
        },
    );
    report("fuzz_parse");
}

#[test]
fn fuzz_layouts() {
    let strategy = (lcase(), xcase());
    // measured: about 82% of the cases build a layout
    check(
        "fuzz_layouts",
        cases(10_000),
        MIN_SHARE,
        &[],
        strategy,
        |(l, x), t| {
            if let Some(l) = l.make() {
                exercise_layout(&l, &x);
                exercise_codomain(&l.shape(), Some(&l), &x);
                t.hit();
            }
            Ok(())
        },
    );
    report("fuzz_layouts");
}

#[test]
fn fuzz_layout_pairs() {
    let sw = (wild(), wild(), wild(), 0i64..=4, 0i64..=5, -8i64..=8);
    let strategy = (lcase(), lcase(), tcase(), sw, xcase());
    // measured: about 66% of the cases build both layouts
    check(
        "fuzz_layout_pairs",
        cases(8_000),
        MIN_SHARE,
        &[],
        strategy,
        |(a, b, tl, sw, x), t| {
            let tiler = tl.make();
            let swizzle = if x.pick(0) {
                exercise_swizzle(sw.0, sw.1, sw.2, &x)
            } else {
                exercise_swizzle(sw.3, sw.4, sw.5, &x)
            };
            if let (Some(a), Some(b)) = (a.make(), b.make()) {
                exercise_pair(&a, &b, tiler.as_ref(), swizzle, &x);
                exercise_pair(&b, &a, tiler.as_ref(), swizzle, &x);
                t.hit();
            }
            Ok(())
        },
    );
    report("fuzz_layout_pairs");
}

#[test]
fn fuzz_tensors() {
    let strategy = (
        (lcase(), tree_of(shape_leaf(), false), tcase()),
        (
            tree_of(shape_leaf(), true),
            tree_of((-1i64..=2).boxed(), true),
        ),
        (
            lcase(),
            lcase(),
            prop::sample::select(&[0, 8, 16, 32, 64, 96, 128, -32, 1 << 40][..]),
        ),
        prop::sample::select(&[0, 1, 4, 8, 16, 32, 64, 128, -16, 3][..]),
        xcase(),
    );
    // measured: about 66% of the cases build the layout and the thread layout
    check(
        "fuzz_tensors",
        cases(8_000),
        MIN_SHARE,
        &[],
        strategy,
        |((l, id, tl), (tile, proj), (thr, v, bits), elem, x), t| {
            let (Some(l), Some(thr)) = (l.make(), thr.make()) else {
                return Ok(());
            };
            // (a tile or projection past the capacity: the simplest ones instead)
            let p = TensorArgs {
                tile: ok(|| tile.build()).unwrap_or(IntTuple::int(2)),
                proj: ok(|| proj.build()).unwrap_or(IntTuple::hole()),
                thr,
                tiler: tl.make(),
            };
            let mut to_copy = targets(&counting(l), &x);
            exercise_counting(&counting(l), &p, &x);
            if let Some(id) = ok(|| id.build()) {
                if let Some(it) = ok(|| make_identity_tensor(&id)) {
                    exercise_counting(&it, &p, &x);
                    to_copy.extend(targets(&it, &x));
                }
                ok(|| make_identity_layout(&id));
            }
            if let Some(mut f) = ok(|| make_fragment_like::<i32, 64>(&l, 7)) {
                exercise_tensor(&f, &p, &x);
                let size = f.layout().size();
                for i in [0, size - 1, x.index(0, size)] {
                    let _ = val(|| f.get(i));
                    ok(|| f.set(i, 1));
                }
            }
            let ptr = Tensor::new(Ptr(std::ptr::null_mut::<f32>()), l);
            exercise_tensor(&ptr, &p, &x);
            if let Some(v) = v.make() {
                exercise_copy(&thr, &v, bits, elem, &to_copy, &x);
            }
            t.hit();
            Ok(())
        },
    );
    report("fuzz_tensors");
}

#[test]
fn fuzz_flat_layouts() {
    let strategy = (
        prop::collection::vec(prop_oneof![3 => shape_leaf(), 1 => wild()], 4),
        prop::collection::vec(prop_oneof![3 => stride_leaf(), 1 => wild()], 4),
        xcase(),
    );
    // every case builds flat layouts of ranks 0 to 4 (or is refused): each one is checked
    check(
        "fuzz_flat_layouts",
        cases(10_000),
        1.0,
        &[],
        strategy,
        |(s, d, x), t| {
            exercise_flat::<0>(&s, &d, &x);
            exercise_flat::<1>(&s, &d, &x);
            exercise_flat::<2>(&s, &d, &x);
            exercise_flat::<3>(&s, &d, &x);
            exercise_flat::<4>(&s, &d, &x);
            t.hit();
            Ok(())
        },
    );
    report("fuzz_flat_layouts");
}
