//! Global memory on the simulated GPU: host buffers as a kernel's engines, every access
//! bounds-checked and aligned as on the device, every write counted (a kernel's threads must
//! cover an output exactly once).

use super::block::{current, fault, span, Site};
use layout_core::Engine;
use std::panic::Location;
use tessel_gpu::mem::{Atom, Atomic, Mem, V4};

/// Who wrote elements of outputs written once ([`HostMem::once`]): each element's word in its
/// buffer of counts holds `1 +` the index of its writer here until the launch ends.
#[derive(Clone, Copy, Debug)]
struct Writer {
    site: Site,
    thread: usize,
    block: [i64; 2],
}

std::thread_local! {
    static WRITERS: std::cell::RefCell<Vec<Writer>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Forgets the writers of the launch before (one launch at a time runs on an OS thread).
pub(crate) fn new_launch() {
    WRITERS.with(|w| w.borrow_mut().clear());
}

/// `1 +` the index of `w` among the writers (the last one's again when it is the same).
fn writer_index(w: Writer) -> u32 {
    WRITERS.with(|ws| {
        let mut ws = ws.borrow_mut();
        let same =
            |x: &Writer| std::ptr::eq(x.site, w.site) && x.thread == w.thread && x.block == w.block;
        if !ws.last().is_some_and(same) {
            ws.push(w);
        }
        ws.len() as u32
    })
}

impl std::fmt::Display for Writer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let [x, y] = self.block;
        write!(
            f,
            "thread {} of block ({x}, {y}) at {}",
            self.thread, self.site
        )
    }
}

/// Turns the words of an output written once ([`HostMem::once`]) into write counts, 0 or 1.
pub fn written_once(writes: &mut [u32]) {
    for w in writes {
        *w = (*w != 0) as u32;
    }
}

/// A host buffer as a kernel's global-memory engine on the simulated GPU ([`Mem`]): every access
/// is bounds-checked and aligned as on the device (a fault names the kernel's site), and every
/// write is counted; an output written once ([`HostMem::once`]) also faults at a second write
/// of an element, naming both writers. It is `Copy`, like a device pointer: it points into
/// buffers that outlive the launch that uses it.
#[derive(Debug)]
pub struct HostMem<T> {
    data: *mut T,
    writes: *mut u32,
    once: bool,
    len: i64,
    pos: i64,
}
impl<T> Clone for HostMem<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for HostMem<T> {}

impl<T> HostMem<T> {
    /// The engine at element 0 of `data`, counting writes in `writes` (as long as `data`).
    ///
    /// # Safety
    /// Both buffers must outlive every use of the engine and of the engines advanced from it,
    /// and nothing else may access them meanwhile.
    pub unsafe fn new(data: &mut [T], writes: &mut [u32]) -> Self {
        assert_eq!(data.len(), writes.len(), "one write count per element");
        Self {
            data: data.as_mut_ptr(),
            writes: writes.as_mut_ptr(),
            once: false,
            len: data.len() as i64,
            pos: 0,
        }
    }

    /// The same engine over an output each of whose elements the kernel writes at most once: a
    /// second write faults, naming both writers. Until the launch ends, each element's word of
    /// `writes` names its writer; [`written_once`] then makes them counts.
    pub fn once(self) -> Self {
        Self { once: true, ..self }
    }

    /// Element `i` and the `n - 1` after it were written at the caller's site.
    #[track_caller]
    unsafe fn wrote(&self, i: usize, n: usize) {
        if !self.once {
            for k in i..i + n {
                *self.writes.add(k) += 1;
            }
            return;
        }
        let site = Location::caller();
        let (thread, block) = current(|b, t| (t, b.block()));
        let now = writer_index(Writer {
            site,
            thread,
            block,
        });
        for k in i..i + n {
            let w = &mut *self.writes.add(k);
            if *w != 0 {
                let ws = WRITERS.with(|ws| ws.borrow().clone());
                let name = |w: u32| ws[w as usize - 1].to_string();
                fault(format!(
                    "global element {k} written twice: by {}, then by {}",
                    name(*w),
                    name(now)
                ));
            }
            *w = now;
        }
    }

