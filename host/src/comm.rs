//! Collectives across the GPUs of one host, over NCCL (cudarc's `nccl`, loaded at run time): one
//! process drives every GPU of a [`Devices`] set (`ncclCommInitAll`), each collective one NCCL
//! group over the ranks, on each GPU's own stream.
//!
//! The tensors' layouts are checked against the mesh algebra (`layout_core::mesh`) before
//! anything is enqueued: an all-gather's outputs must be the layout the gathered shards form
//! ([`layout_core::gathered`]), a reduce-scatter's inputs the layout their outputs gather to, an
//! all-reduce's buffers one compact layout. NCCL is looked up as cudarc names it (`libnccl.so`,
//! ...); where only `libnccl.so.2` is installed (pip's `nvidia-nccl-cu12`, torch's), a
//! `libnccl.so` link to it on `LD_LIBRARY_PATH` serves (`scripts/nccl-path.sh` makes one).

use crate::elem::Elem;
use crate::gpu::{DeviceTensor, Gpu, GpuError, Result};
use cudarc::nccl::{group_end, group_start, result::NcclError, sys, Comm, NcclType, ReduceOp};
use layout_core::{coalesce, gathered, Layout};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// The NCCL functions tessel calls, probed before the first one is (cudarc panics on a missing
/// one).
const SYMBOLS: &[&str] = &[
    "ncclCommInitAll",
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

/// The GPUs `0..n` of this host with one NCCL communicator each (rank `r` on GPU `r`).
pub struct Devices {
    gpus: Vec<Gpu>,
    comms: Vec<Comm>,
}

/// `libnccl.so` loads and has every function in [`SYMBOLS`]; else why not.
fn probe() -> Result<()> {
    // SAFETY: only probes whether the library loads.
    if !unsafe { sys::is_culib_present() } {
        return Err(GpuError::NoComm(
            "libnccl.so could not be loaded (where only libnccl.so.2 is installed, put a \
             libnccl.so link to it on LD_LIBRARY_PATH: scripts/nccl-path.sh prints one)"
                .into(),
        ));
    }
    // SAFETY: loads the library and looks the names up; nothing is called.
    let missing = catch_unwind(|| unsafe {
        let lib = sys::culib();
        SYMBOLS
            .iter()
            .find(|s| lib.get::<unsafe extern "C" fn()>(s.as_bytes()).is_err())
            .copied()
    });
    match missing {
        Err(_) => Err(GpuError::NoComm("libnccl.so could not be loaded".into())),
        Ok(Some(f)) => Err(GpuError::NoComm(format!(
            "libnccl.so has no {f} (too old an NCCL?)"
        ))),
        Ok(None) => Ok(()),
    }
}

/// An NCCL error as a [`GpuError`] saying what was being done.
fn nccl(what: &str) -> impl FnOnce(NcclError) -> GpuError + '_ {
    move |e| GpuError::Comm {
        what: what.to_string(),
        err: format!("{e:?}"),
    }
}

