//! The element types the kernels move: `f32`, `f16`, `bf16`.

use half::{bf16, f16};

/// An element type of the kernels.
pub trait Elem:
    cudarc::driver::DeviceRepr + Copy + Default + PartialEq + std::fmt::Debug + Send + Sync + 'static
{
    /// `f32`, `f16` or `bf16`, as the kernels' names end.
    const NAME: &'static str;
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
