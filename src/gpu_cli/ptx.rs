//! `tessel ptx`: the embedded PTX of an arch.

use super::*;

/// `tessel ptx [--arch sm_XX]`.
pub fn ptx(a: PtxArgs) -> ExitCode {
    let built = built_ptx::archs();
    let arch = a.arch.map(|a| a.to_string());
    let arch = arch.as_deref().or(built.first().copied());
    match arch.and_then(built_ptx::for_arch) {
        Some(text) => {
            use std::io::Write;
            // a closed pipe (`tessel ptx | head`) is not an error
            let _ = std::io::stdout().lock().write_all(text.as_bytes());
            ExitCode::SUCCESS
        }
        None if built.is_empty() => {
            eprintln!("tessel ptx: this tessel was built without PTX (TESSEL_NO_PTX=1); rebuild with TESSEL_ARCH={} cargo build", arch.unwrap_or("sm_90"));
            ExitCode::from(NO_GPU)
        }
        None => {
            eprintln!(
                "tessel ptx: no PTX for {} (built: {}); rebuild with TESSEL_ARCH={0} cargo build",
                arch.unwrap_or("sm_90"),
                built.join(", "),
            );
            ExitCode::from(NO_GPU)
        }
    }
}
