//! Collectives across the GPUs of one host, over NCCL (cudarc's `nccl`, loaded at run time): one
//! process drives every GPU of a [`Devices`] set, or one process each ([`Devices::open_rank`]),
//! their communicators made by `ncclCommInitRankConfig` (tessel's own `Rank`s: cudarc's `Comm`
//! takes no configuration); each collective one NCCL group over the ranks this process drives,
//! on a communication stream of each GPU's own.
//!
//! A collective waits for the work queued on each GPU so far. [`Devices::all_gather`] and the
//! others then make each GPU's later work wait for it: the order of one stream. Their `start_`
//! forms do not: the GPUs compute on while the collective moves data (what a layout that splits
//! a problem into chunks allows), until [`Devices::wait_comm`]. A buffer a started collective
//! reads or writes must not be written, read or dropped before that (a buffer is freed on its
//! GPU's own stream, which does not wait for the communication stream by itself).
//!
//! The tensors' layouts are checked against the mesh algebra (`layout_core::mesh`) before
//! anything is enqueued: an all-gather's outputs must be the layout the gathered shards form
//! ([`layout_core::gathered`]), a reduce-scatter's inputs the layout their outputs gather to, an
//! all-reduce's buffers one compact layout. NCCL is looked up as cudarc names it (`libnccl.so`,
//! ...); where only `libnccl.so.2` is installed (pip's `nvidia-nccl-cu12`, torch's), a
//! `libnccl.so` link to it on `LD_LIBRARY_PATH` serves (`scripts/nccl-path.sh` makes one).

use crate::elem::Elem;
use crate::runtime::gpu::{DeviceTensor, Gpu, GpuError, Result};
use crate::runtime::library::{self, first_missing, Library};
use cudarc::driver::DevicePtr;
use cudarc::driver::{sys as cu, CudaStream};
use cudarc::nccl::{group_end, group_start, result, result::NcclError, sys, Id, NcclType};
use layout_core::{coalesce, gathered, rebuild, shard, Layout, Rebuild};
use std::borrow::{Borrow, BorrowMut};
use std::panic::catch_unwind;
use std::rc::Rc;
use std::sync::Arc;

/// The NCCL functions tessel calls, probed before the first one is (cudarc panics on a missing
/// one).
const SYMBOLS: &[&str] = &[
    "ncclGetVersion",
    "ncclCommInitRankConfig",
    "ncclGetUniqueId",
    "ncclCommAbort",
    "ncclGroupStart",
    "ncclGroupEnd",
    "ncclAllGather",
    "ncclAllReduce",
    "ncclReduceScatter",
    "ncclGetErrorString",
];

/// An element type NCCL moves.
pub trait CommElem: Elem + NcclType {}
impl<T: Elem + NcclType> CommElem for T {}

/// GPUs of this host with one NCCL communicator each (rank `r` on GPU `r`), on a communication
/// stream of each GPU beside the one its kernels run on: every rank of the communicators
/// ([`Devices::open`], one process driving them all), or one of them ([`Devices::open_rank`],
/// one process per GPU). Tensors are passed one per rank this process drives, in rank order.
pub struct Devices {
    gpus: Vec<Gpu>,
    comms: Vec<Rc<Rank>>,
    streams: Vec<Arc<CudaStream>>,
    /// The rank of `gpus[0]`.
    first: usize,
    /// Ranks of the communicators, in every process.
    world: usize,
}

/// One rank's NCCL communicator, aborted when the last owner (its [`Devices`], the windows
/// registered with it) drops it. tessel makes its own: cudarc's `Comm` takes no configuration
/// and registers no window.
pub(crate) struct Rank {
    pub(crate) raw: sys::ncclComm_t,
}

impl Drop for Rank {
    fn drop(&mut self) {
        // SAFETY: `raw` was initialised by NCCL and is aborted once, here.
        let _ = unsafe { result::comm_abort(self.raw) };
    }
}

