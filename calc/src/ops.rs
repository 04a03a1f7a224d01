//! The calculator's operations: one table of (name, number of arguments, function). Each
//! function receives its arguments already evaluated and counted; the coercions
//! (`crate::value`) turn them into what layout-core's operation takes.

use crate::value::Value::{Composed, Int, Offset, Tuple};
use crate::value::*;
use layout_core::*;

/// One operation of the calculator.
pub struct Op {
    /// Its name, as in CuTe.
    pub name: &'static str,
    /// The fewest and the most arguments it takes.
    pub args: (usize, usize),
    /// The operation.
    pub f: fn(&Call) -> R<Value>,
}

/// A call of an operation: its name (several names share one function), its template argument
/// (`get<1>(L)`), and its arguments.
pub struct Call<'a> {
    /// The name it was called by.
    pub name: &'a str,
    /// `N` of `name<N>(...)`.
    pub targ: Option<i64>,
    /// The arguments, evaluated.
    pub args: &'a [Value],
}

impl Call<'_> {
    /// Argument `i` as a layout.
    fn lay(&self, i: usize) -> R<Layout> {
        to_layout(&self.args[i])
    }
}

/// Every operation of the calculator, in the order `tessel eval --list` prints them.
pub const OPS: &[Op] = &[
    Op {
        name: "logical_divide",
        args: (2, 2),
        f: op_tiled,
    },
    Op {
        name: "zipped_divide",
        args: (2, 2),
        f: op_tiled,
    },
    Op {
        name: "tiled_divide",
        args: (2, 2),
        f: op_tiled,
    },
    Op {
        name: "flat_divide",
        args: (2, 2),
        f: op_tiled,
    },
    Op {
        name: "logical_product",
        args: (2, 2),
        f: op_tiled,
    },
    Op {
        name: "zipped_product",
        args: (2, 2),
        f: op_tiled,
    },
    Op {
        name: "tiled_product",
        args: (2, 2),
        f: op_tiled,
    },
    Op {
        name: "flat_product",
        args: (2, 2),
        f: op_tiled,
    },
    Op {
        name: "make_identity_tensor",
        args: (1, 1),
        f: op_make_identity_tensor,
    },
    Op {
        name: "make_tensor",
        args: (1, 1),
        f: op_make_tensor,
    },
    Op {
        name: "local_tile",
        args: (3, 4),
        f: op_local_tile,
    },
    Op {
        name: "local_partition",
        args: (3, 4),
        f: op_local_partition,
    },
    Op {
        name: "shard",
        args: (3, 3),
        f: op_shard,
    },
    Op {
        name: "shard_shape",
        args: (2, 2),
        f: op_shard_shape,
    },
    Op {
        name: "mesh_coord",
        args: (2, 2),
        f: op_mesh_coord,
    },
    Op {
        name: "gathered",
        args: (2, 2),
        f: op_gathered,
    },
    Op {
        name: "inner_partition",
        args: (3, 3),
        f: op_inner_outer_partition,
    },
    Op {
        name: "outer_partition",
        args: (3, 3),
        f: op_inner_outer_partition,
    },
    Op {
        name: "tiled_copy_tv",
        args: (4, 4),
        f: op_tiled_copy_tv,
    },
    Op {
        name: "make_tiled_copy_tv",
        args: (4, 4),
        f: op_tiled_copy_tv,
    },
    Op {
        name: "mma_atom",
        args: (1, 1),
        f: op_mma_atom,
    },
    Op {
        name: "gmma_atom",
        args: (1, 1),
        f: op_gmma_atom,
    },
    Op {
        name: "gmma_desc",
        args: (2, 4),
        f: op_gmma_desc,
    },
    Op {
        name: "swizzle_mode",
        args: (1, 2),
        f: op_swizzle_mode,
    },
    Op {
        name: "make_tiled_mma",
        args: (1, 3),
        f: op_make_tiled_mma,
    },
    Op {
        name: "layout_a_tv",
        args: (1, 1),
        f: op_layout_tv,
    },
    Op {
        name: "layout_b_tv",
        args: (1, 1),
        f: op_layout_tv,
    },
    Op {
        name: "layout_c_tv",
        args: (1, 1),
        f: op_layout_tv,
    },
    Op {
        name: "partition_A",
        args: (3, 3),
        f: op_partition_mma,
    },
    Op {
        name: "partition_B",
        args: (3, 3),
        f: op_partition_mma,
    },
    Op {
        name: "partition_C",
        args: (3, 3),
        f: op_partition_mma,
    },
    Op {
        name: "partition_S",
        args: (3, 3),
        f: op_partition_copy,
    },
    Op {
        name: "partition_D",
        args: (3, 3),
        f: op_partition_copy,
    },
    Op {
        name: "retile",
        args: (2, 2),
        f: op_retile,
    },
    Op {
        name: "copy_atom",
        args: (1, 2),
        f: op_copy_atom,
    },
    Op {
        name: "make_tiled_copy_A",
        args: (2, 2),
        f: op_make_tiled_copy,
    },
    Op {
        name: "make_tiled_copy_B",
        args: (2, 2),
        f: op_make_tiled_copy,
    },
    Op {
        name: "make_tiled_copy_C",
        args: (2, 2),
        f: op_make_tiled_copy,
    },
    Op {
        name: "get_layoutS_TV",
        args: (1, 1),
        f: op_get_layout_tv,
    },
    Op {
        name: "get_layoutD_TV",
        args: (1, 1),
        f: op_get_layout_tv,
    },
    Op {
        name: "partition_fragment_A",
        args: (2, 2),
        f: op_partition_fragment,
    },
    Op {
        name: "partition_fragment_B",
        args: (2, 2),
        f: op_partition_fragment,
    },
    Op {
        name: "partition_fragment_C",
        args: (2, 2),
        f: op_partition_fragment,
    },
    Op {
        name: "size",
        args: (1, 1),
        f: op_size_like,
    },
    Op {
        name: "cosize",
        args: (1, 1),
        f: op_size_like,
    },
    Op {
        name: "rank",
        args: (1, 1),
        f: op_size_like,
    },
    Op {
        name: "depth",
        args: (1, 1),
        f: op_size_like,
    },
    Op {
        name: "shape",
        args: (1, 1),
        f: op_shape_stride,
    },
    Op {
        name: "stride",
        args: (1, 1),
        f: op_shape_stride,
    },
    Op {
        name: "get",
        args: (1, 2),
        f: op_get,
    },
    Op {
        name: "layout",
        args: (1, 2),
        f: op_get,
    },
    Op {
        name: "make_layout",
        args: (0, usize::MAX),
        f: op_make_layout,
    },
    Op {
        name: "make_layout_right",
        args: (1, 1),
        f: op_make_layout_right,
    },
    Op {
        name: "make_layout_row_major",
        args: (1, 1),
        f: op_make_layout_right,
    },
    Op {
        name: "make_ordered_layout",
        args: (2, 2),
        f: op_make_ordered_layout,
    },
    Op {
        name: "append",
        args: (2, 2),
        f: op_append,
    },
    Op {
        name: "flatten",
        args: (1, 1),
        f: op_flatten,
    },
    Op {
        name: "crd2idx",
        args: (2, 2),
        f: op_crd2idx,
    },
    Op {
        name: "idx2crd",
        args: (2, 2),
        f: op_idx2crd,
    },
    Op {
        name: "slice",
        args: (2, 2),
        f: op_slice_dice,
    },
    Op {
        name: "slice_and_offset",
        args: (2, 2),
        f: op_slice_dice,
    },
    Op {
        name: "dice",
        args: (2, 2),
        f: op_slice_dice,
    },
    Op {
        name: "coalesce",
        args: (1, 2),
        f: op_coalesce_filter,
    },
    Op {
        name: "filter",
        args: (1, 2),
        f: op_coalesce_filter,
    },
    Op {
        name: "composition",
        args: (2, 2),
        f: op_composition,
    },
    Op {
        name: "complement",
        args: (1, 2),
        f: op_complement,
    },
    Op {
        name: "right_inverse",
        args: (1, 1),
        f: op_right_inverse,
    },
    Op {
        name: "left_inverse",
        args: (1, 1),
        f: op_left_inverse,
    },
    Op {
        name: "blocked_product",
        args: (2, 2),
        f: op_blocked_raked,
    },
    Op {
        name: "raked_product",
        args: (2, 2),
        f: op_blocked_raked,
    },
    Op {
        name: "tile_to_shape",
        args: (2, 3),
        f: op_tile_to_shape,
    },
    Op {
        name: "shape_div",
        args: (2, 2),
        f: op_shape_div_mod,
    },
    Op {
        name: "shape_mod",
        args: (2, 2),
        f: op_shape_div_mod,
    },
];

