//! Host executions of the kernels: the kernels' own partitioning functions (`tessel_gpu::copy`,
//! `tessel_gpu::transpose`) run on the CPU for every block and thread, with host memory in place of
//! global and shared memory. Each produces the output the device must produce, and counts how often
//! every output element was written: the threads must cover the output exactly once.

use crate::elem::Elem;
use layout_core::{Engine, FlatLayout, FlatTensor};
use tessel_gpu::copy;
use tessel_gpu::copy::{CopyParams, VecCopy};
use tessel_gpu::ctx::{Collective, Ctx, Geometry, Kernel};
use tessel_gpu::mem::{AsyncCopy, Mem, V4};
use tessel_gpu::rmsnorm::{self as rms, Atom, RmsMem, RmsNorm, Src};
use tessel_gpu::transpose::{Problem, SmemTile, TransposeMem, THREADS as TRANSPOSE_THREADS};

/// What a host execution produced.
#[derive(Debug, Clone)]
pub struct Run<T> {
    /// The output.
    pub out: Vec<T>,
    /// How many times each output element was written.
    pub writes: Vec<u32>,
}

impl<T> Run<T> {
    /// The first output element not written exactly once, with its count.
    pub fn coverage_error(&self) -> Option<(usize, u32)> {
        self.writes
            .iter()
            .position(|&w| w != 1)
            .map(|i| (i, self.writes[i]))
    }
}

/// A host buffer as a kernel's engine ([`Mem`]): every access is bounds-checked (out of range
/// panics, naming the offset), 128-bit accesses must be 16-byte aligned from the buffer's start
/// (as device buffers are), and every write is counted. It is `Copy`, like a device pointer: it
/// points into buffers that outlive the host execution that made it.
#[derive(Debug)]
pub struct HostMem<T> {
    data: *mut T,
    writes: *mut u32,
    len: i64,
    pos: i64,
    strict: bool,
    /// Asynchronous copies started and not yet waited for (element index, bytes), or null: then
    /// an asynchronous copy lands at once.
    in_flight: *mut Vec<(i64, V4)>,
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
            len: data.len() as i64,
            pos: 0,
            strict: false,
            in_flight: std::ptr::null_mut(),
        }
    }
    /// The same engine, where reading an element that was never written panics (shared memory:
    /// such a read is a missing barrier or a wrong layout).
    pub fn strict(self) -> Self {
        Self {
            strict: true,
            ..self
        }
    }
    /// The same engine, where an asynchronous copy into it ([`AsyncCopy`]) is recorded in
    /// `in_flight` and lands (is written, and counted) only at the copying thread's
    /// `wait_all`: a read before the wait reads an element never written, which a strict engine
    /// panics on.
    ///
    /// # Safety
    /// `in_flight` must be valid, and outlive every use of the engine and of the engines advanced
    /// from it; nothing else may access it while they are in use.
    pub unsafe fn with_async_copies(self, in_flight: *mut Vec<(i64, V4)>) -> Self {
        Self { in_flight, ..self }
    }
    fn check_written(&self, i: usize, n: usize) {
        if self.strict {
            for k in i..i + n {
                // SAFETY: `k` was bounds-checked by the caller
                assert!(
                    unsafe { *self.writes.add(k) } > 0,
                    "element {k} read before it was written"
                );
            }
        }
    }
    fn check(&self, n: i64, what: &str) -> usize {
        assert!(
            self.pos >= 0 && self.pos + n <= self.len,
            "{what} of {n} elements at {} outside the buffer of {}",
            self.pos,
            self.len
        );
        self.pos as usize
    }
    fn check_v4(&self, what: &str) -> usize {
        let size = std::mem::size_of::<T>() as i64;
        assert_eq!(
            (self.pos * size) % 16,
            0,
            "{what}: 128-bit access at element {} is not 16-byte aligned",
            self.pos
        );
        self.check(16 / size, what)
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
        self.check_written(i, 1);
        *self.data.add(i)
    }
    unsafe fn write(&self, v: T) {
        let i = self.check(1, "write");
        *self.data.add(i) = v;
        *self.writes.add(i) += 1;
    }
    unsafe fn read_v4(&self) -> V4 {
        let i = self.check_v4("vector read");
        self.check_written(i, 16 / std::mem::size_of::<T>());
        let mut v = V4::default();
        std::ptr::copy_nonoverlapping(
            self.data.add(i) as *const u8,
            v.0.as_mut_ptr() as *mut u8,
            16,
        );
        v
    }
    unsafe fn write_v4(&self, v: V4) {
        let i = self.check_v4("vector write");
        std::ptr::copy_nonoverlapping(v.0.as_ptr() as *const u8, self.data.add(i) as *mut u8, 16);
        for k in 0..16 / std::mem::size_of::<T>() {
            *self.writes.add(i + k) += 1;
        }
    }
}