/// The communicators' configuration: NCCL's defaults, but the zero-CTA policy where NCCL has it
/// (2.28+; 2.27 refuses the value): a collective NCCL can make with the copy engines, between
/// tensors in symmetric windows ([`crate::collectives::window::CommTensor`]), runs without a block on any SM;
/// every other collective runs as it would by default. An `NCCL_CTA_POLICY` set outside
/// overrides it.
fn config() -> sys::ncclConfig_t {
    let zero_cta = matches!(result::get_nccl_version(), Ok(v) if v >= 22800);
    // NCCL_CONFIG_UNDEF_INT and NCCL_CONFIG_UNDEF_PTR: NCCL's own choice
    const UNDEF: std::ffi::c_int = std::ffi::c_int::MIN;
    let none = std::ptr::null();
    sys::ncclConfig_t {
        size: std::mem::size_of::<sys::ncclConfig_t>(),
        magic: 0xcafe_beef,
        // NCCL_VERSION(2, 28, 0): the layout of these fields; an older NCCL reads its prefix
        version: 22800,
        blocking: UNDEF,
        cgaClusterSize: UNDEF,
        minCTAs: UNDEF,
        maxCTAs: UNDEF,
        netName: none,
        splitShare: UNDEF,
        trafficClass: UNDEF,
        commName: none,
        collnetEnable: UNDEF,
        // NCCL_CTA_POLICY_ZERO
        CTAPolicy: if zero_cta { 2 } else { UNDEF },
        shrinkShare: UNDEF,
        nvlsCTAs: UNDEF,
        nChannelsPerNetPeer: UNDEF,
        nvlinkCentricSched: UNDEF,
        // NCCL 2.29 and 2.30's own (an older one ignores them, a newer one sees version 2.28)
        graphUsageMode: UNDEF,
        maxP2pPeers: UNDEF,
        numRmaCtx: UNDEF,
    }
}

/// Rank `rank` of `world` joining the communicator `id` on the GPU whose context `stream` has
/// (bound to this thread first: NCCL takes the current device).
fn init_rank(
    stream: &CudaStream,
    (rank, world): (usize, usize),
    id: &Id,
) -> Result<sys::ncclComm_t> {
    bind(stream, "ncclCommInitRankConfig")?;
    let mut raw = std::ptr::null_mut();
    let mut cfg = config();
    let uid = sys::ncclUniqueId {
        internal: *id.internal(),
    };
    // SAFETY: NCCL reads `cfg` and writes `raw` before it returns (a group defers only the
    // joining, with its own copy of the id).
    unsafe { result::comm_init_rank_config(&mut raw, world as i32, uid, rank as i32, &mut cfg) }
        .map_err(nccl("ncclCommInitRankConfig"))?;
    Ok(raw)
}

/// Binds `stream`'s context to this thread (the driver and NCCL act on the current device) for
/// `what`.
pub(crate) fn bind(stream: &CudaStream, what: &str) -> Result<()> {
    stream
        .context()
        .bind_to_thread()
        .map_err(|e| GpuError::Comm {
            what: format!("binding the device's context ({what})"),
            err: format!("{e:?}"),
        })
}

/// cudarc's `result::all_reduce` and `result::reduce_scatter`: `(send, recv, count, type, op,
/// comm, stream)`.
type SumCall = unsafe fn(
    *const std::ffi::c_void,
    *mut std::ffi::c_void,
    usize,
    sys::ncclDataType_t,
    sys::ncclRedOp_t,
    sys::ncclComm_t,
    sys::cudaStream_t,
) -> std::result::Result<result::NcclStatus, NcclError>;

/// The tensors of a collective's argument, one per rank.
fn refs<T, B: Borrow<DeviceTensor<T>>>(ts: &[B]) -> Vec<&DeviceTensor<T>> {
    ts.iter().map(Borrow::borrow).collect()
}

/// The device address of element `at` of `t`'s buffer, as NCCL takes it.
fn address<T>(t: &DeviceTensor<T>, at: usize, stream: &CudaStream) -> *mut std::ffi::c_void {
    // event tracking is off (`Gpu::device`): the guard has nothing to record
    let (p, _) = t.buffer().device_ptr(stream);
    (p + (at * std::mem::size_of::<T>()) as u64) as *mut std::ffi::c_void
}

/// A new NCCL unique id as text (its 128 bytes in hex), for [`Devices::open_rank`] in every
/// process of one communicator; [`GpuError::NoComm`] when NCCL cannot be loaded.
pub fn new_comm_id() -> Result<String> {
    probe()?;
    let id = catch_unwind(Id::new)
        .map_err(|_| GpuError::NoComm("ncclGetUniqueId could not be called".into()))?
        .map_err(nccl("ncclGetUniqueId"))?;
    Ok(id
        .internal()
        .iter()
        .map(|&b| format!("{:02x}", b as u8))
        .collect())
}

