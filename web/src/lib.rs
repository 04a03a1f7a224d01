//! tessel's calculator for the browser: `tessel-calc` (and so the `no_std` layout-core)
//! compiled to `wasm32-unknown-unknown`, behind a plain C ABI over the module's linear memory
//! (no wasm-bindgen: the page's script is ~20 lines of standard WebAssembly API).
//!
//! The protocol, one call at a time (a page's script is single-threaded):
//! 1. `tessel_input(n)` returns where to write the `n` bytes of the expression (UTF-8);
//! 2. `tessel_eval(n)` or `tessel_svg(n)` evaluates them and returns the answer's length;
//! 3. `tessel_output()` returns where the answer is: `tessel eval`'s line (a value or
//!    `error: <reason>`), or an SVG document (or `error: <reason>`).
//!
//! The pointers stay valid until the next call into the module.

use std::sync::Mutex;

/// The input and output buffers.
struct Buffers {
    input: Vec<u8>,
    output: Vec<u8>,
}

static BUFFERS: Mutex<Buffers> = Mutex::new(Buffers {
    input: Vec::new(),
    output: Vec::new(),
});

fn buffers() -> std::sync::MutexGuard<'static, Buffers> {
    // a panic while holding the lock aborts the module (wasm has no unwinding), so a poisoned
    // lock only happens in host tests; its buffers are still usable
    BUFFERS.lock().unwrap_or_else(|e| e.into_inner())
}

/// Makes room for an `n`-byte input; returns where to write it.
#[no_mangle]
pub extern "C" fn tessel_input(n: usize) -> *mut u8 {
    let mut b = buffers();
    b.input.clear();
    b.input.resize(n, 0);
    b.input.as_mut_ptr()
}

/// Answers the first `n` bytes of the input with `f`; returns the answer's length.
fn answer(n: usize, f: impl Fn(&str) -> String) -> usize {
    let mut b = buffers();
    let n = n.min(b.input.len());
    let out = match std::str::from_utf8(&b.input[..n]) {
        Ok(src) => f(src.trim()),
        Err(_) => "error: the input is not valid UTF-8".into(),
    };
    b.output = out.into_bytes();
    b.output.len()
}

/// Evaluates the expression: `tessel eval`'s answer line.
#[no_mangle]
pub extern "C" fn tessel_eval(n: usize) -> usize {
    answer(n, tessel_calc::eval_line)
}

/// Draws the expression: an SVG document, or `error: <reason>`.
#[no_mangle]
pub extern "C" fn tessel_svg(n: usize) -> usize {
    answer(n, |src| match tessel_calc::svg(src) {
        Ok(s) => s,
        Err(e) => format!("error: {e}"),
    })
}

/// Where the last answer is.
#[no_mangle]
pub extern "C" fn tessel_output() -> *const u8 {
    buffers().output.as_ptr()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs the protocol as the page does.
    fn call(f: extern "C" fn(usize) -> usize, src: &str) -> String {
        let p = tessel_input(src.len());
        // SAFETY: `tessel_input` returned room for `src.len()` bytes, valid until the next call
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), p, src.len()) };
        let n = f(src.len());
        // SAFETY: `tessel_output` points at the answer's `n` bytes until the next call
        let out = unsafe { std::slice::from_raw_parts(tessel_output(), n) };
        String::from_utf8(out.to_vec()).unwrap()
    }

    #[test]
    fn the_protocol_answers_as_tessel_eval_and_svg() {
        assert_eq!(
            call(tessel_eval, "composition((6,2):(8,2),(4,3):(3,1))"),
            "((2,2),3):((24,2),8)"
        );
        assert!(call(tessel_eval, "composition(").starts_with("error: "));
        let svg = call(tessel_svg, " (4,8):(8,1) ");
        assert!(svg.starts_with("<svg ") && svg.ends_with("</svg>\n"));
        assert_eq!(svg, tessel_calc::svg("(4,8):(8,1)").unwrap());
        assert!(call(tessel_svg, "make_identity_tensor((2,2))").starts_with("error: "));
        // bad UTF-8: an answer, not a panic
        let p = tessel_input(2);
        // SAFETY: room for 2 bytes
        unsafe { std::ptr::copy_nonoverlapping([0xff, 0xfe].as_ptr(), p, 2) };
        assert_eq!(tessel_eval(2), "error: the input is not valid UTF-8".len());
    }
}
