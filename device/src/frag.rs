//! Register fragments: a thread's values of a tile, held in registers (CuTe's
//! `make_fragment_like` of a partition). A [`Fragment<T, N>`] is `N` 128-bit atoms of element type
//! `T`, [`Fragment::LEN`] elements; it is loaded from and stored to a thread's partition
//! ([`ThrTensor`]) whole atom by whole atom (one 128-bit access each) or element by element under
//! the identity tensor's predicate, and its elements are computed on in `f32`: read widened
//! ([`Fragment::get`]), written rounded to nearest even ([`Fragment::from_fn`], pairs of 16-bit
//! elements by one conversion). [`Fragment::recast`] reinterprets the bits as another element type
//! and [`Fragment::convert`] converts every element.
//!
//! Every loop here is [`unroll!`]ed (`N <= 16`), so every element's index is a constant and the
//! fragment lives in registers.

use crate::mem::{Mem, V4};
use crate::real::Real;
use crate::unroll;
use core::marker::PhantomData;
use layout_core::{ThrCoordTensor, ThrTensor};

/// `N` 128-bit atoms of `T` in registers: `LEN = N * 128 / T::BITS` elements, element `i` in atom
/// `i / PER_ATOM` (`N <= 16`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fragment<T, const N: usize> {
    atoms: [V4; N],
    elem: PhantomData<T>,
}

/// One 128-bit atom of `T` (4 `f32`, 8 `bf16` or `f16`): a thread's values of a tile in the
/// row-wise kernels.
pub type Atom<T> = Fragment<T, 1>;

impl<T: Real, const N: usize> Fragment<T, N> {
    /// Elements per 128-bit atom.
    pub const PER_ATOM: usize = 128 / T::BITS as usize;
    /// Elements of the fragment.
    pub const LEN: usize = N * Self::PER_ATOM;
    const PER_WORD: usize = 32 / T::BITS as usize;

    /// The fragment whose atoms are these 128-bit words.
    #[inline(always)]
    pub const fn from_atoms(atoms: [V4; N]) -> Self {
        Self {
            atoms,
            elem: PhantomData,
        }
    }

    /// Its 128-bit words (CuTe's `recast<uint128_t>`).
    #[inline(always)]
    pub const fn atoms(&self) -> [V4; N] {
        self.atoms
    }

    /// The same bits as elements of `U` (CuTe's `recast<U>`): `Fragment::<U, N>::LEN` elements.
    #[inline(always)]
    pub const fn recast<U: Real>(self) -> Fragment<U, N> {
        Fragment::from_atoms(self.atoms)
    }

    /// Element `i` widened to `f32` (exact). `i < LEN`.
    #[inline(always)]
    pub fn get(&self, i: usize) -> f32 {
        let word = self.atoms[i / Self::PER_ATOM].0[i % Self::PER_ATOM / Self::PER_WORD];
        T::widen(if Self::PER_WORD == 1 {
            word
        } else {
            (word >> (T::BITS as usize * (i % Self::PER_WORD))) & 0xffff
        })
    }

    /// The fragment of elements `f(0), f(1), ..`, each rounded to `T` (to nearest even; two 16-bit
    /// elements per conversion on the device).
    #[inline(always)]
    pub fn from_fn(mut f: impl FnMut(usize) -> f32) -> Self {
        let mut atoms = [V4([0; 4]); N];
        unroll!(a < N => {
            unroll!(w < 4 => {
                let i = a * Self::PER_ATOM + w * Self::PER_WORD;
                atoms[a].0[w] = if Self::PER_WORD == 1 {
                    T::narrow(f(i))
                } else {
                    let lo = f(i);
                    T::narrow2(lo, f(i + 1))
                };
            });
        });
        Self::from_atoms(atoms)
    }

    /// Every element `v` rounded to `T`.
    #[inline(always)]
    pub fn splat(v: f32) -> Self {
        Self::from_fn(|_| v)
    }

    /// `f` of each element, rounded to `T`.
    #[inline(always)]
    pub fn map(&self, f: impl Fn(f32) -> f32) -> Self {
        Self::from_fn(|i| f(self.get(i)))
    }

    /// Every element converted to `U` (`f32` to `bf16`/`f16` rounds to nearest even; the other
    /// way is exact): `M` atoms holding the same `LEN` elements, which the compiler checks.
    #[inline(always)]
    pub fn convert<U: Real, const M: usize>(&self) -> Fragment<U, M> {
        const {
            assert!(
                Fragment::<U, M>::LEN == Self::LEN,
                "convert keeps the element count"
            )
        };
        Fragment::from_fn(|i| self.get(i))
    }

