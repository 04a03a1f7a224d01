//! The layout calculator behind `tessel eval` and `tessel show`: CuTe's notation in, CuTe's
//! notation out, every operation computed by `layout-core`.
//!
//! Grammar (whitespace is free):
//! ```text
//! expr   := call | atom | tiler | swz | tuple [':' tuple]
//! atom   := NAME ['<' TYPE '>']  (an MMA or copy atom by CuTe's name, e.g. SM80_16x8x16_F32F16F16F32_TN,
//!                                 SM75_U32x4_LDSM_N, SM80_CP_ASYNC_CACHEGLOBAL<uint128_t>)
//! call   := NAME ['<' INT '>'] '(' [expr {',' expr}] ')'
//! tiler  := '<' (expr | '_') {',' (expr | '_')} '>'
//! swz    := 'Sw<' INT ',' INT ',' INT '>' 'o' [INT 'o'] expr
//! tuple  := INT | '_' | '_'INT | '(' tuple {',' tuple} ')'
//! ```
//! A bare shape is its column-major layout where a layout is wanted, a by-mode tiler where a tiler
//! is wanted, and its size where an integer cotarget is wanted.
//!
//! MMAs: `mma_atom(ATOM)` is the atom; `make_tiled_mma(ATOM, atom_layout)` repeats it over a
//! layout of warps `(AM, AN[, AK])` (identity permutation); `make_tiled_mma(ATOM, atom_layout,
//! <PM,PN,PK>)` with CuTe's `PermutationMNK`, a tiler whose modes are layouts, integers (`64`
//! is `64:1`) or `_` (none), missing trailing modes `_`, e.g.
//! `make_tiled_mma(SM80_16x8x16_F32BF16BF16F32_TN, (2,4), <_,(8,4,2):(1,16,8),_>)`; a shape
//! `(32,64,16)` is `<32:1,64:1,16:1>`. `layout_a_tv(X)`, `layout_b_tv(X)`,
//! `layout_c_tv(X)` of an atom or a tiled MMA are its TV layouts `(thread, value) -> index` in
//! the column-major operand tile; `partition_A/B/C(tiled_mma, thread, tensor)` is one thread's
//! part of a tensor; `partition_fragment_A/B/C(tiled_mma, tensor)` the layout of a thread's
//! register fragment for it.
//!
//! Copy atoms: a copy atom's name alone is its `Copy_Atom` for 16-bit elements;
//! `copy_atom(NAME[, BITS])` for elements of `BITS` bits. `make_tiled_copy_A/B/C(ATOM,
//! tiled_mma)` is the tiled copy over the MMA's operand tile with the MMA's TV layout;
//! `get_layoutS_TV(X)` / `get_layoutD_TV(X)` its source / destination TV layouts
//! `(thread, value) -> m + M n`; `partition_S/D(X, thread, tensor)` a thread's part of a tensor;
//! `retile(X, fragment)` a register fragment (e.g. `partition_fragment_A(...)`) in the copy's
//! value order.

use layout_core::*;
use std::fmt::{self, Write as _};

