//! The element types the kernels move: `f32`, `f16`, `bf16`.

use crate::sim::{HostMem, Sim};
use half::{bf16, f16};
use std::marker::PhantomData;
use tessel_gpu::copy::{CopyParams, VecCopy};
use tessel_gpu::ctx::Entry;
use tessel_gpu::ctx::Kernel;
use tessel_gpu::mem::{Device, Gmem};
use tessel_gpu::rmsnorm::{RmsNorm, RmsParams};
use tessel_gpu::transpose::{
    Padded, SmemTile, Swizzled, Transpose, TransposePairs, TransposePairsLed, TransposeParams,
    TransposeQuads, WIDE,
};

/// An element type of the kernels.
pub trait Elem:
    cudarc::driver::DeviceRepr + Copy + Default + PartialEq + std::fmt::Debug + Send + Sync + 'static
{
    /// `f32`, `f16` or `bf16`, as the kernels' names end.
    const NAME: &'static str;
    /// The copy kernel of this type (`tessel_gpu::kernels!` declares one per type).
    type Copy: Entry<Params<Device> = CopyParams<Gmem<Self>>>;
    /// The transpose of this type through the padded shared tile.
    type TransposePad: TransposeKernel<Self>;
    /// The transpose of this type through the swizzled shared tile.
    type TransposeSwizzle: TransposeKernel<Self>;
    /// The led transpose of this type through the padded shared tile (for output rows that are
    /// not whole sectors: `tessel_gpu::transpose::led`).
    type TransposePadLed: TransposeKernel<Self>;
    /// The led transpose of this type through the swizzled shared tile.
    type TransposeSwizzleLed: TransposeKernel<Self>;
    /// The transpose of this type moving pairs of elements.
    type TransposePairs: TransposeKernel<Self>;
    /// The led transpose of this type writing pairs of elements.
    type TransposePairsLed: TransposeKernel<Self>;
    /// The transpose of this type moving quads of elements.
    type TransposeQuads: TransposeKernel<Self>;
    /// Rounds `x` to this type.
    fn from_f64(x: f64) -> Self;
    /// Widens to `f64`.
    fn to_f64(self) -> f64;
    /// The bits, for bit-exact comparisons (NaNs included).
    fn bits(self) -> u32;
    /// The element with these bits (the low 16 for 16-bit types).
    fn from_bits(b: u32) -> Self;
    /// A NaN with a payload no computation produces: what outputs hold before a kernel writes them.
    fn poison() -> Self;
}

