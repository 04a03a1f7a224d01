//! `Tensor = engine o layout`: a layout gives each coordinate an offset, the engine turns the
//! offset into a value — an element behind a raw pointer ([`Ptr`], global or shared memory), an
//! element of a register array ([`Array`], `make_fragment_like`), or the offset itself
//! ([`Counting`]: integers, or ArithTuple coordinates for identity tensors).
//!
//! Slicing and partitioning change the layout and move the engine's origin by the offset they
//! return; the engine never sees coordinates. A tensor prints as CuTe's do, `ENGINE o LAYOUT`,
//! e.g. `(12,0) o ((2,4),1,4):((1@1,2@1),0,256@1)`.

use crate::arith::{make_identity_layout, Codomain};
use crate::error::{LayoutError, Result};
use crate::int_tuple::{write_tokens_by, IntTuple};
use crate::layout::Layout;
use crate::partition;
use crate::tiler::Tiler;
use core::fmt;

/// What a tensor's offsets index.
pub trait Engine: Copy {
    /// The engine whose offset 0 is this one's offset `off`.
    fn advance(self, off: i64) -> Self;
    /// [`Engine::advance`] for a tensor of layout `l`: `Err(Overflow)` where the origin, or a
    /// value the tensor can take, would leave `i64` (what [`Tensor`]'s operations use).
    fn advance_checked(self, off: i64, l: &Layout) -> Result<Self> {
        let _ = l;
        Ok(self.advance(off))
    }
    /// Writes the origin (what `ENGINE` prints).
    fn fmt_origin(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result;
    /// Writes one stride of the tensor's layout.
    fn fmt_stride(&self, f: &mut fmt::Formatter<'_>, d: i64) -> fmt::Result {
        write!(f, "{d}")
    }
}

/// Counting: the value at offset `o` is `start + o` — an integer, or an ArithTuple of `codomain`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Counting {
    /// The value at offset 0 (an encoded ArithTuple when `codomain` is set).
    pub start: i64,
    /// The ArithTuple codomain, or `None` for integers.
    pub codomain: Option<Codomain>,
}

impl Engine for Counting {
    fn advance(self, off: i64) -> Self {
        Self {
            start: self.start + off,
            ..self
        }
    }
    /// Keeps every value `start + l(x)` in `i64`, so that [`Tensor::value`] cannot overflow.
    fn advance_checked(self, off: i64, l: &Layout) -> Result<Self> {
        let start = self.start.checked_add(off).ok_or(LayoutError::Overflow)?;
        // the smallest and largest l(x): the negative and the positive (s - 1) * d summed (each
        // sum fits: |sum| <= sum (s - 1) |d|, which a layout keeps in i64)
        let (mut lo, mut hi) = (0i64, 0i64);
        for (s, d) in l.shapes().iter().zip(l.strides()) {
            let e = (s - 1).checked_mul(*d).ok_or(LayoutError::Overflow)?;
            let side = if e < 0 { &mut lo } else { &mut hi };
            *side = side.checked_add(e).ok_or(LayoutError::Overflow)?;
        }
        match (start.checked_add(lo), start.checked_add(hi)) {
            (Some(_), Some(_)) => Ok(Self { start, ..self }),
            _ => Err(LayoutError::Overflow),
        }
    }
    fn fmt_origin(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.codomain {
            Some(c) => c.fmt_value(f, self.start),
            None => write!(f, "{}", self.start),
        }
    }
    fn fmt_stride(&self, f: &mut fmt::Formatter<'_>, d: i64) -> fmt::Result {
        match &self.codomain {
            Some(c) => c.fmt_stride(f, d),
            None => write!(f, "{d}"),
        }
    }
}

/// A raw pointer to elements of `T` (global or shared memory).
#[derive(Debug)]
#[repr(transparent)]
pub struct Ptr<T>(pub *mut T);

impl<T> Clone for Ptr<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Ptr<T> {}

impl<T> Engine for Ptr<T> {
    fn advance(self, off: i64) -> Self {
        Ptr(self.0.wrapping_offset(off as isize))
    }
    fn fmt_origin(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ptr[{}b]({:p})", 8 * core::mem::size_of::<T>(), self.0)
    }
}

/// `N` elements of `T` held by value (registers, in a kernel), and the offset of the origin.
#[derive(Clone, Copy, Debug)]
pub struct Array<T, const N: usize> {
    /// The elements.
    pub data: [T; N],
    /// Offset of the tensor's origin in `data`.
    pub base: i64,
}

impl<T: Copy, const N: usize> Engine for Array<T, N> {
    fn advance(self, off: i64) -> Self {
        Self {
            base: self.base + off,
            ..self
        }
    }
    fn advance_checked(self, off: i64, _: &Layout) -> Result<Self> {
        match self.base.checked_add(off) {
            Some(base) => Ok(Self { base, ..self }),
            None => Err(LayoutError::Overflow),
        }
    }
    fn fmt_origin(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "array[{N}]+{}", self.base)
    }
}