/// A value of the calculator.
#[derive(Clone, Debug, PartialEq)]
#[allow(clippy::large_enum_variant)] // short-lived values of one expression
pub enum Value {
    /// A plain integer.
    Int(i64),
    /// A shape or coordinate without strides.
    Tuple(IntTuple),
    /// `shape:stride`.
    Layout(Layout),
    /// `<L0, L1, ...>`.
    Tiler(Tiler),
    /// `Sw<B,M,S> o offset o L`.
    Composed(ComposedLayout),
    /// `offset o layout` (the result of slicing with an offset).
    Offset(i64, Layout),
    /// A counting tensor: integers (a layout used as a tensor) or ArithTuples (identity tensors).
    Tensor(Tensor<Counting>),
    /// A tiled copy (`tiled_copy_tv`).
    Copy(TiledCopy),
    /// An MMA atom (`SM80_16x8x16_F32F16F16F32_TN`).
    Atom(MmaAtom),
    /// A tiled MMA (`make_tiled_mma`).
    Mma(TiledMma),
    /// A copy atom with its element width (`SM75_U32x4_LDSM_N`, `copy_atom(NAME, BITS)`).
    CopyAtom(CopyAtom),
    /// A tiled copy of a copy atom (`make_tiled_copy_A/B/C`).
    AtomCopy(AtomTiledCopy),
    /// A Hopper GMMA atom with its instruction (`gmma_atom(NAME)`).
    Gmma(GmmaAtom),
    /// `K` or `MN`: which mode of a GMMA operand tile is contiguous.
    Major(GmmaMajor),
    /// A wgmma shared-memory matrix descriptor (`gmma_desc`).
    Desc(GmmaDescriptor),
    /// A hardware swizzle mode (`swizzle_mode`).
    Mode(SwizzleMode),
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Int(v) => write!(f, "{v}"),
            Value::Tuple(t) => write!(f, "{t}"),
            Value::Layout(l) => write!(f, "{l}"),
            Value::Tiler(t) => write!(f, "{t}"),
            Value::Composed(c) => write!(f, "{c}"),
            Value::Offset(o, l) => write!(f, "{o} o {l}"),
            Value::Tensor(t) => write!(f, "{t}"),
            Value::Copy(c) => write!(
                f,
                "TiledCopy(tile {}, {} threads x {} values, atoms of {}; TV {})",
                c.tile,
                c.threads(),
                c.values(),
                c.atom_vals,
                c.layout_tv
            ),
            Value::Atom(a) => write!(
                f,
                "MMA_Atom({}, shape_mnk ({},{},{}), ThrID {}, LayoutA_TV {}, LayoutB_TV {}, LayoutC_TV {})",
                a.name, a.shape_mnk[0], a.shape_mnk[1], a.shape_mnk[2], a.thr_id, a.a, a.b, a.c
            ),
            Value::Mma(m) => {
                write!(
                    f,
                    "TiledMMA({}, {} threads, tile ({},{},{}), ThrLayoutVMNK {}, ",
                    m.atom.name,
                    m.threads(),
                    m.tile_mnk[0],
                    m.tile_mnk[1],
                    m.tile_mnk[2],
                    m.thr_layout_vmnk,
                )?;
                // the permutation, where one is not the identity (CuTe's `_`)
                let ident = |i: usize| {
                    let p = m.permutation_mnk[i];
                    p.rank() == 1 && p.strides() == [1] && p.size() == m.tile_mnk[i]
                };
                if !(0..3).all(ident) {
                    let modes: Vec<String> = (0..3)
                        .map(|i| {
                            if ident(i) {
                                "_".to_string()
                            } else {
                                m.permutation_mnk[i].to_string()
                            }
                        })
                        .collect();
                    write!(f, "PermutationMNK <{}>, ", modes.join(","))?;
                }
                write!(
                    f,
                    "LayoutA_TV {}, LayoutB_TV {}, LayoutC_TV {})",
                    m.layout_a_tv, m.layout_b_tv, m.layout_c_tv
                )
            }
            Value::CopyAtom(a) => write!(
                f,
                "Copy_Atom({}, ThrID {}, ValLayoutSrc {}, ValLayoutDst {}, ValLayoutRef {}, ValueType {}b)",
                a.traits.name,
                a.traits.thr_id,
                a.val_layout_src,
                a.val_layout_dst,
                a.val_layout_ref,
                a.val_bits
            ),
            Value::AtomCopy(c) => write!(
                f,
                "TiledCopy(Tiler_MN ({},{}), TiledLayout_TV {}, {})",
                c.tile[0],
                c.tile[1],
                c.layout_tv,
                Value::CopyAtom(c.atom)
            ),
            Value::Gmma(g) => write!(
                f,
                "GMMA_Atom({}, {}, {}, shape_mnk ({},{},{}), ThrID {}, ALayout {}, BLayout {}, CLayout {})",
                g.mma.name,
                g.ptx,
                match g.source {
                    GmmaSource::SS => "A and B from shared memory (descriptors)",
                    GmmaSource::RS => "A from registers, B from shared memory (descriptor)",
                },
                g.mma.shape_mnk[0],
                g.mma.shape_mnk[1],
                g.mma.shape_mnk[2],
                g.mma.thr_id,
                g.mma.a,
                g.mma.b,
                g.mma.c
            ),
            Value::Major(m) => f.write_str(m.name()),
            Value::Desc(d) => write!(f, "{d}"),
            Value::Mode(m) => write!(
                f,
                "{} (TMA {} = {}, GMMA layout type {} = {})",
                match m {
                    SwizzleMode::None => "no swizzle",
                    SwizzleMode::B32 => "32-byte swizzle",
                    SwizzleMode::B64 => "64-byte swizzle",
                    SwizzleMode::B128 => "128-byte swizzle",
                },
                m.tma_name(),
                m.tma_code(),
                m.name(),
                m.gmma_layout_type()
            ),
        }
    }
}

type R<T> = std::result::Result<T, String>;

fn err(e: LayoutError) -> String {
    e.to_string()
}

/// How deeply calls, tilers and swizzles may nest in one expression (a bound on the parser's
/// recursion; tuples have their own bound, `MAX_TOKENS / 2`).
pub const MAX_NESTING: usize = 64;

/// Evaluates one expression; the `Err` is the reason, ready to print after `error: `.
pub fn eval(src: &str) -> R<Value> {
    let mut p = Parser {
        b: src.as_bytes(),
        pos: 0,
        depth: 0,
    };
    let v = p.expr()?;
    p.ws();
    if p.pos != p.b.len() {
        return Err(format!("unexpected {} at byte {}", p.what(), p.pos));
    }
    Ok(v)
}

/// Evaluates one line and formats the answer as `tessel eval` prints it.
pub fn eval_line(src: &str) -> String {
    match eval(src) {
        Ok(v) => v.to_string(),
        Err(e) => format!("error: {e}"),
    }
}