impl<T: Copy, U: Copy> AsyncCopy<HostMem<T>> for HostMem<U> {
    /// Reads the 16 bytes at `src` now (checked) and checks the destination; they land at the
    /// thread's [`AsyncCopy::wait_all`] when the engine records copies in flight, else at once.
    unsafe fn copy_async_v4(&self, src: &HostMem<T>) {
        let v = src.read_v4();
        self.check_v4("asynchronous copy");
        match self.in_flight.as_mut() {
            Some(log) => log.push((self.pos, v)),
            None => self.write_v4(v),
        }
    }
    /// Lands the copies in flight: writes them (each counted as a write).
    unsafe fn wait_all(&self) {
        if let Some(log) = self.in_flight.as_mut() {
            for (pos, v) in std::mem::take(log) {
                self.advance(pos - self.pos).write_v4(v);
            }
        }
    }
}

/// Runs kernel `K` on the host over `geometry`: for every block, each step for all its threads
/// in turn, the collectives between the steps performed as the device does (a barrier is the
/// end of a step; a warp's sum is the same butterfly), with a fresh shared-memory buffer per
/// block in which a read of an element not yet written panics. An asynchronous copy into shared
/// memory lands at its thread's wait ([`HostMem::with_async_copies`]); a thread that ends a step
/// with copies in flight panics. `p` must be prepared.
pub fn run<K: Kernel>(p: &K::Params<HostMem<K::T>>, geometry: Geometry) {
    let shared = std::mem::size_of::<K::Shared>().max(1) as i64;
    let nthreads = geometry.threads as usize;
    for by in 0..geometry.grid[1] {
        for bx in 0..geometry.grid[0] {
            let n = (geometry.smem_bytes / shared) as usize;
            let mut smem = vec![K::Shared::default(); n];
            let mut written = vec![0u32; n];
            let mut copies = Vec::new();
            let in_flight: *mut Vec<(i64, V4)> = &mut copies;
            // SAFETY: the three buffers outlive this block's steps; `in_flight` is read below
            // only between two steps of a thread, when no engine is in use.
            let s = unsafe {
                HostMem::new(&mut smem, &mut written)
                    .strict()
                    .with_async_copies(in_flight)
            };
            let ctx = |thread: usize| Ctx {
                block: [bx, by],
                grid: geometry.grid,
                thread: thread as i64,
                smem: s,
            };
            let mut carry = vec![0f32; nthreads];
            for k in 0..=K::COLLECTIVES.len() {
                if k > 0 {
                    match K::COLLECTIVES[k - 1] {
                        Collective::SyncThreads => {}
                        Collective::WarpSum => warp_sums(&mut carry),
                    }
                }
                for (t, c) in carry.iter_mut().enumerate() {
                    // SAFETY: host memory; every access is checked and panics out of range.
                    *c = unsafe { K::step(k, p, &ctx(t), *c) };
                    // SAFETY: as above
                    let left = unsafe { (*in_flight).len() };
                    assert!(
                        left == 0,
                        "thread {t} of block ({bx}, {by}) ended step {k} with {left} asynchronous copies not waited for"
                    );
                }
            }
        }
    }
}