/// The operation called `name`.
pub fn op(name: &str) -> Option<&'static Op> {
    OPS.iter().find(|o| o.name == name)
}

/// Applies the operation `name` (with an optional template argument, `get<1>(L)`).
pub fn apply(name: &str, targ: Option<i64>, args: &[Value]) -> R<Value> {
    let o = op(name).ok_or_else(|| format!("unknown operation '{name}'"))?;
    arity(name, args, o.args.0, o.args.1)?;
    (o.f)(&Call { name, targ, args })
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

fn ok(r: layout_core::Result<Layout>) -> R<Value> {
    r.map(Value::Layout).map_err(err)
}

fn tensor(r: layout_core::Result<Tensor<Counting>>) -> R<Value> {
    r.map(Value::Tensor).map_err(err)
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

/// The divides and products by a tiler; a divide of a swizzled layout divides its inner layout
/// (a divide is a composition `A o X`).
fn op_tiled(c: &Call) -> R<Value> {
    let f = tiled_op(c.name).expect("a tiled operation of the table");
    let t = to_tiler(&c.args[1])?;
    if let Value::Composed(l) = &c.args[0] {
        if c.name.ends_with("divide") {
            return Ok(Value::Composed(l.map(|l| f(l, &t)).map_err(err)?));
        }
    }
    ok(f(&c.lay(0)?, &t))
}

fn op_make_identity_tensor(call: &Call) -> R<Value> {
    let args = call.args;
    tensor(make_identity_tensor(&to_tuple(&args[0])?))
}

fn op_make_tensor(call: &Call) -> R<Value> {
    let args = call.args;
    Ok(Value::Tensor(to_tensor(&args[0])?))
}

fn op_local_tile(call: &Call) -> R<Value> {
    let args = call.args;
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

fn op_local_partition(call: &Call) -> R<Value> {
    let args = call.args;
    let (t, thr, i) = (to_tensor(&args[0])?, call.lay(1)?, to_int(&args[2])?);
    match args.get(3) {
        None => tensor(t.local_partition(&thr, i)),
        Some(p) => tensor(t.local_partition_proj(&thr, i, &to_tuple(p)?)),
    }
}

/// `shard(L, mesh, r)`: GPU `r`'s shard of `L` over `mesh` (a layout from mesh coordinates to
/// ranks), `offset o layout`.
fn op_shard(call: &Call) -> R<Value> {
    let (s, o) = shard(&call.lay(0)?, &call.lay(1)?, to_int(&call.args[2])?).map_err(err)?;
    Ok(Offset(o, s))
}

/// `shard_shape(shape, mesh)`.
fn op_shard_shape(call: &Call) -> R<Value> {
    Ok(Tuple(
        shard_shape(&to_tuple(&call.args[0])?, &call.lay(1)?).map_err(err)?,
    ))
}

/// `mesh_coord(mesh, r)`: the mesh coordinate of GPU `r`.
fn op_mesh_coord(call: &Call) -> R<Value> {
    Ok(Tuple(
        mesh_coord(&call.lay(0)?, to_int(&call.args[1])?).map_err(err)?,
    ))
}

/// `gathered(mesh, shard_layout)`: the global tensor as the all-gathered shards leave it.
fn op_gathered(call: &Call) -> R<Value> {
    ok(gathered(&call.lay(0)?, &call.lay(1)?))
}

fn op_inner_outer_partition(call: &Call) -> R<Value> {
    let name = call.name;
    let args = call.args;
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

fn op_tiled_copy_tv(call: &Call) -> R<Value> {
    let args = call.args;
    let (thr, val) = (call.lay(0)?, call.lay(1)?);
    let (atom, elem) = (to_int(&args[2])?, to_int(&args[3])?);
    make_tiled_copy_tv(&thr, &val, atom, elem)
        .map(Value::Copy)
        .map_err(err)
}

fn op_mma_atom(call: &Call) -> R<Value> {
    let args = call.args;
    Ok(Value::Atom(to_atom(&args[0])?))
}

fn op_gmma_atom(call: &Call) -> R<Value> {
    let args = call.args;
    let a = to_atom(&args[0])?;
    GmmaAtom::by_name(a.name)
        .map(Value::Gmma)
        .ok_or_else(|| format!("{} is not a GMMA (wgmma) atom", a.name))
}

fn op_gmma_desc(call: &Call) -> R<Value> {
    let args = call.args;
    let smem = match &args[0] {
        Composed(c) => *c,
        v => {
            ComposedLayout::new(Swizzle::new(0, 0, 0).map_err(err)?, to_layout(v)?).map_err(err)?
        }
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

fn op_swizzle_mode(call: &Call) -> R<Value> {
    let args = call.args;
    let sw = match &args[0] {
        Composed(c) => c.swizzle(),
        other => return Err(format!("expected a swizzled layout, found {other}")),
    };
    let bits = args.get(1).map(to_int).transpose()?.unwrap_or(16);
    SwizzleMode::from_swizzle(&sw, bits)
        .map(Value::Mode)
        .map_err(err)
}

fn op_make_tiled_mma(call: &Call) -> R<Value> {
    let args = call.args;
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

fn op_layout_tv(call: &Call) -> R<Value> {
    let name = call.name;
    let args = call.args;
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

fn op_partition_mma(call: &Call) -> R<Value> {
    let name = call.name;
    let args = call.args;
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

fn op_partition_copy(call: &Call) -> R<Value> {
    let name = call.name;
    let args = call.args;
    let (tid, t) = (to_int(&args[1])?, to_tensor(&args[2])?);
    let part = match &args[0] {
        Value::AtomCopy(c) if name == "partition_S" => c.partition_s(t.layout(), tid),
        Value::AtomCopy(c) => c.partition_d(t.layout(), tid),
        other => to_copy(other)?.partition(t.layout(), tid),
    };
    Ok(Value::Tensor(t.with_layout(part.map_err(err)?)))
}

fn op_retile(call: &Call) -> R<Value> {
    let args = call.args;
    match &args[0] {
        Value::AtomCopy(c) => ok(c.retile(&call.lay(1)?)),
        other => ok(to_copy(other)?.retile(&call.lay(1)?)),
    }
}

fn op_copy_atom(call: &Call) -> R<Value> {
    let args = call.args;
    let a = to_copy_atom(&args[0])?;
    match args.get(1) {
        None => Ok(Value::CopyAtom(a)),
        Some(b) => CopyAtom::new(&a.traits, to_int(b)?)
            .map(Value::CopyAtom)
            .map_err(err),
    }
}

fn op_make_tiled_copy(call: &Call) -> R<Value> {
    let name = call.name;
    let args = call.args;
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

fn op_get_layout_tv(call: &Call) -> R<Value> {
    let name = call.name;
    let args = call.args;
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

fn op_partition_fragment(call: &Call) -> R<Value> {
    let name = call.name;
    let args = call.args;
    let (m, t) = (to_mma(&args[0])?, to_tensor(&args[1])?);
    let op = match name {
        "partition_fragment_A" => Operand::A,
        "partition_fragment_B" => Operand::B,
        _ => Operand::C,
    };
    ok(m.partition_fragment(op, t.layout()))
}

fn op_size_like(call: &Call) -> R<Value> {
    let name = call.name;
    let args = call.args;
    let targ = call.targ;
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

fn op_shape_stride(call: &Call) -> R<Value> {
    let name = call.name;
    let targ = call.targ;
    let mut l = call.lay(0)?;
    if let Some(i) = targ {
        l = l.get(i as usize).map_err(err)?;
    }
    Ok(Tuple(if name == "shape" {
        l.shape()
    } else {
        l.stride()
    }))
}

fn op_get(call: &Call) -> R<Value> {
    let name = call.name;
    let args = call.args;
    let targ = call.targ;
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

fn op_make_layout(call: &Call) -> R<Value> {
    let args = call.args;
    if args.len() == 2
        && matches!(args[0], Tuple(_) | Int(_))
        && matches!(args[1], Tuple(_) | Int(_))
    {
        return ok(Layout::new(to_tuple(&args[0])?, to_tuple(&args[1])?));
    }
    // one shape is its column-major layout; one layout becomes the single mode of the
    // result, as in CuTe: make_layout(3:1) == (3):(1)
    if args.len() == 1 && matches!(args[0], Tuple(_) | Int(_)) {
        return Ok(Value::Layout(call.lay(0)?));
    }
    let ls = (0..args.len())
        .map(|i| call.lay(i))
        .collect::<R<Vec<_>>>()?;
    ok(Layout::concat(&ls))
}

fn op_make_layout_right(call: &Call) -> R<Value> {
    let args = call.args;
    ok(Layout::row_major(to_tuple(&args[0])?))
}

fn op_make_ordered_layout(call: &Call) -> R<Value> {
    let args = call.args;
    ok(Layout::ordered(to_tuple(&args[0])?, to_tuple(&args[1])?))
}

fn op_append(call: &Call) -> R<Value> {
    ok(call.lay(0)?.append(&call.lay(1)?))
}

fn op_flatten(call: &Call) -> R<Value> {
    let args = call.args;
    match &args[0] {
        Tuple(t) => Ok(Tuple(t.flatten())),
        v => ok(Ok(to_layout(v)?.flatten())),
    }
}

fn op_crd2idx(call: &Call) -> R<Value> {
    let args = call.args;
    let c = to_tuple(&args[1])?;
    match &args[0] {
        Composed(cl) => Ok(Int(cl.crd2idx(&c).map_err(err)?)),
        v => Ok(Int(to_layout(v)?.crd2idx(&c).map_err(err)?)),
    }
}

fn op_idx2crd(call: &Call) -> R<Value> {
    let args = call.args;
    // idx2crd(L or shape, c): c an index, a coarser or a natural coordinate
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

fn op_slice_dice(call: &Call) -> R<Value> {
    let name = call.name;
    let args = call.args;
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
    let l = call.lay(0)?;
    match name {
        "dice" => ok(l.dice(&c)),
        "slice" => ok(l.slice(&c).map(|(s, _)| s)),
        _ => {
            let (s, o) = l.slice(&c).map_err(err)?;
            Ok(Offset(o, s))
        }
    }
}

fn op_coalesce_filter(call: &Call) -> R<Value> {
    let name = call.name;
    let args = call.args;
    let l = call.lay(0)?;
    let r = match (name, args.get(1)) {
        ("coalesce", None) => coalesce(&l),
        (_, None) => filter(&l),
        ("coalesce", Some(p)) => coalesce_profile(&l, &to_tuple(p)?),
        (_, Some(p)) => filter_profile(&l, &to_tuple(p)?),
    };
    ok(r)
}

fn op_composition(call: &Call) -> R<Value> {
    let args = call.args;
    let t = to_tiler(&args[1])?;
    match &args[0] {
        Composed(c) => Ok(Composed(c.compose_tiler(&t).map_err(err)?)),
        v => ok(composition_tiler(&to_layout(v)?, &t)),
    }
}

fn op_complement(call: &Call) -> R<Value> {
    let args = call.args;
    let l = call.lay(0)?;
    match args.get(1) {
        None => ok(complement_default(&l)),
        Some(m) => ok(complement(&l, to_size(m)?)),
    }
}

fn op_right_inverse(call: &Call) -> R<Value> {
    ok(right_inverse(&call.lay(0)?))
}

fn op_left_inverse(call: &Call) -> R<Value> {
    ok(left_inverse(&call.lay(0)?))
}

fn op_blocked_raked(call: &Call) -> R<Value> {
    let name = call.name;
    let f = if name == "blocked_product" {
        blocked_product
    } else {
        raked_product
    };
    ok(f(&call.lay(0)?, &call.lay(1)?))
}

fn op_tile_to_shape(call: &Call) -> R<Value> {
    let args = call.args;
    let order = args.get(2).map(to_tuple).transpose()?;
    ok(tile_to_shape(
        &call.lay(0)?,
        &to_tuple(&args[1])?,
        order.as_ref(),
    ))
}

fn op_shape_div_mod(call: &Call) -> R<Value> {
    let name = call.name;
    let args = call.args;
    let s = to_tuple(&args[0])?;
    let d = to_int(&args[1])?;
    let r = if name == "shape_div" {
        s.shape_div(d)
    } else {
        s.shape_mod(d)
    };
    Ok(Tuple(r.map_err(err)?))
}