/// The id [`new_comm_id`] wrote.
fn parse_comm_id(text: &str) -> Result<Id> {
    let bad = || GpuError::Invalid(format!("an NCCL id is 256 hex digits, got {text:?}"));
    if text.len() != 256 || !text.is_ascii() {
        return Err(bad());
    }
    let mut id = [0 as std::ffi::c_char; 128];
    for (i, b) in id.iter_mut().enumerate() {
        let byte = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).map_err(|_| bad())?;
        *b = byte as std::ffi::c_char;
    }
    Ok(Id::uninit(id))
}

/// Whether the GPUs' later work waits for a collective ([`Devices::all_gather`]) or goes on
/// beside it ([`Devices::start_all_gather`]).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Then {
    Wait,
    Overlap,
}

/// `libnccl.so` loads and has every function in [`SYMBOLS`]; else why not.
fn probe() -> Result<()> {
    let nccl = Library {
        file: "libnccl.so",
        what: "an NCCL",
        hint: "where only libnccl.so.2 is installed, put a libnccl.so link to it on \
               LD_LIBRARY_PATH: scripts/nccl-path.sh prints one",
    };
    // SAFETY: only probes whether the library loads.
    let present = unsafe { sys::is_culib_present() };
    library::probe(&nccl, present, first_missing!(sys, SYMBOLS)).map_err(GpuError::NoComm)
}

/// An NCCL error as a [`GpuError`] saying what was being done.
fn nccl(what: &str) -> impl FnOnce(NcclError) -> GpuError + '_ {
    move |e| GpuError::Comm {
        what: what.to_string(),
        err: format!("{e:?}"),
    }
}

/// The elements of `t`, one contiguous range of its buffer: its layout a bijection onto
/// `offset..offset + size` (a whole compact buffer, or a block of rows of a row-major one).
fn contiguous<T>(name: &str, t: &DeviceTensor<T>) -> Result<std::ops::Range<usize>> {
    let l = t.layout();
    if l.cosize() != l.size() {
        return Err(GpuError::Invalid(format!(
            "{name}: a collective moves contiguous elements, got {} o {l} (cosize {} for {} \
             elements)",
            t.offset(),
            l.cosize(),
            l.size()
        )));
    }
    let at = t.offset() as usize;
    Ok(at..at + l.size() as usize)
}

/// Do `a` and `b` map every coordinate to the same element (their coalesced forms agree)?
fn same_function(a: &Layout, b: &Layout) -> bool {
    matches!((coalesce(a), coalesce(b)), (Ok(x), Ok(y)) if x == y) && a.size() == b.size()
}

impl Devices {
    /// Opens GPUs `0..n` with tessel's kernels (`ptx`, as [`Gpu::open`]) and one NCCL
    /// communicator per GPU. [`GpuError::NoDevice`] names how many GPUs there are when fewer
    /// than `n`; [`GpuError::NoComm`] when NCCL cannot be loaded.
    pub fn open(n: usize, ptx: &[(&str, &str)]) -> Result<Self> {
        if n == 0 {
            return Err(GpuError::Invalid("a set of GPUs needs at least one".into()));
        }
        let mut gpus = Vec::with_capacity(n);
        for i in 0..n {
            gpus.push(Gpu::open(i, ptx).map_err(|e| match e {
                GpuError::NoDevice(why) => GpuError::NoDevice(format!(
                    "{n} GPUs asked for, GPU {i} could not be opened: {why}"
                )),
                e => e,
            })?);
        }
        probe()?;
        let streams = gpus
            .iter()
            .map(Gpu::new_stream)
            .collect::<Result<Vec<_>>>()?;
        let id = catch_unwind(Id::new)
            .map_err(|_| GpuError::NoComm("ncclGetUniqueId could not be called".into()))?
            .map_err(nccl("ncclGetUniqueId"))?;
        // every context first: a rank missing from the group would leave the others waiting
        for s in &streams {
            bind(s, "ncclCommInitRankConfig")?;
        }
        // every rank of one process in one group: each call returns at once, the group's end
        // when all have joined
        group_start().map_err(nccl("ncclGroupStart"))?;
        let mut raws = vec![];
        let calls = streams.iter().enumerate().try_for_each(|(r, s)| {
            raws.push(init_rank(s, (r, n), &id)?);
            Ok(())
        });
        let end = group_end().map(|_| ()).map_err(nccl("ncclGroupEnd"));
        // owned at once: aborted on an error below
        let comms: Vec<_> = raws.into_iter().map(|raw| Rc::new(Rank { raw })).collect();
        calls.and(end)?;
        Ok(Self {
            gpus,
            comms,
            streams,
            first: 0,
            world: n,
        })
    }

