//! A mesh of GPUs as the level above the grid in seed 001's tiling hierarchy.
//!
//! The mesh is a layout from mesh coordinates to GPU ranks, with the rank of the tensors it
//! splits: `(2,1):(1,0)`-style shapes say how many GPUs split each mode (1: not split), the
//! strides how ranks are numbered (`(2,2):(1,2)` column-major, `(2,2):(2,1)` row-major). For a
//! global tensor of shape `(M, N)` over a mesh of shape `(P, Q)`:
//!
//! - the shard is `(M/P, N/Q)` ([`shard_shape`]; each mode must divide: equal shards, as NCCL's
//!   collectives need);
//! - GPU `r` holds the shard at mesh coordinate `c = mesh^-1(r)` ([`mesh_coord`]):
//!   `local_tile(global, shard, c)` ([`shard`]), mode 0 of `zipped_divide(global, shard)` sliced
//!   at `c`;
//! - the shards all-gathered in rank order (each GPU's shard stored in one compact layout, one
//!   after another) are the global tensor in the layout [`gathered`]: mode `k` is
//!   `(shard_k, P_k):(d_k, S m_k)`, `S` the shard's size and `m` the mesh's strides;
//! - [`rebuild`] says what brings the shards back to a global tensor's layout: nothing (one GPU),
//!   an all-gather into it (where [`gathered`] and the global layout coalesce alike: rows of a
//!   row-major matrix), or an all-gather followed by a local copy into the global layout (columns
//!   of a row-major matrix).

use crate::coalesce::coalesce;
use crate::error::{LayoutError, Result};
use crate::int_tuple::{IntTuple, MAX_LEAVES};
use crate::layout::Layout;
use crate::partition::local_tile;
use crate::tri;

/// `mesh` is flat, of `rank` modes, and a bijection from its coordinates onto the ranks
/// `0..size(mesh)`: sorted by stride, the modes of more than one GPU are compact.
const fn check_mesh(mesh: &Layout, rank: usize) -> Result<()> {
    if mesh.rank() != rank {
        return Err(LayoutError::RankMismatch {
            expected: rank,
            found: mesh.rank(),
        });
    }
    if mesh.depth() > 1 {
        return Err(LayoutError::NestedTiler);
    }
    let (s, d) = (mesh.shapes(), mesh.strides());
    let n = s.len();
    // the modes of more than one GPU, in order of stride (a selection sort: no alloc)
    let mut order = [0usize; MAX_LEAVES];
    let mut m = 0;
    let mut k = 0;
    while k < n {
        if s[k] > 1 {
            order[m] = k;
            m += 1;
        }
        k += 1;
    }
    let mut i = 0;
    while i < m {
        let mut j = i + 1;
        while j < m {
            if d[order[j]] < d[order[i]] {
                let t = order[i];
                order[i] = order[j];
                order[j] = t;
            }
            j += 1;
        }
        i += 1;
    }
    let mut extent = 1;
    let mut i = 0;
    while i < m {
        let k = order[i];
        if d[k] != extent {
            return Err(LayoutError::NotInjective {
                stride: d[k],
                extent,
            });
        }
        extent *= s[k];
        i += 1;
    }
    Ok(())
}

/// The shard of a global `shape` over `mesh` (both of one rank, flat): `shape_k / mesh_k`.
///
/// Post-condition: `shard_k * mesh_k == shape_k` for every mode; else `NotDivisible` names the
/// mode's extent and its GPUs.
pub const fn shard_shape(shape: &IntTuple, mesh: &Layout) -> Result<IntTuple> {
    tri!(check_mesh(mesh, shape.rank()));
    if shape.depth() > 1 {
        return Err(LayoutError::NestedTiler);
    }
    let (g, p) = (shape.leaves(), mesh.shapes());
    let mut out = [0i64; MAX_LEAVES];
    let mut k = 0;
    while k < g.len() {
        if g[k] % p[k] != 0 {
            return Err(LayoutError::NotDivisible {
                value: g[k],
                by: p[k],
            });
        }
        out[k] = g[k] / p[k];
        k += 1;
    }
    Ok(shape.with_leaves(&out))
}

