//! Elementary functions that round the same on the device and in the host execution: each is a
//! fixed sequence of IEEE operations (`fma.rn.f32` on the device, `f32::mul_add` on the host, and
//! correctly rounded adds and multiplies), so a kernel using them gives bit-equal results in both
//! places. (The device's `ex2.approx` is faster but its rounding is not specified, so no host
//! execution could reproduce it.)

/// `a * b + c` rounded once (`fma.rn.f32`).
#[inline(always)]
pub fn fma(a: f32, b: f32, c: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let r: f32;
        // SAFETY: a pure register operation
        unsafe {
            core::arch::asm!("fma.rn.f32 {r}, {a}, {b}, {c};",
                 r = out(reg32) r, a = in(reg32) a, b = in(reg32) b, c = in(reg32) c,
                 options(pure, nomem, nostack, preserves_flags));
        }
        r
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        a.mul_add(b, c)
    }
}

/// `log2(e)`, rounded to `f32`.
pub const LOG2_E: f32 = core::f32::consts::LOG2_E;

/// `2^x`, within 2 ulp of the exact value for every `x` whose result is normal; `0` below
/// `-150`, `+inf` from `128` on, NaN for NaN; subnormal results are within 2 ulp of the smallest
/// subnormal. `2^n` for integer `n` in `-126..=127` is exact.
///
/// `x = n + f` with `n` the nearest integer and `|f| <= 1/2`; `2^f` is the degree-7 Taylor
/// polynomial of `e^(f ln 2)` (its truncation error is below `5.2e-9`, a tenth of an ulp), in
/// Horner form with fused multiply-adds; `2^n` is built from its exponent bits.
#[inline(always)]
pub fn exp2(x: f32) -> f32 {
    if x.is_nan() {
        return x;
    }
    let x = x.clamp(-152.0, 128.0);
    // the nearest integer: adding 1.5 * 2^23 leaves no fraction bits (|x| <= 152)
    const ROUND: f32 = 12_582_912.0;
    let n = (x + ROUND) - ROUND;
    let f = x - n;
    // ln(2)^k / k!, k = 7 down to 0
    const C: [f32; 8] = [
        1.525_273_4e-5,
        1.540_353e-4,
        1.333_355_8e-3,
        9.618_129e-3,
        5.550_411e-2,
        2.402_265e-1,
        6.931_472e-1,
        1.0,
    ];
    let mut p = C[0];
    let mut k = 1;
    while k < C.len() {
        p = fma(p, f, C[k]);
        k += 1;
    }
    let n = n as i32;
    // 2^n in two factors when it is not normal: 2^(n + 64) * 2^-64 below, 2^127 * 2 at 128 (x
    // in 127.5..128 is finite; 128 itself overflows to inf)
    let (n, tail) = if n < -126 {
        (n + 64, f32::from_bits((127 - 64) << 23))
    } else if n > 127 {
        (127, 2.0)
    } else {
        (n, 1.0)
    };
    p * f32::from_bits(((n + 127) as u32) << 23) * tail
}

/// `e^x` as [`exp2`]`(x * log2(e))`: the rounding of `log2(e)` and of the product add up to
/// `2 |x| 2^-24` to [`exp2`]'s relative error (`2.4e-6` at `|x| = 20`).
#[inline(always)]
pub fn exp(x: f32) -> f32 {
    exp2(x * LOG2_E)
}

/// `ln(2)` in two parts for [`log`]: `LN2_HI + LN2_LO` is `ln 2` to about 2^-48.
const LN2_HI: f32 = 0.693_145_75;
/// See [`LN2_HI`].
const LN2_LO: f32 = 1.428_606_8e-6;

/// `|x|` with the sign of `s` (`copysign`), by bits.
#[inline(always)]
fn with_sign_of(x: f32, s: f32) -> f32 {
    f32::from_bits((x.to_bits() & 0x7fff_ffff) | (s.to_bits() & 0x8000_0000))
}

/// `ln(x)`, within 2 ulp of the exact value for every positive `x` (subnormals included; 1.85
/// measured, near 1);
/// `-inf` at `0`, NaN below `0` and for NaN, `+inf` at `+inf`; `ln(1) = 0` exactly.
///
/// `x = 2^e m` with `m` in `[sqrt(1/2), sqrt(2))`; `ln(m) = 2 atanh(s)` with `s = (m - 1) / (m +
/// 1)` (`|s| < 0.172`), the odd series `2s (1 + s^2/3 + .. + s^10/11)` (its truncation error
/// below `2^-27` relative); then `e ln 2 + ln(m)` by two fused multiply-adds with `ln 2` in two
/// parts.
#[inline(always)]
pub fn log(x: f32) -> f32 {
    if x.is_nan() || x <= 0.0 || x == f32::INFINITY {
        return if x == 0.0 {
            f32::NEG_INFINITY
        } else if x == f32::INFINITY {
            x
        } else {
            f32::NAN
        };
    }
    // subnormals: scaled by 2^24 first
    let (x, e0) = if x < f32::MIN_POSITIVE {
        (x * 16_777_216.0, -24)
    } else {
        (x, 0)
    };
    let bits = x.to_bits();
    let mut e = ((bits >> 23) as i32) - 127 + e0;
    let mut m = f32::from_bits((bits & 0x007f_ffff) | 0x3f80_0000);
    if m > core::f32::consts::SQRT_2 {
        m *= 0.5;
        e += 1;
    }
    let s = (m - 1.0) / (m + 1.0);
    let z = s * s;
    // 1/3, 1/5, .., 1/11, highest first
    const C: [f32; 5] = [0.090_909_09, 0.111_111_11, 0.142_857_15, 0.2, 0.333_333_34];
    let mut p = C[0];
    let mut k = 1;
    while k < C.len() {
        p = fma(p, z, C[k]);
        k += 1;
    }
    let t = s + s;
    let ln_m = fma(t, z * p, t);
    let e = e as f32;
    fma(e, LN2_HI, fma(e, LN2_LO, ln_m))
}