/// An engine and a layout.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tensor<E> {
    engine: E,
    layout: Layout,
}

/// `make_tensor(counting from 0, L)`: the integer counting tensor of a layout, `0 o L`.
pub const fn counting(l: Layout) -> Tensor<Counting> {
    Tensor {
        engine: Counting {
            start: 0,
            codomain: None,
        },
        layout: l,
    }
}

/// `make_identity_tensor(shape)`: `(0,..) o shape:(1@0,1@1,..)`, whose value at each coordinate
/// is the coordinate itself (an ArithTuple).
///
/// # Example
/// Seed 002's identity tensor of the 14x1024 tensor: its value at `(2,15)` is `(2,15)`, and
/// block 3's `(4,1024)` tile starts at `(12,0)`:
/// ```
/// use layout_core::*;
/// let t = |s: &str| IntTuple::parse(s).unwrap();
/// let id = make_identity_tensor(&t("(14,1024)")).unwrap();
/// assert_eq!(id.to_string(), "(0,0) o (14,1024):(1@0,1@1)");
/// let cod = id.engine().codomain.unwrap();
/// assert_eq!(cod.decode(id.value_at(&t("(2,15)")).unwrap())[..2], [2, 15]);
/// let tile = id.local_tile(&t("(4,1024)"), &t("(3,0)")).unwrap();
/// assert_eq!(tile.to_string(), "(12,0) o (4,1024):(1@0,1@1)");
/// ```
pub const fn make_identity_tensor(shape: &IntTuple) -> Result<Tensor<Counting>> {
    match make_identity_layout(shape) {
        Ok((layout, c)) => Ok(Tensor {
            engine: Counting {
                start: 0,
                codomain: Some(c),
            },
            layout,
        }),
        Err(e) => Err(e),
    }
}

/// `make_fragment_like(L)`: a register tensor with `L`'s shape and a compact column-major layout
/// (`N >= size(L)`), filled with `fill`.
pub fn make_fragment_like<T: Copy, const N: usize>(
    l: &Layout,
    fill: T,
) -> Result<Tensor<Array<T, N>>> {
    let layout = Layout::col_major(l.shape())?;
    if layout.size() > N as i64 {
        return Err(LayoutError::Capacity);
    }
    Ok(Tensor {
        engine: Array {
            data: [fill; N],
            base: 0,
        },
        layout,
    })
}

impl<E: Engine> Tensor<E> {
    /// `engine o layout`.
    pub const fn new(engine: E, layout: Layout) -> Self {
        Self { engine, layout }
    }
    /// The layout.
    pub const fn layout(&self) -> &Layout {
        &self.layout
    }
    /// The engine.
    pub const fn engine(&self) -> &E {
        &self.engine
    }
    /// The offset of 1-D coordinate `i`: `layout(i)`.
    #[inline(always)]
    pub const fn offset(&self, i: i64) -> i64 {
        self.layout.call(i)
    }
    /// The offset of a natural (or hierarchical, or 1-D) coordinate `c`: `layout(c)`.
    pub const fn offset_of(&self, c: &IntTuple) -> Result<i64> {
        self.layout.crd2idx(c)
    }
    /// The tensor of `layout` whose origin is this one's offset `off`; `Err(Overflow)` where the
    /// origin or a value would leave `i64` (see [`Engine::advance_checked`]).
    fn moved(&self, (layout, off): (Layout, i64)) -> Result<Self> {
        Ok(Self {
            engine: self.engine.advance_checked(off, &layout)?,
            layout,
        })
    }
    /// `tensor(c)` with `_` in `c`: the sub-tensor of the `_` modes at the fixed coordinates.
    pub fn slice(&self, c: &IntTuple) -> Result<Self> {
        self.moved(self.layout.slice(c)?)
    }
    /// `local_tile(tensor, tile_shape, c)` (see [`partition::local_tile`]).
    pub fn local_tile(&self, tile: &IntTuple, c: &IntTuple) -> Result<Self> {
        self.moved(partition::local_tile(&self.layout, tile, c)?)
    }
    /// `local_tile(tensor, tile_shape, c, proj)`.
    pub fn local_tile_proj(&self, tile: &IntTuple, c: &IntTuple, proj: &IntTuple) -> Result<Self> {
        self.moved(partition::local_tile_proj(&self.layout, tile, c, proj)?)
    }
    /// `local_partition(tensor, thr, i)`.
    pub fn local_partition(&self, thr: &Layout, i: i64) -> Result<Self> {
        self.moved(partition::local_partition(&self.layout, thr, i)?)
    }
    /// `local_partition(tensor, thr, i, proj)`.
    pub fn local_partition_proj(&self, thr: &Layout, i: i64, proj: &IntTuple) -> Result<Self> {
        self.moved(partition::local_partition_proj(&self.layout, thr, i, proj)?)
    }
    /// `inner_partition(tensor, tiler, c)`.
    pub fn inner_partition(&self, t: &Tiler, c: &IntTuple) -> Result<Self> {
        self.moved(partition::inner_partition(&self.layout, t, c)?)
    }
    /// `outer_partition(tensor, tiler, c)`.
    pub fn outer_partition(&self, t: &Tiler, c: &IntTuple) -> Result<Self> {
        self.moved(partition::outer_partition(&self.layout, t, c)?)
    }
    /// The tensor with layout `l` over the same engine, its origin moved by `off` (e.g. a tiled
    /// copy's partition of it). Unchecked: the moved origin must fit in `i64` (an overflow
    /// panics where overflow is checked); [`Tensor::try_with_layout`] checks it, and the values.
    pub fn with_layout(&self, (l, off): (Layout, i64)) -> Self {
        Self {
            engine: self.engine.advance(off),
            layout: l,
        }
    }
    /// [`Tensor::with_layout`], with `Err(Overflow)` where the origin, or a value of the
    /// tensor, would leave `i64`.
    pub fn try_with_layout(&self, part: (Layout, i64)) -> Result<Self> {
        self.moved(part)
    }
}