/// The mesh coordinate of GPU `rank`: the `c` with `mesh(c) == rank`.
///
/// Post-condition: `mesh.crd2idx(c) == rank`, for `0 <= rank < size(mesh)` (else
/// `IndexOutOfRange`).
pub const fn mesh_coord(mesh: &Layout, rank: i64) -> Result<IntTuple> {
    tri!(check_mesh(mesh, mesh.rank()));
    if rank < 0 || rank >= mesh.size() {
        return Err(LayoutError::IndexOutOfRange {
            index: rank,
            size: mesh.size(),
        });
    }
    let (s, d) = (mesh.shapes(), mesh.strides());
    let mut c = [0i64; MAX_LEAVES];
    let mut k = 0;
    while k < s.len() {
        if s[k] > 1 {
            c[k] = (rank / d[k]) % s[k];
        }
        k += 1;
    }
    Ok(mesh.shape().with_leaves(&c))
}

/// GPU `rank`'s shard of `global` (flat, of `mesh`'s rank): `local_tile(global, shard_shape,
/// mesh_coord(rank))`, as a layout and the offset of its first element.
///
/// Post-conditions: over the ranks the shards cover `global`'s coordinates exactly once; the
/// shard's coordinate `x` is `global`'s `x + shard * mesh_coord(rank)`.
pub const fn shard(global: &Layout, mesh: &Layout, rank: i64) -> Result<(Layout, i64)> {
    let s = tri!(shard_shape(&global.shape(), mesh));
    local_tile(global, &s, &tri!(mesh_coord(mesh, rank)))
}

/// The global tensor as the shards all-gathered in rank order leave it, each GPU's shard stored
/// in the compact layout `shard_layout` (of the shard's shape): mode `k` is
/// `(shard_layout_k, mesh_k:(S * m_k))`, `S = size(shard_layout)`, `m` the mesh's strides.
///
/// Post-condition: a bijection from the global coordinates onto `0..size`; the global coordinate
/// `x + shard * c` goes to `mesh(c) * S + shard_layout(x)`.
pub const fn gathered(mesh: &Layout, shard_layout: &Layout) -> Result<Layout> {
    let n = mesh.rank();
    tri!(check_mesh(mesh, n));
    if shard_layout.rank() != n {
        return Err(LayoutError::RankMismatch {
            expected: n,
            found: shard_layout.rank(),
        });
    }
    let size = shard_layout.size();
    if shard_layout.cosize() != size {
        return Err(LayoutError::NotInjective {
            stride: shard_layout.cosize(),
            extent: size,
        });
    }
    let mut out = Layout::empty();
    let mut k = 0;
    while k < n {
        let gpus = tri!(mesh.get(k));
        let stride = match size.checked_mul(gpus.strides()[0]) {
            Some(v) => v,
            None => return Err(LayoutError::Overflow),
        };
        let over = tri!(Layout::int(gpus.shapes()[0], stride));
        tri!(out.push(&tri!(Layout::concat(&[tri!(shard_layout.get(k)), over]))));
        k += 1;
    }
    Ok(out)
}

/// What brings the shards back to a global tensor ([`rebuild`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rebuild {
    /// One GPU: its shard is the whole.
    Whole,
    /// An all-gather in rank order into the global tensor's own layout.
    AllGather,
    /// An all-gather, then a copy from [`gathered`]'s layout into the global one (the shards'
    /// elements are not contiguous in it: columns of a row-major matrix).
    AllGatherThenCopy,
}

/// What rebuilds `global` (a compact layout) from its shards over `mesh`, each stored as
/// `shard_layout`: [`Rebuild::AllGather`] where [`gathered`] coalesces to `global`'s own
/// coalesced layout, i.e. the gathered buffer already is the global tensor.
pub const fn rebuild(global: &Layout, mesh: &Layout, shard_layout: &Layout) -> Result<Rebuild> {
    let s = tri!(shard_shape(&global.shape(), mesh));
    if !s.equals(&shard_layout.shape()) {
        return Err(LayoutError::ProfileMismatch);
    }
    if mesh.size() == 1 {
        return Ok(Rebuild::Whole);
    }
    let g = tri!(gathered(mesh, shard_layout));
    if tri!(coalesce(&g)).equals(&tri!(coalesce(global))) {
        Ok(Rebuild::AllGather)
    } else {
        Ok(Rebuild::AllGatherThenCopy)
    }
}