/// `t` is a whole compact buffer: offset 0, its layout a bijection onto the buffer.
fn whole<T>(name: &str, t: &DeviceTensor<T>) -> Result<()> {
    let l = t.layout();
    if t.offset() != 0 || l.cosize() != l.size() || t.len() as i64 != l.size() {
        return Err(GpuError::Invalid(format!(
            "{name}: a collective moves whole compact buffers, got {} o {l} over {} elements",
            t.offset(),
            t.len()
        )));
    }
    Ok(())
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
        let streams = gpus.iter().map(|g| g.stream().clone()).collect();
        let comms = catch_unwind(AssertUnwindSafe(|| Comm::from_devices(streams)))
            .map_err(|_| GpuError::NoComm("ncclCommInitAll could not be called".into()))?
            .map_err(nccl("ncclCommInitAll"))?;
        Ok(Self { gpus, comms })
    }

    /// The GPUs, rank by rank.
    pub fn gpus(&self) -> &[Gpu] {
        &self.gpus
    }

    /// How many GPUs (ranks).
    pub fn len(&self) -> usize {
        self.gpus.len()
    }

    /// Never: [`Devices::open`] refuses an empty set.
    pub fn is_empty(&self) -> bool {
        self.gpus.is_empty()
    }

    /// Waits for every GPU's stream.
    pub fn sync(&self) -> Result<()> {
        self.gpus.iter().try_for_each(Gpu::sync)
    }

    /// One tensor per rank.
    fn per_rank(&self, name: &str, n: usize) -> Result<()> {
        if n != self.len() {
            return Err(GpuError::Invalid(format!(
                "{name}: {n} tensors for {} GPUs (one per rank)",
                self.len()
            )));
        }
        Ok(())
    }

    /// Enqueues `f(rank)` for every rank in one NCCL group (one process driving several GPUs
    /// must group its calls, or the first blocks waiting for the others).
    fn group(
        &self,
        what: &str,
        mut f: impl FnMut(usize) -> std::result::Result<(), NcclError>,
    ) -> Result<()> {
        group_start().map_err(nccl("ncclGroupStart"))?;
        let calls = (0..self.len()).try_for_each(&mut f).map_err(nccl(what));
        // the group is closed even when a call failed
        let end = group_end().map_err(nccl("ncclGroupEnd"));
        calls.and(end.map(|_| ()))
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

    /// `ts` are one whole compact buffer per rank, each of layout `want`: the same layout
    /// (`exact`), or one mapping every coordinate to the same element.
    fn check_all<T>(
        &self,
        what: &str,
        ts: &[DeviceTensor<T>],
        want: &Layout,
        exact: bool,
    ) -> Result<()> {
        self.per_rank(what, ts.len())?;
        for (r, t) in ts.iter().enumerate() {
            whole(&format!("{what} {r}"), t)?;
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
        Ok(())
    }

    /// `outs[r]` = every rank's `shards[q]`, one after another in rank order, on every rank `r`.
    /// `mesh` (a layout from mesh coordinates to ranks, of the shards' rank) says how the shards
    /// tile the whole: each `outs[r]`'s layout must be `gathered(mesh, shard layout)` as a
    /// function (the global tensor as the gathered buffer holds it), the shards one compact
    /// layout.
    pub fn all_gather<T: CommElem>(
        &self,
        mesh: &Layout,
        shards: &[DeviceTensor<T>],
        outs: &mut [DeviceTensor<T>],
    ) -> Result<()> {
        self.per_rank("all_gather shard", shards.len())?;
        let shard = *shards[0].layout();
        let want = self.gathered_over("all_gather", mesh, &shard)?;
        self.check_all("all_gather shard", shards, &shard, true)?;
        self.check_all("all_gather output", outs, &want, false)?;
        self.group("ncclAllGather", |r| {
            let (s, o) = (shards[r].buffer(), outs[r].buffer_mut());
            self.comms[r].all_gather(s, o).map(|_| ())
        })
    }

    /// `bufs[r]` = the elementwise sum of every rank's `bufs[q]`, on every rank (in place), all
    /// of one compact layout.
    pub fn all_reduce<T: CommElem>(&self, bufs: &mut [DeviceTensor<T>]) -> Result<()> {
        self.per_rank("all_reduce buffer", bufs.len())?;
        let l = *bufs[0].layout();
        self.check_all("all_reduce buffer", bufs, &l, true)?;
        self.group("ncclAllReduce", |r| {
            self.comms[r]
                .all_reduce_in_place(bufs[r].buffer_mut(), &ReduceOp::Sum)
                .map(|_| ())
        })
    }

    /// `outs[r]` = rank `r`'s shard of the elementwise sum of every rank's `ins[q]`: each `ins`
    /// the whole tensor as `gathered(mesh, outs' layout)` lays it out (a partial sum on each
    /// rank, e.g. of a GEMM whose K is split), each `outs[r]` the compact shard. (Not yet run on
    /// GPUs: the K-split GEMM that needs it is not built.)
    pub fn reduce_scatter<T: CommElem>(
        &self,
        mesh: &Layout,
        ins: &[DeviceTensor<T>],
        outs: &mut [DeviceTensor<T>],
    ) -> Result<()> {
        self.per_rank("reduce_scatter output", outs.len())?;
        let shard = *outs[0].layout();
        let want = self.gathered_over("reduce_scatter", mesh, &shard)?;
        self.check_all("reduce_scatter output", outs, &shard, true)?;
        self.check_all("reduce_scatter input", ins, &want, false)?;
        self.group("ncclReduceScatter", |r| {
            let (i, o) = (ins[r].buffer(), outs[r].buffer_mut());
            self.comms[r]
                .reduce_scatter(i, o, &ReduceOp::Sum)
                .map(|_| ())
        })
    }
}
