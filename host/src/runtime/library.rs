//! Libraries cudarc loads at run time (cuBLAS, NCCL). cudarc panics when one of them, or a
//! function of it, is missing; [`probe`] looks them all up first, where the panic is caught, and
//! turns what is missing into a message.

use std::panic::{catch_unwind, UnwindSafe};

/// A panic's message.
pub(crate) fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<String>()
        .cloned()
        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "the loader panicked".into())
}

/// The library's file name, what it is (for "too old a ..."), and how to install it.
pub(crate) struct Library {
    pub file: &'static str,
    pub what: &'static str,
    pub hint: &'static str,
}

/// `Ok` when `lib` loads (`present`) and `missing`, which looks its functions up, finds every
/// one (returns `None`); else which condition failed.
pub(crate) fn probe(
    lib: &Library,
    present: bool,
    missing: impl FnOnce() -> Option<&'static str> + UnwindSafe,
) -> Result<(), String> {
    if !present {
        return Err(format!("{} could not be loaded ({})", lib.file, lib.hint));
    }
    match catch_unwind(missing) {
        Err(p) => Err(format!(
            "{} could not be loaded: {}",
            lib.file,
            panic_message(&*p)
        )),
        Ok(Some(f)) => Err(format!("{} has no {f} (too old {}?)", lib.file, lib.what)),
        Ok(None) => Ok(()),
    }
}

/// The first of `symbols` that the library of cudarc's module `sys` lacks, as [`probe`] takes it.
macro_rules! first_missing {
    ($sys:ident, $symbols:expr) => {
        // SAFETY: loads the library and looks the names up; nothing is called.
        || unsafe {
            let lib = $sys::culib();
            $symbols
                .iter()
                .find(|s| lib.get::<unsafe extern "C" fn()>(s.as_bytes()).is_err())
                .copied()
        }
    };
}
pub(crate) use first_missing;