struct Parser<'a> {
    b: &'a [u8],
    pos: usize,
    depth: usize,
}

impl Parser<'_> {
    /// The character at the current position, quoted (whole, when it is not ASCII).
    fn what(&self) -> String {
        match std::str::from_utf8(&self.b[self.pos..]) {
            Ok(rest) => match rest.chars().next() {
                Some(c) => format!("{c:?}"),
                None => "end of input".into(),
            },
            Err(_) => format!("byte 0x{:02x}", self.b[self.pos]),
        }
    }
    fn ws(&mut self) {
        while self.pos < self.b.len() && self.b[self.pos].is_ascii_whitespace() {
            self.pos += 1;
        }
    }
    fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.b.get(self.pos).copied()
    }
    fn eat(&mut self, c: u8) -> R<()> {
        if self.peek() == Some(c) {
            self.pos += 1;
            Ok(())
        } else {
            Err(format!(
                "expected '{}' at byte {}, found {}",
                c as char,
                self.pos,
                self.what()
            ))
        }
    }
    fn int(&mut self) -> R<i64> {
        self.ws();
        let (t, end) = IntTuple::parse_at(self.b, self.pos).map_err(err)?;
        if !t.is_int() || t.is_hole() {
            return Err(format!("expected an integer at byte {}", self.pos));
        }
        self.pos = end;
        Ok(t.value())
    }

    fn expr(&mut self) -> R<Value> {
        if self.depth >= MAX_NESTING {
            return Err(format!(
                "expression nested deeper than {MAX_NESTING} levels at byte {}",
                self.pos
            ));
        }
        self.depth += 1;
        let v = self.expr_inner();
        self.depth -= 1;
        v
    }

    fn expr_inner(&mut self) -> R<Value> {
        match self.peek() {
            None => Err("empty expression".into()),
            Some(c) if c.is_ascii_alphabetic() => self.call(),
            Some(b'<') => self.tiler(),
            Some(_) => {
                let (t, end) = IntTuple::parse_at(self.b, self.pos).map_err(err)?;
                self.pos = end;
                if self.peek() == Some(b':') {
                    self.pos += 1;
                    self.ws();
                    let (d, end) = IntTuple::parse_at(self.b, self.pos).map_err(err)?;
                    self.pos = end;
                    return Ok(Value::Layout(Layout::new(t, d).map_err(err)?));
                }
                if t.is_int() && !t.is_hole() {
                    Ok(Value::Int(t.value()))
                } else {
                    Ok(Value::Tuple(t))
                }
            }
        }
    }

    /// Items separated by `,` up to `close` (the opening bracket already read); none at all
    /// only when `empty_ok`.
    fn items<T>(
        &mut self,
        close: u8,
        empty_ok: bool,
        mut item: impl FnMut(&mut Self) -> R<T>,
    ) -> R<Vec<T>> {
        let mut v = Vec::new();
        if empty_ok && self.peek() == Some(close) {
            self.pos += 1;
            return Ok(v);
        }
        loop {
            v.push(item(self)?);
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(c) if c == close => {
                    self.pos += 1;
                    return Ok(v);
                }
                _ => {
                    return Err(format!(
                        "expected ',' or '{}' at byte {}, found {}",
                        close as char,
                        self.pos,
                        self.what()
                    ))
                }
            }
        }
    }

    fn tiler(&mut self) -> R<Value> {
        self.eat(b'<')?;
        let modes = self.items(b'>', false, |p| {
            p.ws();
            let hole = p.b.get(p.pos) == Some(&b'_')
                && !p.b.get(p.pos + 1).is_some_and(|c| c.is_ascii_digit());
            if hole {
                p.pos += 1;
                Ok(None)
            } else {
                Ok(Some(to_layout(&p.expr()?)?))
            }
        })?;
        Ok(Value::Tiler(Tiler::by_mode(&modes).map_err(err)?))
    }

    fn call(&mut self) -> R<Value> {
        let start = self.pos;
        while self.pos < self.b.len()
            && (self.b[self.pos].is_ascii_alphanumeric() || self.b[self.pos] == b'_')
        {
            self.pos += 1;
        }
        let name = std::str::from_utf8(&self.b[start..self.pos])
            .unwrap()
            .to_string();
        // a copy atom with its template argument: SM80_CP_ASYNC_CACHEGLOBAL<uint128_t>
        if self.b.get(self.pos) == Some(&b'<') && !name.starts_with("Sw") {
            let close = self.b[self.pos..].iter().position(|&c| c == b'>');
            if let Some(n) = close {
                let full = std::str::from_utf8(&self.b[start..self.pos + n + 1]).unwrap_or("");
                if let Some(t) = CopyTraits::by_name(full) {
                    self.pos += n + 1;
                    return CopyAtom::new(&t, 16).map(Value::CopyAtom).map_err(err);
                }
            }
        }
        if !matches!(self.peek(), Some(b'(' | b'<')) {
            match name.as_str() {
                "K" => return Ok(Value::Major(GmmaMajor::K)),
                "MN" => return Ok(Value::Major(GmmaMajor::MN)),
                _ => {}
            }
            if let Some(t) = CopyTraits::by_name(&name) {
                return CopyAtom::new(&t, 16).map(Value::CopyAtom).map_err(err);
            }
            return match MmaAtom::by_name(&name) {
                Some(a) => Ok(Value::Atom(a)),
                None => Err(format!(
                    "unknown name {name:?} at byte {start} (not an MMA or copy atom; a call needs '(')"
                )),
            };
        }
        let mut targ = None;
        if self.b.get(self.pos) == Some(&b'<') {
            self.pos += 1;
            if name == "Sw" {
                let (bb, m) = (self.int()?, {
                    self.eat(b',')?;
                    self.int()?
                });
                self.eat(b',')?;
                let s = self.int()?;
                self.eat(b'>')?;
                return self.swizzled(Swizzle::new(bb, m, s).map_err(err)?);
            }
            let at = self.pos;
            let i = self.int()?;
            if i < 0 {
                return Err(format!(
                    "{name}<{i}> at byte {at}: a mode index is 0 or more"
                ));
            }
            targ = Some(i);
            self.eat(b'>')?;
        }
        self.eat(b'(')?;
        let args = self.items(b')', true, Self::expr)?;
        apply(&name, targ, &args)
    }

    /// After `Sw<B,M,S>`: `o [OFFSET o] LAYOUT`.
    fn swizzled(&mut self, sw: Swizzle) -> R<Value> {
        self.ws();
        self.eat(b'o')?;
        let first = self.expr()?;
        let (offset, inner) = match (first, self.peek()) {
            (Value::Int(o), Some(b'o')) => {
                self.pos += 1;
                (o, self.expr()?)
            }
            (v, _) => (0, v),
        };
        let layout = to_layout(&inner)?;
        Ok(Value::Composed(
            ComposedLayout::with_offset(sw, offset, layout).map_err(err)?,
        ))
    }
}