    /// Opens GPU `rank` of this host as rank `rank` of `world` (one process per GPU, each
    /// calling this with the same `id` from [`new_comm_id`]); returns when every rank has
    /// joined. Errors as [`Devices::open`], and a named one for a rank outside `0..world`.
    pub fn open_rank(rank: usize, world: usize, id: &str, ptx: &[(&str, &str)]) -> Result<Self> {
        if rank >= world {
            return Err(GpuError::Invalid(format!(
                "rank {rank} of {world}: ranks are 0..{world}"
            )));
        }
        let id = parse_comm_id(id)?;
        let gpu = Gpu::open(rank, ptx).map_err(|e| match e {
            GpuError::NoDevice(why) => {
                GpuError::NoDevice(format!("rank {rank} of {world} runs on GPU {rank}: {why}"))
            }
            e => e,
        })?;
        probe()?;
        let stream = gpu.new_stream()?;
        let raw = init_rank(&stream, (rank, world), &id)?;
        let comm = Rc::new(Rank { raw });
        Ok(Self {
            gpus: vec![gpu],
            comms: vec![comm],
            streams: vec![stream],
            first: rank,
            world,
        })
    }

    /// The ranks of the GPUs this process drives (`gpus()`, in order).
    pub fn ranks(&self) -> std::ops::Range<usize> {
        self.first..self.first + self.gpus.len()
    }

    /// Each GPU's later work waits for the collectives started on it so far.
    pub fn wait_comm(&self) -> Result<()> {
        for (g, s) in self.gpus.iter().zip(&self.streams) {
            g.wait_for(s)?;
        }
        Ok(())
    }

    /// The communicator and the communication stream of the `i`-th GPU this process drives.
    pub(crate) fn rank_of(&self, i: usize) -> (&Rc<Rank>, &Arc<CudaStream>) {
        (&self.comms[i], &self.streams[i])
    }

    /// The GPUs this process drives, rank by rank ([`Devices::ranks`]).
    pub fn gpus(&self) -> &[Gpu] {
        &self.gpus
    }

    /// How many ranks (GPUs) the communicators span, in all processes.
    pub fn len(&self) -> usize {
        self.world
    }

    /// Never: [`Devices::open`] refuses an empty set.
    pub fn is_empty(&self) -> bool {
        self.world == 0
    }

    /// Each rank's tensor `ts[r]`, from its GPU, whole (after the work queued so far).
    pub fn download_all<T: Elem, B: Borrow<DeviceTensor<T>>>(
        &self,
        ts: &[B],
    ) -> Result<Vec<Vec<T>>> {
        self.per_rank("download", ts.len())?;
        self.gpus
            .iter()
            .zip(ts)
            .map(|(g, t)| g.download(t.borrow()))
            .collect()
    }

    /// Waits for every GPU's stream and its collectives.
    pub fn sync(&self) -> Result<()> {
        self.wait_comm()?;
        self.gpus.iter().try_for_each(Gpu::sync)
    }

    /// One tensor per rank this process drives.
    fn per_rank(&self, name: &str, n: usize) -> Result<()> {
        if n != self.gpus.len() {
            return Err(GpuError::Invalid(format!(
                "{name}: {n} tensors for {} GPUs (one per rank this process drives)",
                self.gpus.len()
            )));
        }
        Ok(())
    }

    /// Enqueues `f(i)` for the `i`-th GPU this process drives, all in one NCCL group (one
    /// process driving several GPUs must group its calls, or the first blocks waiting for the
    /// others).
    /// The calls go to the communication streams, after the work queued on each GPU so far;
    /// `then` says whether the GPU's later work waits for them.
    fn group(
        &self,
        what: &str,
        then: Then,
        mut f: impl FnMut(usize, &CudaStream) -> std::result::Result<(), NcclError>,
    ) -> Result<()> {
        for (g, s) in self.gpus.iter().zip(&self.streams) {
            g.signal(s)?;
        }
        group_start().map_err(nccl("ncclGroupStart"))?;
        let calls = (0..self.gpus.len())
            .try_for_each(|r| f(r, &self.streams[r]))
            .map_err(nccl(what));
        // the group is closed even when a call failed
        let end = group_end().map_err(nccl("ncclGroupEnd"));
        let enqueued = calls.and(end.map(|_| ()));
        // (also after a failed call: what was enqueued may not outlive its buffers)
        if then == Then::Wait {
            let waited = self.wait_comm();
            return enqueued.and(waited);
        }
        enqueued
    }