/// Each warp's values replaced by their sum, added as `shfl.sync.bfly` with masks 16, 8, 4, 2, 1
/// adds them on the device (so the sums are bit-equal).
fn warp_sums(v: &mut [f32]) {
    for w in v.chunks_mut(32) {
        for mask in [16, 8, 4, 2, 1] {
            let before = w.to_vec();
            for (i, x) in w.iter_mut().enumerate() {
                *x = before[i] + before[(i ^ mask) % before.len()];
            }
        }
    }
}

/// A vector `n:1` over a host buffer.
fn vector<T>(m: HostMem<T>, n: usize) -> FlatTensor<HostMem<T>, 1> {
    FlatTensor::new(
        m,
        FlatLayout::new([n as i64], [1]).expect("a vector's layout"),
    )
}

/// The copy kernel on the host, with `grid` blocks of `copy::THREADS` threads; `dst` starts as
/// `poison`.
pub fn copy<T: Copy + Default>(src: &[T], grid: i64, poison: T) -> Run<T> {
    let n = src.len();
    let mut input = src.to_vec();
    let mut reads = vec![0u32; n];
    let mut out = vec![poison; n];
    let mut writes = vec![0u32; n];
    // SAFETY: the four buffers outlive the loop below and are reached only through the engines.
    let p = unsafe {
        CopyParams {
            src: vector(HostMem::new(&mut input, &mut reads), n),
            dst: vector(HostMem::new(&mut out, &mut writes), n),
        }
    };
    let g = Geometry {
        grid: [grid, 1],
        threads: copy::THREADS,
        smem_bytes: 0,
    };
    run::<VecCopy<T>>(&p, g);
    assert!(reads.iter().all(|&r| r == 0), "the copy wrote its source");
    Run { out, writes }
}

/// Host memory for a transpose thread: the block's shared tile is a vector of `S::ELEMS`.
struct HostTranspose<'a, T> {
    src: &'a [T],
    dst: &'a mut [T],
    writes: &'a mut [u32],
    smem: Vec<Option<T>>,
}

impl<T: Copy> TransposeMem for HostTranspose<'_, T> {
    type E = T;
    unsafe fn load_global(&mut self, off: i64) -> T {
        self.src[off as usize]
    }
    unsafe fn store_global(&mut self, off: i64, v: T) {
        self.dst[off as usize] = v;
        self.writes[off as usize] += 1;
    }
    unsafe fn load_shared(&mut self, off: i64) -> T {
        self.smem[off as usize].unwrap_or_else(|| panic!("shared slot {off} read before written"))
    }
    unsafe fn store_shared(&mut self, off: i64, v: T) {
        let slot = &mut self.smem[off as usize];
        assert!(slot.is_none(), "shared slot {off} written twice");
        *slot = Some(v);
    }
}

/// The transpose kernel on the host, shared tile `S`: every block runs phase 1 for all its
/// threads, then (the barrier) phase 2. Shared slots written twice or read unwritten panic.
pub fn transpose<T: Copy, S: SmemTile>(src: &[T], rows: i64, cols: i64, poison: T) -> Run<T> {
    let p = Problem::new(rows, cols).expect("positive extents");
    assert_eq!(src.len() as i64, rows * cols, "input size");
    let mut out = vec![poison; src.len()];
    let mut writes = vec![0u32; src.len()];
    let mut m = HostTranspose {
        src,
        dst: &mut out,
        writes: &mut writes,
        smem: Vec::new(),
    };
    let (gx, gy) = p.grid();
    for by in 0..gy {
        for bx in 0..gx {
            m.smem = vec![None; S::ELEMS as usize];
            // SAFETY: host memory; any out-of-range access panics.
            unsafe {
                for t in 0..TRANSPOSE_THREADS {
                    p.load_tile::<S, _>(&mut m, bx, by, t);
                }
                for t in 0..TRANSPOSE_THREADS {
                    p.store_tile::<S, _>(&mut m, bx, by, t);
                }
            }
        }
    }
    Run { out, writes }
}