/// A value used where a layout is wanted.
pub fn to_layout(v: &Value) -> R<Layout> {
    match v {
        Value::Layout(l) => Ok(*l),
        Value::Tuple(t) => Layout::col_major(*t).map_err(err),
        Value::Int(n) => Layout::int(*n, 1).map_err(err),
        other => Err(format!("expected a layout, found {other}")),
    }
}

fn to_tiler(v: &Value) -> R<Tiler> {
    match v {
        Value::Tiler(t) => Ok(*t),
        Value::Layout(l) => Ok(Tiler::Layout(*l)),
        Value::Tuple(t) => Tiler::shape(t).map_err(err),
        Value::Int(n) => Ok(Tiler::Layout(Layout::int(*n, 1).map_err(err)?)),
        other => Err(format!("expected a tiler, found {other}")),
    }
}

/// A value used where a tensor is wanted: a layout is the counting tensor `0 o L`.
fn to_tensor(v: &Value) -> R<Tensor<Counting>> {
    match v {
        Value::Tensor(t) => Ok(*t),
        Value::Offset(o, l) => Ok(counting(*l).with_layout((*l, *o))),
        other => Ok(counting(to_layout(other)?)),
    }
}

fn to_copy(v: &Value) -> R<TiledCopy> {
    match v {
        Value::Copy(c) => Ok(*c),
        other => Err(format!("expected a tiled copy, found {other}")),
    }
}

/// A tiled MMA's `PermutationMNK`: a by-mode tiler of at most 3 modes (`<_,(8,4,2):(1,16,8),_>`,
/// or a shape `(32,64,16)` / `(_,64)`), missing modes `_`.
fn permutation(v: &Value) -> R<[Option<Layout>; 3]> {
    match to_tiler(v)? {
        Tiler::ByMode { n, modes } if n <= 3 => Ok([modes[0], modes[1], modes[2]]),
        _ => Err(format!(
            "expected a permutation per mode M, N, K (a tiler <PM,PN,PK> of at most 3 modes, _ for none), found {v}"
        )),
    }
}

fn to_atom(v: &Value) -> R<MmaAtom> {
    match v {
        Value::Atom(a) => Ok(*a),
        other => Err(format!("expected an MMA atom, found {other}")),
    }
}

fn to_copy_atom(v: &Value) -> R<CopyAtom> {
    match v {
        Value::CopyAtom(a) => Ok(*a),
        other => Err(format!("expected a copy atom, found {other}")),
    }
}

fn to_mma(v: &Value) -> R<TiledMma> {
    match v {
        Value::Mma(m) => Ok(*m),
        other => Err(format!("expected a tiled MMA, found {other}")),
    }
}

fn to_tuple(v: &Value) -> R<IntTuple> {
    match v {
        Value::Tuple(t) => Ok(*t),
        Value::Int(n) => Ok(IntTuple::int(*n)),
        other => Err(format!("expected a tuple, found {other}")),
    }
}

