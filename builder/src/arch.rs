//! GPU archs as `TESSEL_ARCH`, [`Builder::archs`](crate::Builder::archs) and `tessel ptx --arch`
//! name them: which archs the kernels can be built for, and which PTX runs on a device. The
//! builder checks every arch with [`Arch::parse`] before building; the host runtime (`host`
//! re-exports this module) picks the PTX a device runs with [`Arch::runs_on`].

/// The oldest arch the kernels run on, and why.
pub const MIN_SM: u32 = 80;
/// The instructions that need [`MIN_SM`].
pub const MIN_SM_WHY: &str = "cp.async, cvt.rn.bf16x2.f32 are sm_80 instructions";

/// A GPU arch `sm_<N>`, or `sm_<N>a` (arch-specific features: runs on that arch only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Arch {
    /// The compute capability, major * 10 + minor (`90` for `sm_90`).
    pub sm: u32,
    /// The `a` suffix.
    pub specific: bool,
}

impl Arch {
    /// Reads `sm_<N>` or `sm_<N>a` (`N` decimal, no leading zero) with `N >= MIN_SM`.
    /// `Err` says which condition `s` breaks; `Ok(a)` prints back as `s`.
    pub fn parse(s: &str) -> Result<Arch, String> {
        let malformed = || {
            format!("'{s}' is not an arch: write sm_<N> or sm_<N>a (e.g. sm_90, sm_90a), sm_{MIN_SM} or newer")
        };
        let digits = s.strip_prefix("sm_").ok_or_else(malformed)?;
        let (digits, specific) = match digits.strip_suffix('a') {
            Some(d) => (d, true),
            None => (digits, false),
        };
        if digits.is_empty()
            || digits.starts_with('0')
            || !digits.bytes().all(|b| b.is_ascii_digit())
        {
            return Err(malformed());
        }
        let sm: u32 = digits.parse().map_err(|_| malformed())?;
        if sm < MIN_SM {
            return Err(format!(
                "the kernels need sm_{MIN_SM} or newer ({MIN_SM_WHY})"
            ));
        }
        Ok(Arch { sm, specific })
    }

    /// Can PTX built for this arch run on a device of compute capability `cc`? `sm_N` runs on
    /// `N` and newer, `sm_Na` on `N` only.
    pub fn runs_on(&self, cc: u32) -> bool {
        if self.specific {
            cc == self.sm
        } else {
            cc >= self.sm
        }
    }
}

impl core::fmt::Display for Arch {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "sm_{}{}", self.sm, if self.specific { "a" } else { "" })
    }
}

#[cfg(test)]
mod tests {
    use super::Arch;

    #[test]
    fn archs_from_sm_80_are_accepted_and_print_back() {
        for s in [
            "sm_80", "sm_86", "sm_89", "sm_90", "sm_90a", "sm_100", "sm_120a",
        ] {
            let a = Arch::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"));
            assert_eq!(a.to_string(), s);
        }
        assert_eq!(
            Arch::parse("sm_90a"),
            Ok(Arch {
                sm: 90,
                specific: true
            })
        );
    }

    #[test]
    fn older_archs_are_refused_naming_the_instructions() {
        for s in ["sm_75", "sm_70", "sm_1", "sm_75a"] {
            let e = Arch::parse(s).unwrap_err();
            assert!(e.contains("sm_80 or newer"), "{s}: {e}");
            assert!(
                e.contains("cp.async") && e.contains("cvt.rn.bf16x2.f32"),
                "{s}: {e}"
            );
        }
    }

    #[test]
    fn malformed_archs_are_refused() {
        for s in [
            "",
            "sm_",
            "sm_a",
            "sm_9x",
            "sm_90b",
            "sm_090",
            "sm_+90",
            "sm_ 90",
            "SM_90",
            "compute_90",
            "90",
            "sm_90aa",
            "sm_99999999999",
        ] {
            let e = Arch::parse(s).unwrap_err();
            assert!(e.contains("is not an arch"), "{s:?}: {e}");
        }
    }

    #[test]
    fn arch_specific_ptx_runs_on_its_arch_only() {
        let a = |s| Arch::parse(s).unwrap();
        assert!(a("sm_80").runs_on(80) && a("sm_80").runs_on(90) && !a("sm_80").runs_on(75));
        assert!(a("sm_90a").runs_on(90) && !a("sm_90a").runs_on(100) && !a("sm_90a").runs_on(89));
    }
}