impl Tensor<Counting> {
    /// The value at 1-D coordinate `i`: `start + layout(i)` (an encoded ArithTuple for identity
    /// tensors; see [`Codomain::decode`]). Unchecked, for `0 <= i < size`: the values of tensors
    /// made by [`counting`], [`make_identity_tensor`] and the operations above fit in `i64`.
    #[inline(always)]
    pub const fn value(&self, i: i64) -> i64 {
        self.engine.start + self.layout.call(i)
    }
    /// The value at coordinate `c` (natural, hierarchical or 1-D): `tensor(c)`.
    pub const fn value_at(&self, c: &IntTuple) -> Result<i64> {
        // (a coordinate outside the shape can reach past the values the tensor takes)
        match self.layout.crd2idx(c) {
            Ok(o) => match self.engine.start.checked_add(o) {
                Some(v) => Ok(v),
                None => Err(LayoutError::Overflow),
            },
            Err(e) => Err(e),
        }
    }
    /// Is the value at `i` inside `bound` leaf by leaf (`elem_less`)? For integer tensors, the
    /// value is compared with `bound[0]`.
    #[inline(always)]
    pub const fn elem_less(&self, i: i64, bound: &[i64]) -> bool {
        match &self.engine.codomain {
            Some(c) => c.elem_less(self.value(i), bound),
            None => self.value(i) < bound[0],
        }
    }
}

impl<T: Copy> Tensor<Ptr<T>> {
    /// `*ptr.add(layout(i))`.
    ///
    /// # Safety
    /// The element must be valid to read.
    #[inline(always)]
    pub unsafe fn read(&self, i: i64) -> T {
        *self.engine.0.offset(self.layout.call(i) as isize)
    }
    /// `tensor(c)` for a natural (or hierarchical) coordinate `c`.
    ///
    /// # Safety
    /// The element must be valid to read.
    pub unsafe fn read_at(&self, c: &IntTuple) -> Result<T> {
        Ok(*self.engine.0.offset(self.layout.crd2idx(c)? as isize))
    }
    /// `*ptr.add(layout(i)) = v`.
    ///
    /// # Safety
    /// The element must be valid to write.
    #[inline(always)]
    pub unsafe fn write(&self, i: i64, v: T) {
        *self.engine.0.offset(self.layout.call(i) as isize) = v
    }
}

impl<T: Copy, const N: usize> Tensor<Array<T, N>> {
    /// The element at 1-D coordinate `i`; `None` outside the array.
    #[inline(always)]
    pub fn get(&self, i: i64) -> Option<T> {
        let o = self.engine.base.checked_add(self.layout.call(i))?;
        if (0..N as i64).contains(&o) {
            Some(self.engine.data[o as usize])
        } else {
            None
        }
    }
    /// Sets the element at 1-D coordinate `i`; `Err(Capacity)` outside the array.
    #[inline(always)]
    pub fn set(&mut self, i: i64, v: T) -> Result<()> {
        let o = self.engine.base.checked_add(self.layout.call(i));
        if let Some(o) = o.filter(|o| (0..N as i64).contains(o)) {
            self.engine.data[o as usize] = v;
            Ok(())
        } else {
            Err(LayoutError::Capacity)
        }
    }
}

impl<E: Engine> fmt::Display for Tensor<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.engine.fmt_origin(f)?;
        f.write_str(" o ")?;
        let shape = self.layout.shape();
        write!(f, "{shape}:")?;
        let d = self.layout.strides();
        write_tokens_by(f, shape.tokens(), |f, k, _| self.engine.fmt_stride(f, d[k]))
    }
}