    /// The layout `shard`s gather to over `mesh`, a mesh of exactly these GPUs.
    fn gathered_over(&self, what: &str, mesh: &Layout, shard: &Layout) -> Result<Layout> {
        if mesh.size() != self.len() as i64 {
            return Err(GpuError::Invalid(format!(
                "{what}: a mesh {mesh} of {} GPUs over {}",
                mesh.size(),
                self.len()
            )));
        }
        gathered(mesh, shard)
            .map_err(|e| GpuError::Invalid(format!("{what} over {mesh} of {shard}: {e}")))
    }

    /// `ts` are one contiguous range per rank (their ranges returned), each of layout `want`:
    /// the same layout (`exact`), or one mapping every coordinate to the same element.
    fn check_all<T>(
        &self,
        what: &str,
        ts: &[&DeviceTensor<T>],
        want: &Layout,
        exact: bool,
    ) -> Result<Vec<std::ops::Range<usize>>> {
        self.per_rank(what, ts.len())?;
        let mut ranges = Vec::with_capacity(ts.len());
        for (r, t) in ts.iter().enumerate() {
            ranges.push(contiguous(&format!("{what} {r}"), t)?);
            let ok = if exact {
                t.layout() == want
            } else {
                same_function(t.layout(), want)
            };
            if !ok {
                return Err(GpuError::Invalid(format!(
                    "{what} {r} is {}, not {want}",
                    t.layout()
                )));
            }
        }
        Ok(ranges)
    }

    /// The ranges of a collective's `shards` (one compact layout on every rank) and of its
    /// `wholes` (each `gathered(mesh, shard layout)` as a function), checked in that order; each
    /// side named for its errors.
    #[allow(clippy::type_complexity)]
    fn shards_and_wholes<T>(
        &self,
        (what, mesh): (&str, &Layout),
        (shard_name, shards): (&str, &[&DeviceTensor<T>]),
        (whole_name, wholes): (&str, &[&DeviceTensor<T>]),
    ) -> Result<(Vec<std::ops::Range<usize>>, Vec<std::ops::Range<usize>>)> {
        self.per_rank(shard_name, shards.len())?;
        let shard = *shards[0].layout();
        let want = self.gathered_over(what, mesh, &shard)?;
        let s = self.check_all(shard_name, shards, &shard, true)?;
        let w = self.check_all(whole_name, wholes, &want, false)?;
        Ok((s, w))
    }

    /// `outs[r]` = every rank's `shards[q]`, one after another in rank order, on every rank `r`.
    /// `mesh` (a layout from mesh coordinates to ranks, of the shards' rank) says how the shards
    /// tile the whole: each `outs[r]`'s layout must be `gathered(mesh, shard layout)` as a
    /// function (the global tensor as the gathered elements hold it), the shards one compact
    /// layout. Each tensor is a contiguous range of its buffer (a block of rows may be one).
    pub fn all_gather<T: CommElem, S: Borrow<DeviceTensor<T>>, O: BorrowMut<DeviceTensor<T>>>(
        &self,
        mesh: &Layout,
        shards: &[S],
        outs: &mut [O],
    ) -> Result<()> {
        self.all_gather_then(mesh, &refs(shards), &refs(outs), Then::Wait)
    }

    /// [`Devices::all_gather`], the GPUs going on beside it until [`Devices::wait_comm`].
    pub fn start_all_gather<
        T: CommElem,
        S: Borrow<DeviceTensor<T>>,
        O: BorrowMut<DeviceTensor<T>>,
    >(
        &self,
        mesh: &Layout,
        shards: &[S],
        outs: &mut [O],
    ) -> Result<()> {
        self.all_gather_then(mesh, &refs(shards), &refs(outs), Then::Overlap)
    }