/// `tanh(x)`, within 2 ulp of the exact value (1.6 measured, at 0.5625); odd, `+-1` from `|x| >= 9.1` on, NaN for NaN.
///
/// Below `|x| = 0.55` the Taylor polynomial of degree 19 (odd, truncation error below `2^-26`
/// relative) in Horner form; above, `1 - 2 / (e^(2|x|) + 1)` with [`exp`].
#[inline(always)]
pub fn tanh(x: f32) -> f32 {
    let a = f32::from_bits(x.to_bits() & 0x7fff_ffff);
    if x.is_nan() {
        return x;
    }
    let r = if a >= 9.1 {
        1.0
    } else if a < 0.55 {
        // tanh's Taylor coefficients of x^3, x^5, .., x^19, highest first
        const C: [f32; 9] = [
            -2.391_291e-4,
            5.900_274e-4,
            -1.455_834_4e-3,
            3.592_128e-3,
            -8.863_236e-3,
            2.186_949e-2,
            -5.396_825_3e-2,
            0.133_333_33,
            -0.333_333_34,
        ];
        let z = a * a;
        let mut p = C[0];
        let mut k = 1;
        while k < C.len() {
            p = fma(p, z, C[k]);
            k += 1;
        }
        fma(a * z, p, a)
    } else {
        1.0 - 2.0 / (exp(a + a) + 1.0)
    };
    with_sign_of(r, x)
}

/// `sqrt(x)`, correctly rounded on both sides (`sqrt.rn.f32` on the device, IEEE `f32::sqrt`
/// on the host): bit-equal; NaN for `x < 0`.
#[inline(always)]
pub fn sqrt(x: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        // SAFETY: a pure arithmetic intrinsic (`sqrt.rn.f32`)
        unsafe { core::intrinsics::sqrtf32(x) }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        x.sqrt()
    }
}

/// `1 / sqrt(x)` as two correctly rounded operations (`sqrt.rn.f32` then `div.rn.f32`, IEEE on
/// the host): bit-equal on both sides, within 1.5 ulp of the exact value (half an ulp from each
/// rounding, the second scaled by at most one ulp of the first). The device's one-instruction
/// `rsqrt.approx` is not used: its rounding is not specified, so no host could reproduce it.
#[inline(always)]
pub fn rsqrt(x: f32) -> f32 {
    1.0 / sqrt(x)
}

/// `2^x` the fast way: on the device one `ex2.approx.ftz.f32` (the special-function unit: a
/// subnormal input or result is flushed to zero), on the host [`exp2`]. The two differ in the last
/// bits, so a kernel using it matches its host execution within a tolerance (a few ulp of `f32`
/// relative, plus `2^-126` absolute for the flushed results), not bit for bit; it costs one
/// instruction where [`exp2`] costs about fifteen.
#[inline(always)]
pub fn exp2_approx(x: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let r: f32;
        // SAFETY: a pure register operation
        unsafe {
            core::arch::asm!("ex2.approx.ftz.f32 {r}, {x};",
                 r = out(reg32) r, x = in(reg32) x,
                 options(pure, nomem, nostack, preserves_flags));
        }
        r
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        exp2(x)
    }
}

