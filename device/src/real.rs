//! The element types kernels compute in: 32- or 16-bit floats (`f32`, `bf16`, `f16`), widened to
//! `f32` for the arithmetic and rounded back to nearest even, the same way on the device and in
//! the host execution (so their results are bit-equal).

/// An element type of the kernel: 32 or 16 bits, widened to f32 for the arithmetic.
pub trait Real: Copy {
    /// Bits per element.
    const BITS: i64;
    /// The value of the element whose bits are the low `BITS` of `b`.
    fn widen(b: u32) -> f32;
    /// The bits of `v` rounded to this type (round to nearest even).
    fn narrow(v: f32) -> u32;
    /// Two 16-bit elements rounded and packed in one word, `lo` in the low half.
    #[inline(always)]
    fn narrow2(lo: f32, hi: f32) -> u32 {
        Self::narrow(lo) | (Self::narrow(hi) << 16)
    }
    /// The element widened to `f32` (exact).
    fn to_f32(self) -> f32;
    /// The element's bits, in the low `BITS` of the word.
    fn to_bits(self) -> u32;
    /// `v` rounded to this type (round to nearest even), as [`Real::narrow`] rounds it.
    fn from_f32(v: f32) -> Self;
}
impl Real for f32 {
    const BITS: i64 = 32;
    #[inline(always)]
    fn to_bits(self) -> u32 {
        f32::to_bits(self)
    }
    #[inline(always)]
    fn to_f32(self) -> f32 {
        self
    }
    #[inline(always)]
    fn from_f32(v: f32) -> Self {
        v
    }
    #[inline(always)]
    fn widen(b: u32) -> f32 {
        f32::from_bits(b)
    }
    #[inline(always)]
    fn narrow(v: f32) -> u32 {
        v.to_bits()
    }
}
impl Real for half::bf16 {
    const BITS: i64 = 16;
    #[inline(always)]
    fn to_bits(self) -> u32 {
        half::bf16::to_bits(self) as u32
    }
    #[inline(always)]
    fn to_f32(self) -> f32 {
        Self::widen(self.to_bits() as u32)
    }
    #[inline(always)]
    fn from_f32(v: f32) -> Self {
        half::bf16::from_bits(Self::narrow(v) as u16)
    }
    #[inline(always)]
    fn widen(b: u32) -> f32 {
        f32::from_bits(b << 16)
    }
    #[inline(always)]
    fn narrow(v: f32) -> u32 {
        #[cfg(target_arch = "nvptx64")]
        {
            // the low half of one `cvt.rn.bf16x2.f32`
            Self::narrow2(v, 0.0) & 0xffff
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            half::bf16::from_f32(v).to_bits() as u32
        }
    }
    /// On the device one `cvt.rn.bf16x2.f32`: the same round-to-nearest-even as `half`'s.
    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    fn narrow2(lo: f32, hi: f32) -> u32 {
        let r: u32;
        // SAFETY: a pure register conversion (sm_80 and newer)
        unsafe {
            core::arch::asm!("cvt.rn.bf16x2.f32 {r}, {hi}, {lo};",
                 r = out(reg32) r, hi = in(reg32) hi, lo = in(reg32) lo,
                 options(pure, nomem, nostack, preserves_flags));
        }
        r
    }
}

impl Real for half::f16 {
    const BITS: i64 = 16;
    #[inline(always)]
    fn to_bits(self) -> u32 {
        half::f16::to_bits(self) as u32
    }
    #[inline(always)]
    fn to_f32(self) -> f32 {
        Self::widen(half::f16::to_bits(self) as u32)
    }
    #[inline(always)]
    fn from_f32(v: f32) -> Self {
        half::f16::from_bits(Self::narrow(v) as u16)
    }
    /// On the device one `cvt.f32.f16` (`half`'s conversion is integer code there); both exact.
    #[inline(always)]
    fn widen(b: u32) -> f32 {
        #[cfg(target_arch = "nvptx64")]
        {
            let r: f32;
            // SAFETY: a pure register conversion
            unsafe {
                core::arch::asm!("{{ .reg .b16 h; cvt.u16.u32 h, {b}; cvt.f32.f16 {r}, h; }}",
                     r = out(reg32) r, b = in(reg32) b,
                     options(pure, nomem, nostack, preserves_flags));
            }
            r
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            half::f16::from_bits(b as u16).to_f32()
        }
    }
    #[inline(always)]
    fn narrow(v: f32) -> u32 {
        #[cfg(target_arch = "nvptx64")]
        {
            // the low half of one `cvt.rn.f16x2.f32`
            Self::narrow2(v, 0.0) & 0xffff
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            half::f16::from_f32(v).to_bits() as u32
        }
    }
    /// On the device one `cvt.rn.f16x2.f32`: the same round-to-nearest-even as `half`'s.
    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    fn narrow2(lo: f32, hi: f32) -> u32 {
        let r: u32;
        // SAFETY: a pure register conversion
        unsafe {
            core::arch::asm!("cvt.rn.f16x2.f32 {r}, {hi}, {lo};",
                 r = out(reg32) r, hi = in(reg32) hi, lo = in(reg32) lo,
                 options(pure, nomem, nostack, preserves_flags));
        }
        r
    }
}