impl Elem for f32 {
    const NAME: &'static str = "f32";
    type Copy = VecCopy<f32>;
    type TransposePad = Transpose<f32, Padded<f32>>;
    type TransposeSwizzle = Transpose<f32, Swizzled<f32>>;
    type TransposePadLed = Transpose<f32, Padded<f32>, true>;
    type TransposeSwizzleLed = Transpose<f32, Swizzled<f32>, true>;
    type TransposePairs = TransposePairs<f32>;
    type TransposePairsLed = TransposePairsLed<f32>;
    type TransposeQuads = TransposeQuads<f32>;
    fn from_f64(x: f64) -> Self {
        x as f32
    }
    fn to_f64(self) -> f64 {
        self as f64
    }
    fn bits(self) -> u32 {
        self.to_bits()
    }
    fn from_bits(b: u32) -> Self {
        f32::from_bits(b)
    }
    fn poison() -> Self {
        f32::from_bits(0x7fc0_dead)
    }
}
impl Elem for f16 {
    const NAME: &'static str = "f16";
    type Copy = VecCopy<f16>;
    type TransposePad = Transpose<f16, Padded<f16>>;
    type TransposeSwizzle = Transpose<f16, Swizzled<f16>>;
    type TransposePadLed = Transpose<f16, Padded<f16>, true>;
    type TransposeSwizzleLed = Transpose<f16, Swizzled<f16>, true>;
    type TransposePairs = TransposePairs<f16>;
    type TransposePairsLed = TransposePairsLed<f16>;
    type TransposeQuads = TransposeQuads<f16, WIDE>;
    fn from_f64(x: f64) -> Self {
        f16::from_f64(x)
    }
    fn to_f64(self) -> f64 {
        f16::to_f64(self)
    }
    fn bits(self) -> u32 {
        self.to_bits() as u32
    }
    fn from_bits(b: u32) -> Self {
        f16::from_bits(b as u16)
    }
    fn poison() -> Self {
        f16::from_bits(0x7e5a)
    }
}
impl Elem for bf16 {
    const NAME: &'static str = "bf16";
    type Copy = VecCopy<bf16>;
    type TransposePad = Transpose<bf16, Padded<bf16>>;
    type TransposeSwizzle = Transpose<bf16, Swizzled<bf16>>;
    type TransposePadLed = Transpose<bf16, Padded<bf16>, true>;
    type TransposeSwizzleLed = Transpose<bf16, Swizzled<bf16>, true>;
    type TransposePairs = TransposePairs<bf16>;
    type TransposePairsLed = TransposePairsLed<bf16>;
    type TransposeQuads = TransposeQuads<bf16, WIDE>;
    fn from_f64(x: f64) -> Self {
        bf16::from_f64(x)
    }
    fn to_f64(self) -> f64 {
        bf16::to_f64(self)
    }
    fn bits(self) -> u32 {
        self.to_bits() as u32
    }
    fn from_bits(b: u32) -> Self {
        bf16::from_bits(b as u16)
    }
    fn poison() -> Self {
        bf16::from_bits(0x7fad)
    }
}

/// A transpose kernel of `T`: its parameters are [`TransposeParams`] over device memory (the
/// launch) and over host memory (the host execution).
pub trait TransposeKernel<T>:
    Entry<Params<Device> = TransposeParams<Gmem<T>>> + Kernel<Params<Sim> = TransposeParams<HostMem<T>>>
{
}
impl<T, K> TransposeKernel<T> for K where
    K: Entry<Params<Device> = TransposeParams<Gmem<T>>>
        + Kernel<Params<Sim> = TransposeParams<HostMem<T>>>
{
}

/// A transpose of `T`: its kernels (what `Gpu::transpose` launches and the host execution runs,
/// the same kernels) and the name they carry.
pub trait TransposeTile<T: Elem> {
    /// `pad`, `swizzle`, `pairs` or `quads`: the kernels are `transpose_{TILE}_{T::NAME}` and
    /// `transpose_{TILE}_led_{T::NAME}`.
    const TILE: &'static str;
    /// `T::TransposePad`, `T::TransposeSwizzle`, `T::TransposePairs` or `T::TransposeQuads`.
    type Kernel: TransposeKernel<T>;
    /// The kernel for a `dst` whose rows are not whole sectors (`T::TransposePadLed`,
    /// `T::TransposeSwizzleLed`, `T::TransposePairsLed`; the quads have none: their `Kernel`).
    type Led: TransposeKernel<T>;
    /// Whether the transpose of `rows` rows into a `dst` of this row stride takes
    /// [`TransposeTile::Led`]: where `dst`'s rows are not whole sectors
    /// (`tessel_gpu::transpose::led`) and the led grid, `ceil((rows + LEAD) / 64)` blocks along
    /// y, stays within the device's 65535 (else the other kernel, correct for any strides).
    fn led(dst_row_stride: i64, rows: i64) -> bool {
        let [tr, _] = Transpose::<T, Padded<T>, true>::tiles([
            rows + Transpose::<T, Padded<T>, true>::LEAD,
            1,
        ]);
        tessel_gpu::transpose::led::<T>(dst_row_stride) && tr <= 65535
    }
}
impl<T: Elem> TransposeTile<T> for Padded<T> {
    const TILE: &'static str = <Padded<T> as SmemTile<T>>::NAME;
    type Kernel = T::TransposePad;
    type Led = T::TransposePadLed;
}
impl<T: Elem> TransposeTile<T> for Swizzled<T> {
    const TILE: &'static str = <Swizzled<T> as SmemTile<T>>::NAME;
    type Kernel = T::TransposeSwizzle;
    type Led = T::TransposeSwizzleLed;
}
/// The transpose moving pairs of adjacent elements ([`TransposePairs`]; its shared tile is
/// `tessel_gpu::transpose::PAIR_SMEM`), and its led kernel writing pairs ([`TransposePairsLed`]).
pub struct Paired<T>(PhantomData<T>);
impl<T: Elem> TransposeTile<T> for Paired<T> {
    const TILE: &'static str = "pairs";
    type Kernel = T::TransposePairs;
    type Led = T::TransposePairsLed;
}
/// The transpose moving quads of adjacent elements ([`TransposeQuads`]; its shared tile is
/// `tessel_gpu::transpose::QUAD_SMEM` under `QUAD_SWIZZLE` for f32, and the wide 128x128
/// `WIDE_SMEM` under `WIDE_SWIZZLE` for 16-bit elements, whose rows are then 256 bytes).
pub struct Quads<T>(PhantomData<T>);
impl<T: Elem> TransposeTile<T> for Quads<T> {
    const TILE: &'static str = "quads";
    type Kernel = T::TransposeQuads;
    type Led = T::TransposeQuads;
    fn led(_: i64, _: i64) -> bool {
        false
    }
}