/// Host memory for an RMSNorm thread: 128-bit accesses gather and scatter `V` elements' bits.
struct HostRms<'a, T> {
    x: &'a [T],
    w: &'a [T],
    y: &'a mut [T],
    writes: &'a mut [u32],
    v: usize,
    /// The running thread's staging slots (`None`: not staged, or staged and not waited for).
    slots: Vec<Option<Atom>>,
    /// Staged but not yet waited for.
    pending: Vec<(usize, Atom)>,
}

impl<T: Elem> RmsMem for HostRms<'_, T> {
    unsafe fn load(&mut self, src: Src, off: i64) -> Atom {
        let data = match src {
            Src::X => self.x,
            Src::W => self.w,
        };
        // `per` elements of `32 / per` bits in each 32-bit word
        let (o, per) = (off as usize, self.v / 4);
        assert_eq!(o % self.v, 0, "unaligned 128-bit access at {o}");
        let mut a = [0u32; 4];
        for (i, e) in data[o..o + self.v].iter().enumerate() {
            a[i / per] |= e.bits() << ((i % per) * (32 / per));
        }
        a
    }
    unsafe fn stage(&mut self, k: i64, off: i64) {
        let a = self.load(Src::X, off);
        self.pending.push((k as usize, a));
    }
    unsafe fn wait_staged(&mut self) {
        for (k, a) in self.pending.drain(..) {
            self.slots[k] = Some(a);
        }
    }
    unsafe fn staged(&mut self, k: i64) -> Atom {
        self.slots[k as usize]
            .unwrap_or_else(|| panic!("slot {k} read before it was staged and waited for"))
    }
    unsafe fn store(&mut self, off: i64, v: Atom) {
        let (o, per) = (off as usize, self.v / 4);
        let bits = 32 / per;
        let mask = if bits == 32 {
            u32::MAX
        } else {
            (1 << bits) - 1
        };
        for i in 0..self.v {
            self.y[o + i] = T::from_bits((v[i / per] >> ((i % per) * bits)) & mask);
            self.writes[o + i] += 1;
        }
    }
}

/// The RMSNorm kernel on the host, staging `staged` tiles per row: every block's four warps run
/// pass 1 for their 32 lanes, the warp's butterfly sum (as the shuffles do it), then pass 2. Each
/// thread has its own staging slots, as on the device; a slot read before it was staged and
/// waited for panics.
pub fn rmsnorm<T: Elem + rms::Elem>(
    x: &[T],
    w: &[T],
    rows: i64,
    cols: i64,
    eps: f32,
    staged: i64,
    poison: T,
) -> Run<T> {
    let p =
        rms::Problem::new(rows, cols, eps, staged).expect("M >= 1 and N a positive multiple of 8");
    assert_eq!(x.len() as i64, rows * cols, "x size");
    assert_eq!(w.len() as i64, cols, "w size");
    let mut out = vec![poison; x.len()];
    let mut writes = vec![0u32; x.len()];
    let mut m = HostRms {
        x,
        w,
        y: &mut out,
        writes: &mut writes,
        v: RmsNorm::<T>::V as usize,
        slots: vec![],
        pending: vec![],
    };
    let nslots = staged.max(0) as usize;
    for b in 0..p.grid() {
        for warp in 0..rms::ROWS {
            let ts: Vec<i64> = (0..32).map(|lane| warp * 32 + lane).collect();
            let mut slots = vec![vec![None; nslots]; 32];
            let mut v = vec![0f32; 32];
            for (i, &t) in ts.iter().enumerate() {
                m.slots = std::mem::take(&mut slots[i]);
                // SAFETY: host memory; out-of-range accesses panic.
                v[i] = unsafe { RmsNorm::<T>::partial(&p, &mut m, b, t) };
                slots[i] = std::mem::take(&mut m.slots);
            }
            for mask in [16, 8, 4, 2, 1] {
                v = (0..32).map(|i| v[i] + v[i ^ mask]).collect();
            }
            for (i, &t) in ts.iter().enumerate() {
                m.slots = std::mem::take(&mut slots[i]);
                // SAFETY: as above
                unsafe { RmsNorm::<T>::finish(&p, &mut m, b, t, v[i]) };
            }
        }
    }
    Run { out, writes }
}