    fn all_gather_then<T: CommElem>(
        &self,
        mesh: &Layout,
        shards: &[&DeviceTensor<T>],
        outs: &[&DeviceTensor<T>],
        then: Then,
    ) -> Result<()> {
        let (from, to) = self.shards_and_wholes(
            ("all_gather", mesh),
            ("all_gather shard", shards),
            ("all_gather output", outs),
        )?;
        self.group("ncclAllGather", then, |r, stream| {
            let send = address(shards[r], from[r].start, stream);
            let recv = address(outs[r], to[r].start, stream);
            // SAFETY: both ranges were checked inside their buffers.
            unsafe { self.all_gather_raw::<T>(r, (send, recv), from[r].len(), stream) }
        })
    }

    /// Starts [`Devices::all_gather`] in place: `outs[r]` (each of layout `gathered(mesh,
    /// shard)` as a function, one contiguous range) already holds rank `r`'s own shard (layout
    /// `shard`, compact) at its place among the gathered ones, the `r`-th block of `shard.size()`
    /// elements (where, for a rows mesh, `shard(whole, mesh, r)` is); the other blocks come
    /// from the other ranks. Nothing moves within a GPU. Between tensors in symmetric windows
    /// ([`crate::collectives::window::CommTensor`]) the copy engines move it, on no SM (NCCL 2.28+). The GPUs
    /// go on beside it until [`Devices::wait_comm`].
    pub fn start_all_gather_in_place<T: CommElem, O: BorrowMut<DeviceTensor<T>>>(
        &self,
        mesh: &Layout,
        shard: &Layout,
        outs: &mut [O],
    ) -> Result<()> {
        let what = "all_gather in place";
        if shard.cosize() != shard.size() {
            return Err(GpuError::Invalid(format!(
                "{what}: the shard {shard} is not compact (cosize {} for {} elements)",
                shard.cosize(),
                shard.size()
            )));
        }
        let want = self.gathered_over(what, mesh, shard)?;
        let outs = refs(outs);
        let at = self.check_all(&format!("{what} output"), &outs, &want, false)?;
        let count = shard.size() as usize;
        self.group("ncclAllGather", Then::Overlap, |r, stream| {
            let recv = address(outs[r], at[r].start, stream);
            let send = address(outs[r], at[r].start + (self.first + r) * count, stream);
            // SAFETY: the range was checked inside its buffer; NCCL reads the send block before
            // it writes any other rank's.
            unsafe { self.all_gather_raw::<T>(r, (send, recv), count, stream) }
        })
    }

    /// `ncclAllGather` of `count` elements of `T` on rank `r`'s communicator.
    ///
    /// # Safety
    /// `send` holds `count` elements, `recv` `count` times the ranks, both on `r`'s GPU.
    unsafe fn all_gather_raw<T: CommElem>(
        &self,
        r: usize,
        (send, recv): (*mut std::ffi::c_void, *mut std::ffi::c_void),
        count: usize,
        stream: &CudaStream,
    ) -> std::result::Result<(), NcclError> {
        let (comm, s) = (self.comms[r].raw, stream.cu_stream() as _);
        result::all_gather(send, recv, count, T::as_nccl_type(), comm, s).map(|_| ())
    }

    /// `call` (NCCL's all-reduce or reduce-scatter, of one signature) summing `count` elements of
    /// `T` into `recv` on rank `r`'s communicator.
    ///
    /// # Safety
    /// As `call` needs: `recv` holds `count` elements, `send` as many as `call` reads, on `r`'s
    /// GPU.
    unsafe fn sum_raw<T: CommElem>(
        &self,
        call: SumCall,
        r: usize,
        (send, recv): (*mut std::ffi::c_void, *mut std::ffi::c_void),
        count: usize,
        stream: &CudaStream,
    ) -> std::result::Result<(), NcclError> {
        let (comm, s) = (self.comms[r].raw, stream.cu_stream() as _);
        let sum = sys::ncclRedOp_t::ncclSum;
        call(send, recv, count, T::as_nccl_type(), sum, comm, s).map(|_| ())
    }

    /// `bufs[r]` = the elementwise sum of every rank's `bufs[q]`, on every rank (in place), all
    /// of one compact layout.
    pub fn all_reduce<T: CommElem, B: BorrowMut<DeviceTensor<T>>>(
        &self,
        bufs: &mut [B],
    ) -> Result<()> {
        let bufs = refs(bufs);
        self.per_rank("all_reduce buffer", bufs.len())?;
        let l = *bufs[0].layout();
        let at = self.check_all("all_reduce buffer", &bufs, &l, true)?;
        self.group("ncclAllReduce", Then::Wait, |r, stream| {
            let b = address(bufs[r], at[r].start, stream);
            // SAFETY: the range was checked inside its buffer.
            unsafe { self.sum_raw::<T>(result::all_reduce, r, (b, b), at[r].len(), stream) }
        })
    }