/// A value used where an integer is wanted (an index, a count): tuples are refused, never
/// silently replaced by their product.
fn to_int(v: &Value) -> R<i64> {
    match v {
        Value::Int(n) => Ok(*n),
        other => Err(format!("expected an integer, found {other}")),
    }
}

/// A value used where a cotarget is wanted (`complement`): an integer, or a shape's size.
fn to_size(v: &Value) -> R<i64> {
    match v {
        Value::Tuple(t) => t.size().map_err(err),
        other => to_int(other),
    }
}

/// A mode index: an integer, 0 or more.
fn to_mode(v: &Value) -> R<usize> {
    let i = to_int(v)?;
    usize::try_from(i).map_err(|_| format!("mode index {i} is negative"))
}

fn arity(name: &str, args: &[Value], lo: usize, hi: usize) -> R<()> {
    if args.len() < lo || args.len() > hi {
        let want = if lo == hi {
            format!("{lo}")
        } else {
            format!("{lo} to {hi}")
        };
        return Err(format!(
            "{name} takes {want} arguments, {} given",
            args.len()
        ));
    }
    Ok(())
}

type Tiled = fn(&Layout, &Tiler) -> layout_core::Result<Layout>;

fn tiled_op(name: &str) -> Option<Tiled> {
    Some(match name {
        "logical_divide" => logical_divide_tiler,
        "zipped_divide" => zipped_divide,
        "tiled_divide" => tiled_divide,
        "flat_divide" => flat_divide,
        "logical_product" => logical_product_tiler,
        "zipped_product" => zipped_product,
        "tiled_product" => tiled_product,
        "flat_product" => flat_product,
        _ => return None,
    })
}