/// What launches a kernel on a device: the runtime's `Gpu` (`crate::runtime::gpu`). Named here so
/// that an element type can say which of its kernels a launch takes ([`RmsElem`]) without the
/// element types depending on the runtime.
pub trait Launcher {
    /// What a failed launch returns.
    type Error;
    /// Launches `K` with `p`, its shape from `K::geometry`.
    fn launch<K: Entry>(&self, p: K::Params<Device>) -> Result<(), Self::Error>;
    /// The error of a launch refused for `why`.
    fn invalid(why: String) -> Self::Error;
}

/// An element type with RMSNorm kernels: `f32`, `bf16`.
pub trait RmsElem: Elem + tessel_gpu::real::Real {
    /// Launches its RMSNorm kernel with `warps` warps per row (`tessel_gpu::kernels!` declares
    /// one per type and count of [`tessel_gpu::rmsnorm::WARPS`]); `Err` for another count.
    fn launch_rmsnorm<L: Launcher>(
        g: &L,
        p: RmsParams<Gmem<Self>>,
        warps: i64,
    ) -> Result<(), L::Error>;
    /// `RmsNorm::<Self, warps>::staged_for(cols, smem)`: the tiles of a row staged with `smem`
    /// bytes of shared memory per block (0 for a `warps` with no kernel).
    fn staged_for(warps: i64, cols: i64, smem: i64) -> i64;
}

/// `RmsElem` for a type: a launch of `RmsNorm<T, W>` for each `W` of `WARPS`.
macro_rules! rms_elem {
    ($t:ty) => {
        impl RmsElem for $t {
            fn launch_rmsnorm<L: Launcher>(
                g: &L,
                p: RmsParams<Gmem<Self>>,
                warps: i64,
            ) -> Result<(), L::Error> {
                match warps {
                    1 => g.launch::<RmsNorm<$t, 1>>(p),
                    2 => g.launch::<RmsNorm<$t, 2>>(p),
                    4 => g.launch::<RmsNorm<$t, 4>>(p),
                    8 => g.launch::<RmsNorm<$t, 8>>(p),
                    16 => g.launch::<RmsNorm<$t, 16>>(p),
                    w => Err(L::invalid(format!(
                        "rmsnorm has kernels for {:?} warps per row, not {w}",
                        tessel_gpu::rmsnorm::WARPS
                    ))),
                }
            }
            fn staged_for(warps: i64, cols: i64, smem: i64) -> i64 {
                match warps {
                    1 => RmsNorm::<$t, 1>::staged_for(cols, smem),
                    2 => RmsNorm::<$t, 2>::staged_for(cols, smem),
                    4 => RmsNorm::<$t, 4>::staged_for(cols, smem),
                    8 => RmsNorm::<$t, 8>::staged_for(cols, smem),
                    16 => RmsNorm::<$t, 16>::staged_for(cols, smem),
                    _ => 0,
                }
            }
        }
    };
}
rms_elem!(f32);
rms_elem!(bf16);
const _: () = assert!(
    matches!(tessel_gpu::rmsnorm::WARPS, [1, 2, 4, 8, 16]),
    "launch_rmsnorm covers WARPS"
);