    /// `outs[r]` = rank `r`'s shard of the elementwise sum of every rank's `ins[q]`: each `ins`
    /// the whole tensor as `gathered(mesh, outs' layout)` lays it out (a partial sum on each
    /// rank, e.g. of a GEMM whose K is split), each `outs[r]` the compact shard.
    pub fn reduce_scatter<
        T: CommElem,
        S: Borrow<DeviceTensor<T>>,
        O: BorrowMut<DeviceTensor<T>>,
    >(
        &self,
        mesh: &Layout,
        ins: &[S],
        outs: &mut [O],
    ) -> Result<()> {
        self.reduce_scatter_then(mesh, &refs(ins), &refs(outs), Then::Wait)
    }

    /// [`Devices::reduce_scatter`], the GPUs going on beside it until [`Devices::wait_comm`].
    pub fn start_reduce_scatter<
        T: CommElem,
        S: Borrow<DeviceTensor<T>>,
        O: BorrowMut<DeviceTensor<T>>,
    >(
        &self,
        mesh: &Layout,
        ins: &[S],
        outs: &mut [O],
    ) -> Result<()> {
        self.reduce_scatter_then(mesh, &refs(ins), &refs(outs), Then::Overlap)
    }

    fn reduce_scatter_then<T: CommElem>(
        &self,
        mesh: &Layout,
        ins: &[&DeviceTensor<T>],
        outs: &[&DeviceTensor<T>],
        then: Then,
    ) -> Result<()> {
        let (to, from) = self.shards_and_wholes(
            ("reduce_scatter", mesh),
            ("reduce_scatter output", outs),
            ("reduce_scatter input", ins),
        )?;
        self.group("ncclReduceScatter", then, |r, stream| {
            let send = address(ins[r], from[r].start, stream);
            let recv = address(outs[r], to[r].start, stream);
            // SAFETY: both ranges were checked inside their buffers.
            let call = result::reduce_scatter;
            unsafe { self.sum_raw::<T>(call, r, (send, recv), to[r].len(), stream) }
        })
    }

    /// Starts rebuilding the global tensor on every rank from the shards over `mesh`, as
    /// [`rebuild`] says: `outs[r]` (each the global tensor, one layout: `global`) gets every
    /// rank's `shards[q]` (one compact layout). [`Rebuild::AllGather`]: straight into `outs`
    /// (the gathered elements are the global tensor). [`Rebuild::AllGatherThenCopy`]: into
    /// `staging[r]` (of `gathered(mesh, shard layout)`), then each rank's shard from there to
    /// its place in `outs[r]` (`shard(global, mesh, q)`) by the copy engine, row by row: rank-2
    /// shards of contiguous rows. The GPUs go on beside it until [`Devices::wait_comm`].
    pub fn start_rebuild<T: CommElem, S: Borrow<DeviceTensor<T>>, O: BorrowMut<DeviceTensor<T>>>(
        &self,
        mesh: &Layout,
        shards: &[S],
        staging: &mut [O],
        outs: &mut [O],
    ) -> Result<()> {
        let (shards, staging, outs) = (refs(shards), refs(staging), refs(outs));
        self.per_rank("rebuild shard", shards.len())?;
        self.per_rank("rebuild output", outs.len())?;
        let global = *outs[0].layout();
        let shard_layout = *shards[0].layout();
        let how = rebuild(&global, mesh, &shard_layout)
            .map_err(|e| GpuError::Invalid(format!("rebuilding {global} over {mesh}: {e}")))?;
        if how != Rebuild::AllGatherThenCopy {
            return self.all_gather_then(mesh, &shards, &outs, Then::Overlap);
        }
        // every copy checked before anything is enqueued
        self.per_rank("rebuild staging", staging.len())?;
        let size = shard_layout.size();
        let mut copies = vec![];
        for (r, (&st, &out)) in staging.iter().zip(outs.iter()).enumerate() {
            if out.layout() != &global {
                return Err(GpuError::Invalid(format!(
                    "rebuild output {r} is {}, output 0 {global}",
                    out.layout()
                )));
            }
            for q in 0..self.len() {
                let (to, at) = shard(&global, mesh, q as i64).map_err(|e| {
                    GpuError::Invalid(format!("shard {q} of {global} over {mesh}: {e}"))
                })?;
                let from = (st.offset() + q as i64 * size, shard_layout);
                let into = (out.offset() + at, to);
                rows_of_copy((st, from), (out, into))?;
                copies.push((r, from, into));
            }
        }
        self.all_gather_then(mesh, &shards, &staging, Then::Overlap)?;
        for (r, from, into) in copies {
            copy_rows(&self.streams[r], (staging[r], from), (outs[r], into))?;
        }
        Ok(())
    }
}