/// Applies the operation `name` (with an optional template argument, `get<1>(L)`).
pub fn apply(name: &str, targ: Option<i64>, args: &[Value]) -> R<Value> {
    use Value::{Composed, Int, Offset, Tuple};
    let lay = |i: usize| to_layout(&args[i]);
    let ok = |r: layout_core::Result<Layout>| r.map(Value::Layout).map_err(err);
    // divides apply to a swizzled layout's inner layout: they are compositions A o X
    if let Some(f) = tiled_op(name) {
        arity(name, args, 2, 2)?;
        let t = to_tiler(&args[1])?;
        if let Composed(c) = &args[0] {
            if name.ends_with("divide") {
                return Ok(Composed(c.map(|l| f(l, &t)).map_err(err)?));
            }
        }
        return ok(f(&lay(0)?, &t));
    }
    let tensor = |r: layout_core::Result<Tensor<Counting>>| r.map(Value::Tensor).map_err(err);
    match name {
        "make_identity_tensor" => {
            arity(name, args, 1, 1)?;
            tensor(make_identity_tensor(&to_tuple(&args[0])?))
        }
        "make_tensor" => {
            arity(name, args, 1, 1)?;
            Ok(Value::Tensor(to_tensor(&args[0])?))
        }
        "local_tile" => {
            arity(name, args, 3, 4)?;
            let (t, tile, c) = (
                to_tensor(&args[0])?,
                to_tuple(&args[1])?,
                to_tuple(&args[2])?,
            );
            match args.get(3) {
                None => tensor(t.local_tile(&tile, &c)),
                Some(p) => tensor(t.local_tile_proj(&tile, &c, &to_tuple(p)?)),
            }
        }
        "local_partition" => {
            arity(name, args, 3, 4)?;
            let (t, thr, i) = (to_tensor(&args[0])?, lay(1)?, to_int(&args[2])?);
            match args.get(3) {
                None => tensor(t.local_partition(&thr, i)),
                Some(p) => tensor(t.local_partition_proj(&thr, i, &to_tuple(p)?)),
            }
        }
        "inner_partition" | "outer_partition" => {
            arity(name, args, 3, 3)?;
            let (t, tl, c) = (
                to_tensor(&args[0])?,
                to_tiler(&args[1])?,
                to_tuple(&args[2])?,
            );
            tensor(if name == "inner_partition" {
                t.inner_partition(&tl, &c)
            } else {
                t.outer_partition(&tl, &c)
            })
        }
        "tiled_copy_tv" | "make_tiled_copy_tv" => {
            arity(name, args, 4, 4)?;
            let (thr, val) = (lay(0)?, lay(1)?);
            let (atom, elem) = (to_int(&args[2])?, to_int(&args[3])?);
            make_tiled_copy_tv(&thr, &val, atom, elem)
                .map(Value::Copy)
                .map_err(err)
        }
        "mma_atom" => {
            arity(name, args, 1, 1)?;
            Ok(Value::Atom(to_atom(&args[0])?))
        }
        "gmma_atom" => {
            arity(name, args, 1, 1)?;
            let a = to_atom(&args[0])?;
            GmmaAtom::by_name(a.name)
                .map(Value::Gmma)
                .ok_or_else(|| format!("{} is not a GMMA (wgmma) atom", a.name))
        }
        "gmma_desc" => {
            arity(name, args, 2, 4)?;
            let smem = match &args[0] {
                Composed(c) => *c,
                v => ComposedLayout::new(Swizzle::new(0, 0, 0).map_err(err)?, to_layout(v)?)
                    .map_err(err)?,
            };
            let major = match &args[1] {
                Value::Major(m) => *m,
                other => return Err(format!("expected K or MN, found {other}")),
            };
            let bits = args.get(2).map(to_int).transpose()?.unwrap_or(16);
            let kb = args.get(3).map(to_int).transpose()?.unwrap_or(0);
            make_gmma_desc_k(&smem, bits, major, kb)
                .map(Value::Desc)
                .map_err(err)
        }
        "swizzle_mode" => {
            arity(name, args, 1, 2)?;
            let sw = match &args[0] {
                Composed(c) => c.swizzle(),
                other => return Err(format!("expected a swizzled layout, found {other}")),
            };
            let bits = args.get(1).map(to_int).transpose()?.unwrap_or(16);
            SwizzleMode::from_swizzle(&sw, bits)
                .map(Value::Mode)
                .map_err(err)
        }
        "make_tiled_mma" => {
            arity(name, args, 1, 3)?;
            let atom = to_atom(&args[0])?;
            let al = match args.get(1) {
                Some(v) => to_layout(v)?,
                None => Layout::int(1, 0).map_err(err)?,
            };
            let perm = match args.get(2) {
                Some(v) => permutation(v)?,
                None => [None; 3],
            };
            make_tiled_mma_permuted(&atom, &al, &perm)
                .map(Value::Mma)
                .map_err(err)
        }
        "layout_a_tv" | "layout_b_tv" | "layout_c_tv" => {
            arity(name, args, 1, 1)?;
            let (a, b, c) = match &args[0] {
                Value::Atom(a) => (a.a, a.b, a.c),
                Value::Mma(m) => (m.layout_a_tv, m.layout_b_tv, m.layout_c_tv),
                other => {
                    return Err(format!(
                        "expected an MMA atom or a tiled MMA, found {other}"
                    ))
                }
            };
            Ok(Value::Layout(match name {
                "layout_a_tv" => a,
                "layout_b_tv" => b,
                _ => c,
            }))
        }
        "partition_A" | "partition_B" | "partition_C" => {
            arity(name, args, 3, 3)?;
            let (m, tid, t) = (to_mma(&args[0])?, to_int(&args[1])?, to_tensor(&args[2])?);
            let op = match name {
                "partition_A" => Operand::A,
                "partition_B" => Operand::B,
                _ => Operand::C,
            };
            let thr = m.get_slice(tid).map_err(err)?;
            let part = thr.partition(op, t.layout()).map_err(err)?;
            Ok(Value::Tensor(t.with_layout(part)))
        }
        "partition_S" | "partition_D" => {
            arity(name, args, 3, 3)?;
            let (tid, t) = (to_int(&args[1])?, to_tensor(&args[2])?);
            let part = match &args[0] {
                Value::AtomCopy(c) if name == "partition_S" => c.partition_s(t.layout(), tid),
                Value::AtomCopy(c) => c.partition_d(t.layout(), tid),
                other => to_copy(other)?.partition(t.layout(), tid),
            };
            Ok(Value::Tensor(t.with_layout(part.map_err(err)?)))
        }
        "retile" => {
            arity(name, args, 2, 2)?;
            match &args[0] {
                Value::AtomCopy(c) => ok(c.retile(&lay(1)?)),
                other => ok(to_copy(other)?.retile(&lay(1)?)),
            }
        }
        "copy_atom" => {
            arity(name, args, 1, 2)?;
            let a = to_copy_atom(&args[0])?;
            match args.get(1) {
                None => Ok(Value::CopyAtom(a)),
                Some(b) => CopyAtom::new(&a.traits, to_int(b)?)
                    .map(Value::CopyAtom)
                    .map_err(err),
            }
        }
        "make_tiled_copy_A" | "make_tiled_copy_B" | "make_tiled_copy_C" => {
            arity(name, args, 2, 2)?;
            let (a, m) = (to_copy_atom(&args[0])?, to_mma(&args[1])?);
            let f = match name {
                "make_tiled_copy_A" => make_tiled_copy_a,
                "make_tiled_copy_B" => make_tiled_copy_b,
                _ => make_tiled_copy_c,
            };
            f(&a, &m).map(Value::AtomCopy).map_err(|e| match e {
                LayoutError::NotDivisible { value, by } => format!(
                    "{name}: the copy atom moves {by} values per thread where the tiled MMA's \
                     threads hold {value} per tile (CuTe: too few vals for the CopyAtom)"
                ),
                e => err(e),
            })
        }
        "get_layoutS_TV" | "get_layoutD_TV" => {
            arity(name, args, 1, 1)?;
            let c = match &args[0] {
                Value::AtomCopy(c) => *c,
                other => {
                    return Err(format!(
                        "expected a tiled copy of a copy atom, found {other}"
                    ))
                }
            };
            ok(if name == "get_layoutS_TV" {
                c.layout_s_tv()
            } else {
                c.layout_d_tv()
            })
        }
        "partition_fragment_A" | "partition_fragment_B" | "partition_fragment_C" => {
            arity(name, args, 2, 2)?;
            let (m, t) = (to_mma(&args[0])?, to_tensor(&args[1])?);
            let op = match name {
                "partition_fragment_A" => Operand::A,
                "partition_fragment_B" => Operand::B,
                _ => Operand::C,
            };
            ok(m.partition_fragment(op, t.layout()))
        }
        "size" | "cosize" | "rank" | "depth" => {
            arity(name, args, 1, 1)?;
            let target = match (targ, &args[0]) {
                (Some(i), Composed(c)) => Composed(c.get(i as usize).map_err(err)?),
                (Some(i), v) => Value::Layout(to_layout(v)?.get(i as usize).map_err(err)?),
                (None, v) => v.clone(),
            };
            Ok(Int(match (name, &target) {
                ("size", Composed(c)) => c.size(),
                ("cosize", Composed(c)) => c.cosize(),
                ("rank", Composed(c)) => c.layout().rank() as i64,
                ("depth", Composed(c)) => c.layout().depth() as i64,
                ("size", Tuple(t)) => t.size().map_err(err)?,
                ("rank", Tuple(t)) => t.rank() as i64,
                ("depth", Tuple(t)) => t.depth() as i64,
                ("size", v) => to_layout(v)?.size(),
                ("cosize", v) => to_layout(v)?.cosize(),
                ("rank", v) => to_layout(v)?.rank() as i64,
                (_, v) => to_layout(v)?.depth() as i64,
            }))
        }
        "shape" | "stride" => {
            arity(name, args, 1, 1)?;
            let mut l = lay(0)?;
            if let Some(i) = targ {
                l = l.get(i as usize).map_err(err)?;
            }
            Ok(Tuple(if name == "shape" {
                l.shape()
            } else {
                l.stride()
            }))
        }
        "get" | "layout" => {
            let i = match (targ, args.len()) {
                (Some(i), 1) => i as usize,
                (None, 2) => to_mode(&args[1])?,
                _ => {
                    return Err(format!(
                        "{name} takes a layout and a mode: {name}<I>(L) or {name}(L, I)"
                    ))
                }
            };
            match &args[0] {
                Composed(c) => Ok(Composed(c.get(i).map_err(err)?)),
                Tuple(t) if name == "get" => Ok(Tuple(t.get(i).map_err(err)?)),
                v => ok(to_layout(v)?.get(i)),
            }
        }
        "make_layout" => {
            if args.len() == 2
                && matches!(args[0], Tuple(_) | Int(_))
                && matches!(args[1], Tuple(_) | Int(_))
            {
                return ok(Layout::new(to_tuple(&args[0])?, to_tuple(&args[1])?));
            }
            // one shape is its column-major layout; one layout becomes the single mode of the
            // result, as in CuTe: make_layout(3:1) == (3):(1)
            if args.len() == 1 && matches!(args[0], Tuple(_) | Int(_)) {
                return Ok(Value::Layout(lay(0)?));
            }
            let ls = (0..args.len()).map(lay).collect::<R<Vec<_>>>()?;
            ok(Layout::concat(&ls))
        }
        "make_layout_right" | "make_layout_row_major" => {
            arity(name, args, 1, 1)?;
            ok(Layout::row_major(to_tuple(&args[0])?))
        }
        "make_ordered_layout" => {
            arity(name, args, 2, 2)?;
            ok(Layout::ordered(to_tuple(&args[0])?, to_tuple(&args[1])?))
        }
        "append" => {
            arity(name, args, 2, 2)?;
            ok(lay(0)?.append(&lay(1)?))
        }
        "flatten" => {
            arity(name, args, 1, 1)?;
            match &args[0] {
                Tuple(t) => Ok(Tuple(t.flatten())),
                v => ok(Ok(to_layout(v)?.flatten())),
            }
        }
        "crd2idx" => {
            arity(name, args, 2, 2)?;
            let c = to_tuple(&args[1])?;
            match &args[0] {
                Composed(cl) => Ok(Int(cl.crd2idx(&c).map_err(err)?)),
                v => Ok(Int(to_layout(v)?.crd2idx(&c).map_err(err)?)),
            }
        }
        "idx2crd" => {
            // idx2crd(L or shape, c): c an index, a coarser or a natural coordinate
            arity(name, args, 2, 2)?;
            let shape = match &args[0] {
                Tuple(t) => *t,
                Composed(c) => c.layout().shape(),
                v => to_layout(v)?.shape(),
            };
            let c = to_tuple(&args[1])?;
            let nat = shape.idx2crd(&c).map_err(err)?;
            Ok(if nat.is_int() {
                Int(nat.value())
            } else {
                Tuple(nat)
            })
        }
        "slice" | "slice_and_offset" | "dice" => {
            arity(name, args, 2, 2)?;
            let c = to_tuple(&args[1])?;
            if let Composed(cl) = &args[0] {
                return Ok(Composed(
                    if name == "dice" {
                        cl.dice(&c)
                    } else {
                        cl.slice(&c)
                    }
                    .map_err(err)?,
                ));
            }
            let l = lay(0)?;
            match name {
                "dice" => ok(l.dice(&c)),
                "slice" => ok(l.slice(&c).map(|(s, _)| s)),
                _ => {
                    let (s, o) = l.slice(&c).map_err(err)?;
                    Ok(Offset(o, s))
                }
            }
        }
        "coalesce" | "filter" => {
            arity(name, args, 1, 2)?;
            let l = lay(0)?;
            let r = match (name, args.get(1)) {
                ("coalesce", None) => coalesce(&l),
                (_, None) => filter(&l),
                ("coalesce", Some(p)) => coalesce_profile(&l, &to_tuple(p)?),
                (_, Some(p)) => filter_profile(&l, &to_tuple(p)?),
            };
            ok(r)
        }
        "composition" => {
            arity(name, args, 2, 2)?;
            let t = to_tiler(&args[1])?;
            match &args[0] {
                Composed(c) => Ok(Composed(c.compose_tiler(&t).map_err(err)?)),
                v => ok(composition_tiler(&to_layout(v)?, &t)),
            }
        }
        "complement" => {
            arity(name, args, 1, 2)?;
            let l = lay(0)?;
            match args.get(1) {
                None => ok(complement_default(&l)),
                Some(m) => ok(complement(&l, to_size(m)?)),
            }
        }
        "right_inverse" => {
            arity(name, args, 1, 1)?;
            ok(right_inverse(&lay(0)?))
        }
        "left_inverse" => {
            arity(name, args, 1, 1)?;
            ok(left_inverse(&lay(0)?))
        }
        "blocked_product" | "raked_product" => {
            arity(name, args, 2, 2)?;
            let f = if name == "blocked_product" {
                blocked_product
            } else {
                raked_product
            };
            ok(f(&lay(0)?, &lay(1)?))
        }
        "tile_to_shape" => {
            arity(name, args, 2, 3)?;
            let order = args.get(2).map(to_tuple).transpose()?;
            ok(tile_to_shape(
                &lay(0)?,
                &to_tuple(&args[1])?,
                order.as_ref(),
            ))
        }
        "shape_div" | "shape_mod" => {
            arity(name, args, 2, 2)?;
            let s = to_tuple(&args[0])?;
            let d = to_int(&args[1])?;
            let r = if name == "shape_div" {
                s.shape_div(d)
            } else {
                s.shape_mod(d)
            };
            Ok(Tuple(r.map_err(err)?))
        }
        _ => Err(format!("unknown operation '{name}'")),
    }
}