/// How many elements of `a` have the bits of `b`'s at the same place.
pub fn same_bits<T: Elem>(a: &[T], b: &[T]) -> usize {
    a.iter()
        .zip(b)
        .filter(|(x, y)| x.bits() == y.bits())
        .count()
}

/// A small, fast generator (SplitMix64) for test inputs: seeded, so a failure can be replayed.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator with this seed.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }
    /// A seed from the clock and the process id: fresh inputs on every run.
    pub fn fresh_seed() -> u64 {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        t ^ ((std::process::id() as u64) << 32)
    }
    /// The seed of a randomized test: `TESSEL_SEED` when it is set, else a fresh one. Prints
    /// `<test>: seed N (replay: TESSEL_SEED=N cargo test --release <target>)` on stderr, which the
    /// test harness shows when the test fails; `target` is what selects the test, e.g. `--test gpu`.
    ///
    /// # Panics
    /// When `TESSEL_SEED` is set but is not a `u64` (a test's way of refusing its input).
    pub fn from_env_or_fresh(test: &str, target: &str) -> Rng {
        let seed = match std::env::var("TESSEL_SEED") {
            Err(std::env::VarError::NotPresent) => Rng::fresh_seed(),
            Ok(v) => Rng::parse_seed(&v).unwrap_or_else(|e| panic!("{e}")),
            Err(e) => panic!("TESSEL_SEED: {e}"),
        };
        eprintln!("{test}: seed {seed} (replay: TESSEL_SEED={seed} cargo test --release {target})");
        Rng::new(seed)
    }
    /// `v` as a seed (decimal `u64`, surrounding spaces allowed); `Err` says why it is not one.
    pub fn parse_seed(v: &str) -> Result<u64, String> {
        v.trim()
            .parse()
            .map_err(|e| format!("TESSEL_SEED='{v}' is not a seed (a u64): {e}"))
    }
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in `[-1, 1)`.
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 52) as f64 - 1.0
    }
    /// `n` random elements in `[-1, 1)`, never all zero.
    pub fn fill<T: Elem>(&mut self, n: usize) -> Vec<T> {
        (0..n).map(|_| T::from_f64(self.uniform())).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::Rng;

    #[test]
    fn seeds_are_u64s() {
        assert_eq!(
            Rng::parse_seed("1795281171740223193"),
            Ok(1795281171740223193)
        );
        assert_eq!(Rng::parse_seed(" 7\n"), Ok(7));
        assert_eq!(Rng::parse_seed("18446744073709551615"), Ok(u64::MAX));
        for bad in ["", "-1", "0x10", "seed", "18446744073709551616"] {
            let e = Rng::parse_seed(bad).unwrap_err();
            assert!(e.contains("is not a seed"), "{bad:?}: {e}");
        }
    }

    #[test]
    fn a_seed_replays_its_values() {
        let (mut a, mut b) = (Rng::new(21), Rng::new(21));
        assert!((0..100).all(|_| a.next_u64() == b.next_u64()));
        assert_ne!(Rng::new(21).next_u64(), Rng::new(22).next_u64());
    }
}