    /// `f(e_0) op f(e_1) op ..` over the elements, as a balanced tree within each atom (`((e_0 op
    /// e_1) op (e_2 op e_3)) op ..`: independent operations, not one chain), then the atoms'
    /// results in order.
    #[inline(always)]
    pub fn reduce(&self, f: impl Fn(f32) -> f32, op: impl Fn(f32, f32) -> f32) -> f32 {
        let mut acc = 0.0;
        unroll!(a < N => {
            let mut v = [0.0f32; 16]; // PER_ATOM <= 8 (16 for the unrolling to index)
            unroll!(j < Self::PER_ATOM => {
                v[j] = f(self.get(a * Self::PER_ATOM + j));
            });
            unroll!(level < 3 => {
                let step = 1 << level;
                unroll!(j < 4 => {
                    let j = 2 * step * j;
                    if j + step < Self::PER_ATOM {
                        v[j] = op(v[j], v[j + step]);
                    }
                });
            });
            acc = if a == 0 { v[0] } else { op(acc, v[0]) };
        });
        acc
    }

    /// The thread's values `0..LEN` of `part`, one 128-bit access per atom (atom `a` from value
    /// `a PER_ATOM`).
    ///
    /// # Safety
    /// Each atom's values consecutive in memory, inside the tensor and 16-byte aligned.
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    #[inline(always)]
    pub unsafe fn load<E: Mem<T>, const R: usize>(part: &ThrTensor<'_, E, R>) -> Self {
        let mut atoms = [V4([0; 4]); N];
        unroll!(a < N => {
            atoms[a] = part.at((a * Self::PER_ATOM) as i64).read_v4();
        });
        Self::from_atoms(atoms)
    }

    /// Writes the fragment to the thread's values of `part`, one 128-bit access per atom.
    ///
    /// # Safety
    /// As [`Fragment::load`].
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    #[inline(always)]
    pub unsafe fn store<E: Mem<T>, const R: usize>(&self, part: &ThrTensor<'_, E, R>) {
        unroll!(a < N => {
            part.at((a * Self::PER_ATOM) as i64).write_v4(self.atoms[a]);
        });
    }

    /// The thread's values of `part` element by element (any alignment), those whose predicate
    /// `pred.elem_less(i)` is false (outside the tensor) set to `fill`.
    ///
    /// # Safety
    /// The elements whose predicate holds must be inside the tensor.
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    #[inline(always)]
    pub unsafe fn load_if<E: Mem<T>, const R: usize>(
        part: &ThrTensor<'_, E, R>,
        pred: &ThrCoordTensor<'_, R>,
        fill: f32,
    ) -> Self {
        let mut atoms = [V4([0; 4]); N];
        unroll!(a < N => {
            let mut v = [fill; 16]; // PER_ATOM <= 8 (16 for the unrolling to index)
            unroll!(j < Self::PER_ATOM => {
                let i = (a * Self::PER_ATOM + j) as i64;
                if pred.elem_less(i) {
                    v[j] = part.at(i).read().to_f32();
                }
            });
            atoms[a] = Atom::<T>::from_fn(|j| v[j]).atoms[0];
        });
        Self::from_atoms(atoms)
    }

    /// Writes the elements whose predicate holds, one by one (any alignment).
    ///
    /// # Safety
    /// As [`Fragment::load_if`].
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    #[inline(always)]
    pub unsafe fn store_if<E: Mem<T>, const R: usize>(
        &self,
        part: &ThrTensor<'_, E, R>,
        pred: &ThrCoordTensor<'_, R>,
    ) {
        unroll!(a < N => {
            unroll!(j < Self::PER_ATOM => {
                let i = a * Self::PER_ATOM + j;
                if pred.elem_less(i as i64) {
                    part.at(i as i64).write(T::from_f32(self.get(i)));
                }
            });
        });
    }
}

impl<T: Real, const N: usize> Default for Fragment<T, N> {
    /// All bits zero (`+0.0` in every element).
    fn default() -> Self {
        Self::from_atoms([V4([0; 4]); N])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use half::bf16;

    #[test]
    fn elements_round_trip_and_pack_in_order() {
        let f = Atom::<bf16>::from_fn(|i| i as f32 + 0.5);
        assert_eq!(Atom::<bf16>::LEN, 8);
        for i in 0..8 {
            assert_eq!(f.get(i), i as f32 + 0.5);
        }
        // element 0 in the low half of word 0, element 1 in its high half
        assert_eq!(f.atoms()[0].0[0], 0x3fc0_3f00);
        let g: Fragment<f32, 2> = f.convert();
        assert_eq!((0..8).map(|i| g.get(i)).sum::<f32>(), 32.0);
        assert_eq!(g.convert::<bf16, 1>(), f);
        assert_eq!(f.recast::<f32>().get(0), f32::from_bits(0x3fc0_3f00));
    }

    #[test]
    fn reduce_is_a_tree_per_atom() {
        // 1e8 + 1 - 1e8 + 1 in a chain is 1, as a tree (1e8 + 1) + (-1e8 + 1) is 0 in f32
        let f = Atom::<f32>::from_fn(|i| [1e8, 1.0, -1e8, 1.0][i]);
        assert_eq!(f.reduce(|x| x, |a, b| a + b), 0.0);
        let g = Fragment::<f32, 2>::from_fn(|i| i as f32);
        assert_eq!(g.reduce(|x| x, f32::max), 7.0);
        assert_eq!(g.reduce(|x| x * x, |a, b| a + b), 140.0);
    }
}