/// Draws a value of the calculator (a layout, a shape, or a swizzled layout) as `tessel show`
/// prints it.
pub fn show_value(v: &Value) -> R<String> {
    match v {
        Value::Composed(c) => draw(c.layout(), &c.to_string(), |i| c.call(i)),
        other => show(&to_layout(other)?),
    }
}

/// The layout as a 2-D table of its indices, rows over mode 0 and columns over mode 1, as CuTe's
/// `print_layout` draws it. A rank-1 layout is one column.
pub fn show(l: &Layout) -> R<String> {
    draw(l, &l.to_string(), |i| l.call(i))
}

/// The table of `f` over the domain of `l` (its 1-D coordinates), titled `title`.
fn draw(l: &Layout, title: &str, f: impl Fn(i64) -> i64) -> R<String> {
    let (rows, cols) = match l.rank() {
        1 => (l.size(), 1),
        2 => (l.get(0).map_err(err)?.size(), l.get(1).map_err(err)?.size()),
        r => {
            return Err(format!(
                "show draws layouts of rank 1 or 2, this one has rank {r}"
            ))
        }
    };
    if rows * cols > 1 << 16 {
        return Err(format!("{rows}x{cols} is too large to draw"));
    }
    let at = |m: i64, n: i64| f(m + n * rows);
    let mut widest = 1;
    for m in 0..rows {
        for n in 0..cols {
            widest = widest.max(at(m, n).to_string().len());
        }
    }
    let w = widest + 2;
    let mut out = String::new();
    writeln!(out, "{title}").unwrap();
    let rule = |out: &mut String| {
        out.push_str("    ");
        for _ in 0..cols {
            out.push('+');
            out.push_str(&"-".repeat(w));
        }
        out.push_str("+\n");
    };
    out.push_str("    ");
    for n in 0..cols {
        write!(out, " {n:>width$} ", width = w - 1).unwrap();
    }
    out.push('\n');
    for m in 0..rows {
        rule(&mut out);
        write!(out, "{m:>2}  ").unwrap();
        for n in 0..cols {
            write!(out, "|{:>width$}", at(m, n), width = w - 1).unwrap();
            out.push(' ');
        }
        out.push_str("|\n");
    }
    rule(&mut out);
    Ok(out)
}