/// `log2(x)` the fast way: on the device one `lg2.approx.ftz.f32`, on the host `f32::log2`; they
/// differ in the last bits (as [`exp2_approx`] and [`exp2`] do).
#[inline(always)]
pub fn log2_approx(x: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let r: f32;
        // SAFETY: a pure register operation
        unsafe {
            core::arch::asm!("lg2.approx.ftz.f32 {r}, {x};",
                 r = out(reg32) r, x = in(reg32) x,
                 options(pure, nomem, nostack, preserves_flags));
        }
        r
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        x.log2()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec::Vec;

    /// Ulps between `a` and the exact `b`, for normal results.
    fn ulps(a: f32, b: f64) -> f64 {
        let ulp = f64::from(f32::EPSILON) * 2f64.powi(b.abs().log2().floor() as i32);
        (f64::from(a) - b).abs() / ulp
    }

    #[test]
    fn exp2_within_two_ulp_over_the_normal_range() {
        let mut worst = (0.0f64, 0.0f32);
        let mut xs: Vec<f32> = (0..200_000)
            .map(|i| -126.0 + 253.9 * i as f32 / 200_000.0)
            .collect();
        xs.extend([-0.5, 0.5, -0.49999997, 0.49999997, 1e-8, -1e-8, 0.0]);
        for x in xs {
            let e = ulps(exp2(x), f64::from(x).exp2());
            if e > worst.0 {
                worst = (e, x);
            }
        }
        assert!(worst.0 <= 2.0, "exp2({}) is {} ulp off", worst.1, worst.0);
    }

    #[test]
    fn exp2_exact_powers_and_edges() {
        for n in -126..=127 {
            assert_eq!(exp2(n as f32), 2f32.powi(n), "2^{n}");
        }
        assert_eq!(exp2(128.0), f32::INFINITY);
        assert_eq!(exp2(f32::INFINITY), f32::INFINITY);
        assert_eq!(exp2(-200.0), 0.0);
        assert_eq!(exp2(f32::NEG_INFINITY), 0.0);
        assert!(exp2(f32::NAN).is_nan());
        // subnormal results: within 2 ulp of the smallest subnormal
        for i in 0..1000 {
            let x = -149.0 + 23.0 * i as f32 / 1000.0;
            let d = (f64::from(exp2(x)) - f64::from(x).exp2()).abs();
            assert!(d <= 2.0 * 2f64.powi(-149), "2^{x}: off by {d:e}");
        }
    }

    #[test]
    fn rsqrt_within_one_and_a_half_ulp() {
        for i in 1..100_000 {
            let x = 1e-30f32 * 1.001f32.powi(i % 70_000) + i as f32;
            let e = 1.0 / f64::from(x).sqrt();
            assert!(ulps(rsqrt(x), e) <= 1.5, "rsqrt({x})");
            assert_eq!(sqrt(x), x.sqrt());
        }
        assert!(sqrt(-1.0).is_nan());
        assert_eq!(rsqrt(0.0), f32::INFINITY);
    }

    #[test]
    fn exp_matches_f64() {
        for i in 0..10_000 {
            let x = -80.0 + 160.0 * i as f32 / 10_000.0;
            let r = f64::from(exp(x));
            let e = f64::from(x).exp();
            // log2(e)'s and the product's rounding: 2 |x| 2^-24 relative, plus 2 ulp
            let tol = e * (2.0 * f64::from(x.abs()) * 2f64.powi(-24) + 2.0 * 2f64.powi(-23));
            assert!((r - e).abs() <= tol, "e^{x}: {r} vs {e}");
        }
    }

    #[test]
    fn log_within_two_ulp() {
        let mut worst = (0.0f64, 0.0f32);
        let mut xs: Vec<f32> = (0..400_000)
            .map(|i| f32::from_bits(1 + (i as u32).wrapping_mul(10_691)))
            .filter(|x| x.is_finite() && *x > 0.0)
            .collect();
        xs.extend((0..100_000).map(|i| 0.5 + i as f32 / 50_000.0));
        xs.extend([
            1.0,
            f32::MIN_POSITIVE,
            1e-45,
            f32::MAX,
            core::f32::consts::SQRT_2,
        ]);
        for x in xs {
            let e = f64::from(x).ln();
            if e == 0.0 {
                assert_eq!(log(x), 0.0);
                continue;
            }
            let u = ulps(log(x), e);
            if u > worst.0 {
                worst = (u, x);
            }
        }
        std::println!("log worst {} ulp at {:e}", worst.0, worst.1);
        assert!(worst.0 <= 2.0, "log({:e}) is {} ulp off", worst.1, worst.0);
        assert_eq!(log(0.0), f32::NEG_INFINITY);
        assert!(log(-1.0).is_nan() && log(f32::NAN).is_nan());
        assert_eq!(log(f32::INFINITY), f32::INFINITY);
    }

    #[test]
    fn tanh_within_two_ulp() {
        let mut worst = (0.0f64, 0.0f32);
        let xs = (0..400_000).map(|i| -10.0 + 20.0 * i as f32 / 400_000.0);
        for x in xs.chain([1e-30, -1e-30, 0.549_999_9, 0.55, 9.099_999, 9.1]) {
            let e = f64::from(x).tanh();
            if e == 0.0 {
                assert_eq!(tanh(x), 0.0);
                continue;
            }
            let u = ulps(tanh(x), e);
            if u > worst.0 {
                worst = (u, x);
            }
        }
        std::println!("tanh worst {} ulp at {}", worst.0, worst.1);
        assert!(worst.0 <= 2.0, "tanh({}) is {} ulp off", worst.1, worst.0);
        assert_eq!(tanh(20.0), 1.0);
        assert_eq!(tanh(-20.0), -1.0);
        assert!(tanh(f32::NAN).is_nan());
        assert_eq!(tanh(-0.0).to_bits(), (-0.0f32).to_bits());
    }
}