    /// The first of `n` elements from here, inside the buffer and aligned to `align` elements.
    #[track_caller]
    fn span(&self, n: i64, align: i64, what: &str) -> usize {
        span("global", (self.pos, self.len), n, align, what)
    }
    #[track_caller]
    fn check(&self, n: i64, what: &str) -> usize {
        self.span(n, 1, what)
    }
    #[track_caller]
    fn check_pair(&self, what: &str) -> usize {
        self.span(2, 2, what)
    }
    #[track_caller]
    fn check_quad(&self, what: &str) -> usize {
        self.span(4, 4, what)
    }
    /// 16 bytes, 16-byte aligned from the buffer's start (as device buffers are).
    #[track_caller]
    fn check_v4(&self, what: &str) -> usize {
        let n = 16 / std::mem::size_of::<T>() as i64;
        self.span(n, n, what)
    }

    /// Writes `v` from element `i` (checked), counting the writes.
    #[track_caller]
    unsafe fn put(&self, i: usize, v: &[T])
    where
        T: Copy,
    {
        std::ptr::copy_nonoverlapping(v.as_ptr(), self.data.add(i), v.len());
        self.wrote(i, v.len());
    }
}

impl<T> Engine for HostMem<T> {
    fn advance(self, off: i64) -> Self {
        Self {
            pos: self.pos + off,
            ..self
        }
    }
    fn fmt_origin(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "host[{}]+{}", self.len, self.pos)
    }
}

impl<T: Copy> Mem<T> for HostMem<T> {
    unsafe fn read(&self) -> T {
        let i = self.check(1, "read");
        *self.data.add(i)
    }
    unsafe fn write(&self, v: T) {
        let i = self.check(1, "write");
        *self.data.add(i) = v;
        self.wrote(i, 1);
    }
    unsafe fn read_v4(&self) -> V4 {
        let i = self.check_v4("vector read");
        let mut v = V4::default();
        std::ptr::copy_nonoverlapping(
            self.data.add(i) as *const u8,
            v.0.as_mut_ptr() as *mut u8,
            16,
        );
        v
    }
    fn aligned16(&self) -> bool {
        (self.pos * std::mem::size_of::<T>() as i64) % 16 == 0
    }
    /// Checked as two elements, and aligned to twice the element's size from the buffer's start.
    unsafe fn read_pair(&self) -> [T; 2] {
        let i = self.check_pair("pair read");
        [*self.data.add(i), *self.data.add(i + 1)]
    }
    unsafe fn write_pair(&self, v: [T; 2]) {
        self.put(self.check_pair("pair write"), &v);
    }
    fn aligned_pair(&self) -> bool {
        self.pos % 2 == 0
    }
    /// Checked as four elements, and aligned to four times the element's size from the buffer's
    /// start.
    unsafe fn read_quad(&self) -> [T; 4] {
        let i = self.check_quad("quad read");
        std::array::from_fn(|k| *self.data.add(i + k))
    }
    unsafe fn write_quad(&self, v: [T; 4]) {
        self.put(self.check_quad("quad write"), &v);
    }
    fn aligned_quad(&self) -> bool {
        self.pos % 4 == 0
    }
    /// From the buffer's start, as a device buffer's start is 256-byte aligned.
    fn misalignment(&self, bytes: usize) -> i64 {
        let size = std::mem::size_of::<T>() as i64;
        (self.pos * size).rem_euclid(bytes as i64) / size
    }
    unsafe fn write_v4(&self, v: V4) {
        let i = self.check_v4("vector write");
        std::ptr::copy_nonoverlapping(v.0.as_ptr() as *const u8, self.data.add(i) as *mut u8, 16);
        self.wrote(i, 16 / std::mem::size_of::<T>());
    }
}

impl<T: Copy> Atomic<T> for HostMem<T> {
    /// Read and written at once (a launch's blocks run in turn, its threads one at a time), the
    /// access checked, not counted among the writes.
    unsafe fn atomic_add(&self, v: T) -> T
    where
        T: Atom,
    {
        let i = self.check(1, "atomic addition");
        let old = *self.data.add(i);
        *self.data.add(i) = T::sum(old, v);
        old
    }
    /// As [`HostMem::atomic_add`]: one thread runs at a time, in its program's order.
    unsafe fn atomic_add_acq_rel(&self, v: T) -> T
    where
        T: Atom,
    {
        self.atomic_add(v)
    }
}