/// The rows, columns and row strides of a copy of [`copy_rows`], or why the copy engine cannot
/// make it: each side `offset o layout` of its tensor's buffer, rank-2 of one shape, unit
/// stride along mode 1 (rows of contiguous elements, any row stride), inside its buffer.
fn rows_of_copy<T>(
    (src, (so, sl)): (&DeviceTensor<T>, (i64, Layout)),
    (dst, (d_o, dl)): (&DeviceTensor<T>, (i64, Layout)),
) -> Result<(i64, i64, i64, i64)> {
    let rows_of = |l: &Layout| match (l.rank(), l.depth() <= 1, l.strides()) {
        (2, true, [pitch, 1]) if *pitch >= l.shapes()[1] => {
            Some((l.shapes()[0], l.shapes()[1], *pitch))
        }
        _ => None,
    };
    let bad = || {
        GpuError::Invalid(format!(
            "the copy engine copies rows of contiguous elements: {so} o {sl} into {d_o} o {dl}"
        ))
    };
    let ((rows, cols, sp), (drows, dcols, dp)) =
        (rows_of(&sl).ok_or_else(bad)?, rows_of(&dl).ok_or_else(bad)?);
    if (rows, cols) != (drows, dcols) {
        return Err(bad());
    }
    let inside =
        |len: usize, o: i64, pitch: i64| o >= 0 && o + (rows - 1) * pitch + cols <= len as i64;
    if !inside(src.len(), so, sp) || !inside(dst.len(), d_o, dp) {
        return Err(bad());
    }
    Ok((rows, cols, sp, dp))
}

/// `dst = src` by the copy engine on `stream` (`cuMemcpy2DAsync`), as [`rows_of_copy`] checks.
fn copy_rows<T: CommElem>(
    stream: &CudaStream,
    (src, (so, sl)): (&DeviceTensor<T>, (i64, Layout)),
    (dst, (d_o, dl)): (&DeviceTensor<T>, (i64, Layout)),
) -> Result<()> {
    let (rows, cols, sp, dp) = rows_of_copy((src, (so, sl)), (dst, (d_o, dl)))?;
    let e = std::mem::size_of::<T>();
    // the raw addresses: event tracking is off (`Gpu::device`), the streams are ordered by hand
    let base_src = address(src, 0, stream) as u64;
    let base_dst = address(dst, 0, stream) as u64;
    let copy = cu::CUDA_MEMCPY2D {
        srcXInBytes: 0,
        srcY: 0,
        srcMemoryType: cu::CUmemorytype::CU_MEMORYTYPE_DEVICE,
        srcHost: std::ptr::null(),
        srcDevice: base_src + (so as usize * e) as u64,
        srcArray: std::ptr::null_mut(),
        srcPitch: sp as usize * e,
        dstXInBytes: 0,
        dstY: 0,
        dstMemoryType: cu::CUmemorytype::CU_MEMORYTYPE_DEVICE,
        dstHost: std::ptr::null_mut(),
        dstDevice: base_dst + (d_o as usize * e) as u64,
        dstArray: std::ptr::null_mut(),
        dstPitch: dp as usize * e,
        WidthInBytes: cols as usize * e,
        Height: rows as usize,
    };
    // the driver call acts on the thread's current context: the stream's device
    bind(stream, "rebuilding the global tensor")?;
    // SAFETY: both ranges were checked inside their buffers above.
    let r = unsafe { cu::cuMemcpy2DAsync_v2(&copy, stream.cu_stream()) };
    if r != cu::CUresult::CUDA_SUCCESS {
        return Err(GpuError::Comm {
            what: "cuMemcpy2DAsync (rebuilding the global tensor)".into(),
            err: format!("{r:?}"),
        });
    }
    Ok(())
}
