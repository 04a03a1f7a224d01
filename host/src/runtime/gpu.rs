//! The CUDA runtime, on `cudarc`'s driver API loaded at run time: a machine without a driver or a
//! GPU gets [`GpuError::NoDriver`] / [`GpuError::NoDevice`], and everything else still works.
//!
//! [`Gpu`] holds a context, a stream and the module of the embedded PTX for the device's arch.
//! [`DeviceTensor`] is a typed device buffer that carries its `layout-core` layout; each kernel's
//! launcher checks the layouts it is given and every driver call's result.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use cudarc::driver::{
    sys, CudaContext, CudaFunction, CudaSlice, CudaStream, DevicePtr, DeviceRepr, DriverError,
    LaunchConfig,
};
use layout_core::{FlatLayout, FlatTensor, IntTuple, Layout};
use tessel_gpu::axpby::{Axpby, AxpbyParams};
use tessel_gpu::copy::{resident_smem, BulkCopyParams, CopyParams, VecCopy, ATOMS, BULK_THREADS};
use tessel_gpu::ctx::{Entry, Geometry};

pub use crate::runtime::module::Module;
use crate::tune::{fewest_smem, CopyConfig, RmsConfig, TransposeConfig, VEC_ATOMS};
use tessel_gpu::mem::{Device, Gmem};
use tessel_gpu::rmsnorm::RmsParams;
use tessel_gpu::transpose::TransposeParams;

use crate::elem::{Elem, RmsElem, TransposeTile};

/// Why a GPU operation did not happen.
#[derive(Debug)]
pub enum GpuError {
    /// The CUDA driver library (`libcuda.so`) could not be loaded.
    NoDriver,
    /// The driver found no device (or not the one asked for).
    NoDevice(String),
    /// No PTX was built for an arch this device runs.
    NoPtx {
        /// The device's arch.
        arch: String,
        /// The archs built.
        built: Vec<String>,
    },
    /// A driver call failed.
    Driver {
        /// What was being done.
        what: String,
        /// The driver's error.
        err: DriverError,
    },
    /// The arguments do not fit the kernel.
    Invalid(String),
    /// cuBLAS (`libcublas.so`) could not be loaded, or lacks a function tessel calls: why.
    NoBlas(String),
    /// A cuBLAS call failed.
    Blas {
        /// What was being done.
        what: String,
        /// cuBLAS's status.
        err: cudarc::cublas::result::CublasError,
    },
    /// NCCL (`libnccl.so`) could not be loaded, or lacks a function tessel calls: why.
    NoComm(String),
    /// An NCCL call failed.
    Comm {
        /// What was being done.
        what: String,
        /// NCCL's result.
        err: String,
    },
}

impl fmt::Display for GpuError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GpuError::NoDriver => {
                write!(f, "no GPU: the CUDA driver (libcuda.so) is not installed")
            }
            GpuError::NoDevice(why) => write!(f, "no GPU: {why}"),
            GpuError::NoPtx { arch, built } => write!(
                f,
                "no PTX for this GPU ({arch}): built for {} (rebuild with TESSEL_ARCH={arch})",
                if built.is_empty() {
                    "none".to_string()
                } else {
                    built.join(", ")
                }
            ),
            GpuError::Driver { what, err } => write!(f, "{what}: {err}"),
            GpuError::Invalid(why) => write!(f, "invalid arguments: {why}"),
            GpuError::NoBlas(why) => write!(f, "no cuBLAS: {why}"),
            GpuError::Blas { what, err } => write!(f, "{what}: {err}"),
            GpuError::NoComm(why) => write!(f, "no NCCL: {why}"),
            GpuError::Comm { what, err } => write!(f, "{what}: {err}"),
        }
    }
}

impl std::error::Error for GpuError {}

/// `Result` with [`GpuError`].
pub type Result<T> = std::result::Result<T, GpuError>;

pub(crate) trait Context<T> {
    fn ctx(self, what: impl FnOnce() -> String) -> Result<T>;
}
impl<T> Context<T> for std::result::Result<T, DriverError> {
    fn ctx(self, what: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|err| GpuError::Driver { what: what(), err })
    }
}

/// `(rows,cols):(cols,1)`.
pub fn row_major(rows: i64, cols: i64) -> Result<Layout> {
    IntTuple::from_ints(&[rows, cols])
        .and_then(|s| Layout::from_parts(s, &[cols, 1]))
        .map_err(|e| GpuError::Invalid(format!("({rows},{cols}):({cols},1): {e}")))
}

/// A typed buffer in device memory and the layout that gives its elements' coordinates.
///
/// The tensor's element at coordinate `c` is element `offset + layout(c)` of the buffer: any
/// layout (row- or column-major, padded, strided) whose elements lie inside the buffer, and views
/// of a part of it ([`DeviceTensor::slice`], [`DeviceTensor::local_tile`]).
pub struct DeviceTensor<T> {
    buf: CudaSlice<T>,
    offset: i64,
    layout: Layout,
}

/// `l` as a kernel parameter `name` of rank `N`: flat (`(s_0,..,s_{N-1}):(d_0,..)`, an integer
/// for `N == 1`), or an error naming what the kernel needs and what it got.
pub fn flat_param<const N: usize>(name: &str, l: &Layout) -> Result<FlatLayout<N>> {
    let flat = l.depth() <= 1 && l.shapes().len() == N && (N == 1 || l.rank() == N);
    FlatLayout::from_layout(l)
        .ok()
        .filter(|_| flat)
        .ok_or_else(|| {
            GpuError::Invalid(format!(
                "{name} needs a flat rank-{N} layout, got {l} (rank {}, depth {})",
                l.rank(),
                l.depth()
            ))
        })
}

/// Are `offset + layout(c)` inside `0..len` for every coordinate `c`?
fn check_inside(len: usize, offset: i64, layout: &Layout) -> Result<()> {
    let (mut lo, mut hi) = (offset, offset);
    for (&s, &d) in layout.shapes().iter().zip(layout.strides()) {
        let reach = (s - 1).saturating_mul(d);
        if reach < 0 {
            lo = lo.saturating_add(reach);
        } else {
            hi = hi.saturating_add(reach);
        }
    }
    if lo < 0 || hi >= len as i64 {
        return Err(GpuError::Invalid(format!(
            "{offset} o {layout} reaches elements {lo}..={hi}, outside the buffer of {len}"
        )));
    }
    Ok(())
}

impl<T> DeviceTensor<T> {
    /// The tensor as a kernel's rank-`N` parameter `name`: its device address and its layout,
    /// which must be flat of rank `N` (`(s_0,..,s_{N-1}):(d_0,..)`, an integer for `N == 1`).
    pub fn param<const N: usize>(&self, name: &str) -> Result<FlatTensor<Gmem<T>, N>> {
        let layout = flat_param::<N>(name, &self.layout)?;
        let (ptr, _) = self.buf.device_ptr(self.buf.stream());
        let ptr = ptr + (self.offset as u64) * std::mem::size_of::<T>() as u64;
        Ok(FlatTensor::new(Gmem(ptr as *mut T), layout))
    }
    /// Makes this the tensor `offset o layout` of the same buffer (as [`DeviceTensor::view`],
    /// in place: one buffer seen chunk by chunk); `Err`, and unchanged, when an element falls
    /// outside the buffer.
    pub fn set_view(&mut self, offset: i64, layout: Layout) -> Result<()> {
        check_inside(self.buf.len(), offset, &layout)?;
        self.offset = offset;
        self.layout = layout;
        Ok(())
    }
    /// The same buffer as the tensor `offset o layout` (element `offset + layout(c)` at `c`);
    /// `Err` when an element falls outside the buffer.
    pub fn view(self, offset: i64, layout: Layout) -> Result<Self> {
        check_inside(self.buf.len(), offset, &layout)?;
        Ok(Self {
            buf: self.buf,
            offset,
            layout,
        })
    }
    /// `tensor(c)` with `_` in `c`: the sub-tensor of the `_` modes (a row, a column, a block of a
    /// larger tensor), over the same buffer.
    pub fn slice(self, c: &IntTuple) -> Result<Self> {
        let (l, off) = self
            .layout
            .slice(c)
            .map_err(|e| GpuError::Invalid(format!("slicing {} at {c}: {e}", self.layout)))?;
        let offset = self.offset + off;
        self.view(offset, l)
    }
    /// `local_tile(tensor, tile, c)`: the tile at tile coordinate `c`, over the same buffer
    /// (a tile overhanging the tensor's edge is refused when it leaves the buffer).
    pub fn local_tile(self, tile: &IntTuple, c: &IntTuple) -> Result<Self> {
        let (l, off) = layout_core::local_tile(&self.layout, tile, c).map_err(|e| {
            GpuError::Invalid(format!(
                "local_tile of {} by {tile} at {c}: {e}",
                self.layout
            ))
        })?;
        let offset = self.offset + off;
        self.view(offset, l)
    }
    /// The offset of the tensor's origin in the buffer.
    pub fn offset(&self) -> i64 {
        self.offset
    }
    /// The layout.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }
    /// Elements in the buffer (the layout's cosize).
    pub fn len(&self) -> usize {
        self.buf.len()
    }
    /// Is the buffer empty?
    pub fn is_empty(&self) -> bool {
        self.buf.len() == 0
    }
    /// The buffer.
    pub fn buffer(&self) -> &CudaSlice<T> {
        &self.buf
    }
    /// The buffer, given up (a window's memory, which NCCL frees).
    pub(crate) fn into_buffer(self) -> CudaSlice<T> {
        self.buf
    }
    /// `buf` (memory allocated elsewhere, on this GPU: a window's) as the vector `len:1`; `Err`
    /// for an empty buffer.
    pub(crate) fn adopt(buf: CudaSlice<T>) -> std::result::Result<Self, CudaSlice<T>> {
        match Layout::int(buf.len() as i64, 1) {
            Ok(layout) if !buf.is_empty() => Ok(Self {
                buf,
                offset: 0,
                layout,
            }),
            _ => Err(buf),
        }
    }
}

/// The GEMMs whose stages the copy engine fills, launched with tensor maps of A and B
/// ([`Gpu::gemm_mapped`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MappedGemm {
    /// `gemm_tma_*` (sm_90): `gemm_sm80`'s partitioning and `mma.sync`.
    Tma,
    /// `gemm_sm90_*` (sm_90a PTX): wgmma, a producer warpgroup, persistent blocks.
    Sm90,
}

impl MappedGemm {
    /// Both.
    pub const ALL: [MappedGemm; 2] = [MappedGemm::Tma, MappedGemm::Sm90];
    /// The entry points' prefix.
    pub fn name(self) -> &'static str {
        match self {
            MappedGemm::Tma => "gemm_tma",
            MappedGemm::Sm90 => "gemm_sm90",
        }
    }
    /// What sets it apart, for a report line.
    pub fn what(self) -> &'static str {
        match self {
            MappedGemm::Tma => "TMA loads",
            MappedGemm::Sm90 => "wgmma, warp-specialized, persistent",
        }
    }
    /// The entry point of `I` inputs into `O`.
    pub fn entry<I: Elem, O: Elem>(self) -> String {
        format!("{}_{}_{}", self.name(), I::NAME, O::NAME)
    }
}

/// One device, its stream and the loaded kernels.
///
/// Everything a launch needs besides its arguments — the kernels' handles, their shared-memory
/// limits, the RMSNorm staging size — is settled here once, so that a launch timed between two
/// events does no other host work.
pub struct Gpu {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    kernels: HashMap<&'static str, CudaFunction>,
    name: String,
    arch: String,
    /// The compute capability, `10 major + minor`.
    cc: u32,
    sms: u32,
    /// `gemm_sm90`'s clusters: its grid (at most `sm90_max_clusters`).
    sm90_clusters: std::sync::atomic::AtomicI64,
    /// `gemm_sm90`'s clusters resident at once (0 without sm_90a PTX).
    sm90_max_clusters: i64,
    smem_optin: i64,
    rmsnorm_smem: i64,
    /// Memory clock (kHz) and bus width (bits).
    memory: [i64; 2],
}

/// The arch (`.target sm_XX`) and text of the PTX file `path`; `Err` names the file and what is
/// missing.
fn ptx_file(path: &std::path::Path) -> Result<(String, String)> {
    let bad = |why: String| GpuError::Invalid(format!("TESSEL_PTX={}: {why}", path.display()));
    let text = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
    let arch = text
        .lines()
        .find_map(|l| l.trim().strip_prefix(".target "))
        .and_then(|t| t.split([',', ' ']).next())
        .ok_or_else(|| bad("no `.target sm_XX` line: not PTX".into()))?
        .to_string();
    Ok((arch, text))
}

impl Gpu {
    /// Opens device `ordinal` and loads tessel's own kernels from the PTX built for the newest
    /// arch in `ptx` (pairs of `sm_XX` and PTX text: `tessel::ptx::PTX`) that the device runs.
    /// A program with kernels of its own opens the device with [`Gpu::device`] and loads them
    /// with [`Gpu::load`].
    ///
    /// `TESSEL_PTX=<file>` loads that PTX instead, for the arch its `.target` line names (a kernel
    /// change tried without rebuilding the host: it must define every kernel the host launches).
    pub fn open(ordinal: usize, ptx: &[(&str, &str)]) -> Result<Self> {
        let mut gpu = Self::device(ordinal)?;
        let file = match std::env::var_os("TESSEL_PTX").filter(|v| !v.is_empty()) {
            Some(path) => Some(ptx_file(std::path::Path::new(&path))?),
            None => None,
        };
        let table = file.as_ref().map(|(a, t)| [(a.as_str(), t.as_str())]);
        let (arch, text) = gpu.pick_ptx(table.as_ref().map_or(ptx, |t| &t[..]))?;
        let best_90a = arch.sm == 90 && arch.specific;
        let module = gpu
            .ctx
            .load_module(cudarc::nvrtc::Ptx::from_src(text))
            .ctx(|| format!("loading the PTX on {}", gpu.arch))?;
        // RMSNorm stages rows in all a block can have, or TESSEL_RMSNORM_SMEM bytes (a tuning
        // knob: less staging, more blocks per SM)
        gpu.rmsnorm_smem = std::env::var("TESSEL_RMSNORM_SMEM")
            .ok()
            .and_then(|v| v.parse::<i64>().ok())
            .map_or(gpu.smem_optin, |v| v.clamp(0, gpu.smem_optin));
        // the sm_90 kernels (the copy engine) are in the PTX of sm_90 and newer only
        let sm90 = arch.sm >= 90;
        let extra = tessel_gpu::sm90_kernels().filter(|_| sm90);
        // and the wgmma ones in sm_90a PTX only
        let extra = extra.chain(tessel_gpu::sm90a_kernels().filter(|_| best_90a));
        for k in tessel_gpu::all_kernels().chain(extra).map(|k| k.name) {
            let f = crate::runtime::module::entry(&module, k, gpu.rmsnorm_smem)?;
            gpu.kernels.insert(k, f);
        }
        // gemm_sm90's clusters that fit on the device at once (its grid)
        gpu.sm90_max_clusters = match gpu.kernels.get("gemm_sm90_bf16_bf16") {
            Some(f) => {
                use tessel_gpu::gemm_sm90::{CLUSTER_M, SMEM_BYTES, THREADS};
                let cfg = LaunchConfig {
                    grid_dim: (CLUSTER_M as u32, 1, 1),
                    block_dim: (THREADS as u32, 1, 1),
                    shared_mem_bytes: SMEM_BYTES as u32,
                };
                i64::from(
                    f.occupancy_max_active_clusters(cfg, &gpu.stream)
                        .ctx(|| "gemm_sm90: clusters that fit at once".into())?,
                )
            }
            None => 0,
        };
        gpu.sm90_clusters = gpu.sm90_max_clusters.into();
        Ok(gpu)
    }

    /// How many devices the driver reports; [`GpuError::NoDriver`] / [`GpuError::NoDevice`] as
    /// [`Gpu::device`].
    pub fn count() -> Result<usize> {
        // SAFETY: only probes whether the library loads.
        if !unsafe { sys::is_culib_present() } {
            return Err(GpuError::NoDriver);
        }
        CudaContext::device_count()
            .map(|n| n.max(0) as usize)
            .map_err(|e| GpuError::NoDevice(format!("the driver reports no device ({e})")))
    }

    /// Opens device `ordinal` with no kernels loaded: a context, its stream (every launch and
    /// copy of this `Gpu` and of the [`Module`]s it loads goes to it, in order) and the device's
    /// properties. [`GpuError::NoDriver`] / [`GpuError::NoDevice`] when there is none.
    pub fn device(ordinal: usize) -> Result<Self> {
        // SAFETY: only probes whether the library loads.
        if !unsafe { sys::is_culib_present() } {
            return Err(GpuError::NoDriver);
        }
        let count = CudaContext::device_count()
            .map_err(|e| GpuError::NoDevice(format!("the driver reports no device ({e})")))?;
        if ordinal as i32 >= count {
            return Err(GpuError::NoDevice(format!(
                "device {ordinal} asked for, {count} present"
            )));
        }
        let ctx = CudaContext::new(ordinal).ctx(|| format!("opening device {ordinal}"))?;
        let (major, minor) = ctx
            .compute_capability()
            .ctx(|| "compute capability".into())?;
        let cc = (major * 10 + minor) as u32;
        let name = ctx.name().ctx(|| "device name".into())?;
        let sms = ctx
            .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
            .ctx(|| "multiprocessor count".into())? as u32;
        let smem_optin = ctx
            .attribute(
                sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
            )
            .ctx(|| "shared memory per block".into())? as i64;
        // what tells an H100 from an H200 beside the name (0 where the driver does not say)
        let memory = [
            sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE,
            sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH,
        ]
        .map(|a| ctx.attribute(a).unwrap_or(0) as i64);
        // one stream, ordered: cudarc's per-buffer event tracking would only add work per launch
        // SAFETY: every launch and copy of this type goes to the one stream.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.default_stream();
        Ok(Self {
            ctx,
            stream,
            kernels: HashMap::new(),
            name,
            arch: format!("sm_{cc}"),
            cc,
            sms,
            smem_optin,
            rmsnorm_smem: smem_optin,
            sm90_clusters: 0.into(),
            sm90_max_clusters: 0,
            memory,
        })
    }

    /// The PTX in `ptx` built for the newest arch that runs on this device (`sm_90a` before
    /// `sm_90`), or [`GpuError::NoPtx`] naming the archs built.
    fn pick_ptx<'a>(&self, ptx: &[(&str, &'a str)]) -> Result<(crate::arch::Arch, &'a str)> {
        ptx.iter()
            .filter_map(|(a, p)| Some((crate::arch::Arch::parse(a).ok()?, *p)))
            .filter(|(a, _)| a.runs_on(self.cc))
            .max_by_key(|(a, _)| *a)
            .ok_or_else(|| GpuError::NoPtx {
                arch: self.arch.clone(),
                built: ptx.iter().map(|(a, _)| a.to_string()).collect(),
            })
    }

    /// Loads a kernel crate's PTX — the table `tessel-build` wrote (`tessel::include_ptx!`),
    /// the newest arch that runs here. Its entries are found at their first launch
    /// ([`Module::launch`]): each must be in the PTX, taking one by-value parameter of the size the
    /// host passes; `Err` says which is not.
    pub fn load(&self, ptx: &[(&str, &str)]) -> Result<Module> {
        let (arch, text) = self.pick_ptx(ptx)?;
        let module = self
            .ctx
            .load_module(cudarc::nvrtc::Ptx::from_src(text))
            .ctx(|| format!("loading the PTX on {}", self.arch))?;
        Ok(Module::new(
            self.stream.clone(),
            arch.to_string(),
            (module, text.to_string()),
            i64::from(self.sms),
            self.smem_optin,
        ))
    }

    /// The device's name.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// `sm_XX`.
    pub fn arch(&self) -> &str {
        &self.arch
    }
    /// `gemm_sm90`'s grid, in clusters: those resident at once unless
    /// [`Gpu::set_sm90_clusters`] set fewer (0 without sm_90a PTX).
    pub fn sm90_clusters(&self) -> i64 {
        self.sm90_clusters
            .load(std::sync::atomic::Ordering::Relaxed)
    }
    /// Multiprocessors.
    pub fn sms(&self) -> u32 {
        self.sms
    }
    /// What the tuner's cache keys a device by: its name, multiprocessors, memory clock and bus
    /// width (`crate::tune::DeviceId`).
    pub fn device_id(&self) -> crate::tune::DeviceId {
        crate::tune::DeviceId {
            name: self.name.clone(),
            sms: i64::from(self.sms),
            memory_khz: self.memory[0],
            bus_bits: self.memory[1],
        }
    }
    /// The most shared memory a block can have (after opting in).
    pub fn smem_per_block(&self) -> i64 {
        self.smem_optin
    }
    /// Shared memory an RMSNorm block stages its rows in: all a block can have, or
    /// `TESSEL_RMSNORM_SMEM` bytes (a tuning knob: less staging, more blocks per SM), as read when
    /// the device was opened.
    pub fn rmsnorm_smem(&self) -> i64 {
        self.rmsnorm_smem
    }

    fn function(&self, name: &str) -> Result<&CudaFunction> {
        self.kernels
            .get(name)
            .ok_or_else(|| GpuError::Invalid(format!("no kernel {name}")))
    }

    /// Copies `host` to the device as a tensor of `layout` (`len == cosize(layout)`).
    pub fn upload<T: DeviceRepr + Copy>(
        &self,
        host: &[T],
        layout: Layout,
    ) -> Result<DeviceTensor<T>> {
        if host.len() as i64 != layout.cosize() {
            return Err(GpuError::Invalid(format!(
                "{} elements for layout {layout} of cosize {}",
                host.len(),
                layout.cosize()
            )));
        }
        self.upload_buffer(host)?.view(0, layout)
    }
    /// Copies `host` to the device as a vector `len:1` (re-view it with [`DeviceTensor::view`]).
    pub fn upload_buffer<T: DeviceRepr + Copy>(&self, host: &[T]) -> Result<DeviceTensor<T>> {
        let layout = Layout::int(host.len().max(1) as i64, 1)
            .map_err(|e| GpuError::Invalid(e.to_string()))?;
        let buf = self
            .stream
            .clone_htod(host)
            .ctx(|| "copy to the device".into())?;
        Ok(DeviceTensor {
            buf,
            offset: 0,
            layout,
        })
    }
    /// Copies `host` into the whole of `t`'s buffer (of `host.len()` elements).
    pub(crate) fn write_buffer<T: Elem>(&self, t: &mut DeviceTensor<T>, host: &[T]) -> Result<()> {
        if host.len() != t.buf.len() {
            return Err(GpuError::Invalid(format!(
                "{} elements for a buffer of {}",
                host.len(),
                t.buf.len()
            )));
        }
        self.stream
            .memcpy_htod(host, &mut t.buf)
            .ctx(|| "copy to the device".into())
    }
    /// A tensor of `layout` with every element `fill`.
    pub fn filled<T: Elem>(&self, layout: Layout, fill: T) -> Result<DeviceTensor<T>> {
        self.upload(&vec![fill; layout.cosize() as usize], layout)
    }
    /// The tensor's buffer, copied to the host (waits for the stream).
    pub fn download<T: DeviceRepr + Copy>(&self, t: &DeviceTensor<T>) -> Result<Vec<T>> {
        self.stream
            .clone_dtoh(&t.buf)
            .ctx(|| "copy to the host".into())
    }
    /// Waits for the stream; reports any error a kernel raised.
    pub fn sync(&self) -> Result<()> {
        self.stream
            .synchronize()
            .ctx(|| "running the kernels".into())
    }

    /// Launches kernel `K` on `p` (built from [`DeviceTensor::param`]s): checks the parameters
    /// against what the kernel needs (an error names the condition), takes the grid, block and
    /// shared memory from the kernel's layouts (`Kernel::geometry`) and checks them against the
    /// device's limits.
    pub fn launch<K: Entry>(&self, p: K::Params<Device>) -> Result<()> {
        let (p, g) =
            crate::runtime::module::prepare::<K>(p, i64::from(self.sms), self.rmsnorm_smem)?;
        self.launch_entry(K::NAME, g, p)
    }

    /// Launches entry point `name` with geometry `g` on its one by-value parameter `p`.
    fn launch_entry<P: Copy>(&self, name: &str, g: Geometry, p: P) -> Result<()> {
        crate::runtime::module::launch(&self.stream, self.function(name)?, name, g, p)
    }

    /// `c = alpha a b^T + beta c` with `gemm_sm80` (`gemm_<I>_<O>`): `a` `(M,K)`, `b` `(N,K)`,
    /// `c` `(M,N)`, any flat rank-2 layouts (the fast path wants K-major `a` and `b` with rows
    /// 16-byte aligned, and `c` with contiguous, aligned rows).
    pub fn gemm<I: Elem + tessel_gpu::gemm::GemmIn + Default, O: Elem + tessel_gpu::real::Real>(
        &self,
        a: &DeviceTensor<I>,
        b: &DeviceTensor<I>,
        c: &mut DeviceTensor<O>,
        alpha: f32,
        beta: f32,
    ) -> Result<()> {
        use tessel_gpu::gemm;
        let p = gemm_params(a, b, c, alpha, beta)?;
        let name = format!("gemm_{}_{}", I::NAME, O::NAME);
        let (p, g) = crate::runtime::module::prepare_as::<gemm::Gemm<I, O>>(
            &name,
            p,
            i64::from(self.sms),
            self.rmsnorm_smem,
        )?;
        self.launch_entry(&name, g, p)
    }

    /// Has the loaded PTX the entry point `name`?
    pub fn has_kernel(&self, name: &str) -> bool {
        self.kernels.contains_key(name)
    }

    /// Has the loaded PTX `kind`'s GEMM of `I` into `O`?
    pub fn has_mapped_gemm<I: Elem, O: Elem>(&self, kind: MappedGemm) -> bool {
        self.has_kernel(&kind.entry::<I, O>())
    }

    /// `c = alpha a b^T + beta c` by a GEMM whose stages the copy engine fills (`kind`): `maps`
    /// of `a` and `b` ([`crate::runtime::tma::GemmMaps::new`]), `c` as for [`Gpu::gemm`].
    #[allow(clippy::too_many_arguments)]
    pub fn gemm_mapped<
        I: crate::runtime::tma::TmaElem + tessel_gpu::gemm::GemmIn + Default,
        O: crate::runtime::tma::TmaElem + tessel_gpu::real::Real,
    >(
        &self,
        kind: MappedGemm,
        maps: &crate::runtime::tma::GemmMaps,
        a: &DeviceTensor<I>,
        b: &DeviceTensor<I>,
        c: &mut DeviceTensor<O>,
        alpha: f32,
        beta: f32,
    ) -> Result<()> {
        use tessel_gpu::gemm;
        let name = kind.entry::<I, O>();
        if !maps.of(a, b, c)? {
            return Err(GpuError::Invalid(format!(
                "{name}: the tensor maps were not built from these a, b and c"
            )));
        }
        let g = gemm_params(a, b, c, alpha, beta)?;
        if kind == MappedGemm::Tma {
            use tessel_gpu::tma::GmemTensorMap;
            let p = gemm::GemmMapParams {
                a_map: GmemTensorMap::new(maps.a.ptr()),
                b_map: GmemTensorMap::new(maps.b.ptr()),
                g,
            };
            let (p, geo) = crate::runtime::module::prepare_as::<gemm::GemmTma<I, O>>(
                &name,
                p,
                i64::from(self.sms),
                self.rmsnorm_smem,
            )?;
            return self.launch_entry(&name, geo, p);
        }
        use tessel_gpu::gemm_sm90::{GemmSm90, GemmSm90Params, CLUSTER_M, SMEM_BYTES, THREADS};
        use tessel_gpu::tma::GmemTensorMap;
        let clusters = self.sm90_clusters();
        if clusters < 1 {
            return Err(GpuError::Invalid(format!(
                "{name}: no cluster of its blocks ({THREADS} threads, {SMEM_BYTES} bytes of shared memory each) fits on this device"
            )));
        }
        let p = GemmSm90Params {
            a_map: GmemTensorMap::new(maps.a.ptr()),
            b_map: GmemTensorMap::new(maps.b_half.ptr()),
            c_map: GmemTensorMap::new(maps.c.as_ref().map_or(std::ptr::null(), |m| m.ptr())),
            g,
        };
        // persistent: as many clusters as the device holds at once (its occupancy query), none
        // idle: the multiprocessors those clusters fill
        let (p, g) = crate::runtime::module::prepare_as::<GemmSm90<I, O>>(
            &name,
            p,
            CLUSTER_M * clusters,
            self.rmsnorm_smem,
        )?;
        self.launch_entry(&name, g, p)
    }

    /// The wgmma ceiling microbenchmark (`wgmma_peak_bf16`, sm_90a PTX only): `blocks` blocks of
    /// three warpgroups, `iters` rounds; returns the floating-point operations it does.
    pub fn wgmma_peak(&self, blocks: i64, iters: i64, out: &mut DeviceTensor<f32>) -> Result<f64> {
        use tessel_gpu::wgmma_peak::{WgmmaPeakParams, SMEM_BYTES, THREADS};
        if out.len() < (blocks * THREADS) as usize {
            return Err(GpuError::Invalid(
                "wgmma_peak needs one f32 per thread".into(),
            ));
        }
        let p = WgmmaPeakParams {
            out: out.param::<1>("out")?.engine(),
            iters,
            seed: 0x2468_ace1,
        };
        let g = Geometry {
            grid: [blocks, 1],
            threads: THREADS,
            smem_bytes: SMEM_BYTES,
        };
        self.launch_entry("wgmma_peak_bf16", g, p)?;
        Ok(p.flops(blocks))
    }

    /// The `mma.sync` ceiling microbenchmark (`mma_peak_<I>`): `blocks` blocks of `iters`
    /// rounds; returns the floating-point operations it does.
    pub fn mma_peak<I: Elem>(
        &self,
        blocks: i64,
        iters: i64,
        out: &mut DeviceTensor<f32>,
    ) -> Result<f64> {
        use tessel_gpu::mma_peak::{PeakParams, THREADS};
        if out.len() < (blocks * THREADS) as usize {
            return Err(GpuError::Invalid(
                "mma_peak needs one f32 per thread".into(),
            ));
        }
        let p = PeakParams {
            out: out.param::<1>("out")?.engine(),
            iters,
            seed: 0x1234_5678,
        };
        let g = Geometry {
            grid: [blocks, 1],
            threads: THREADS,
            smem_bytes: 0,
        };
        self.launch_entry(&format!("mma_peak_{}", I::NAME), g, p)?;
        Ok(p.flops(blocks))
    }

    /// `dst = src`, both `n:1`, in the default configuration ([`CopyConfig::DEFAULT`]).
    pub fn copy<T: Elem>(&self, src: &DeviceTensor<T>, dst: &mut DeviceTensor<T>) -> Result<()> {
        self.copy_with(src, dst, CopyConfig::DEFAULT)
    }

    /// [`Gpu::copy`] in configuration `cfg`: `copy_<T>` over a grid of `per_sm` blocks per
    /// multiprocessor, or the copy engine's `bulk_copy_<T>` (sm_90; both vectors 16-byte
    /// aligned). `Err` names the condition a configuration or the tensors break.
    pub fn copy_with<T: Elem>(
        &self,
        src: &DeviceTensor<T>,
        dst: &mut DeviceTensor<T>,
        cfg: CopyConfig,
    ) -> Result<()> {
        let p = CopyParams {
            src: src.param("src")?,
            dst: dst.param("dst")?,
        };
        let (p, mut g) =
            crate::runtime::module::prepare::<T::Copy>(p, i64::from(self.sms), self.rmsnorm_smem)?;
        let n = p.src.shape()[0];
        if !cfg.valid() {
            let rule = match cfg {
                CopyConfig::Vec { .. } => format!(
                    "atoms one of {VEC_ATOMS:?}, blocks per SM in the grid >= 0, resident 1..=8"
                ),
                CopyConfig::Bulk { .. } => "a chunk of a positive multiple of 16 bytes below \
                    2^31, at least 2 stages and 1 block per SM"
                    .to_string(),
            };
            return Err(GpuError::Invalid(format!("copy {cfg}: {rule}")));
        }
        match cfg {
            CopyConfig::Vec {
                atoms,
                per_sm,
                resident,
            } => {
                let cap = if per_sm == 0 {
                    i64::MAX
                } else {
                    per_sm * i64::from(self.sms)
                };
                let name = match atoms {
                    ATOMS => T::Copy::NAME.to_string(),
                    a => format!("copy_a{a}_{}", T::NAME),
                };
                let grid = match atoms {
                    4 => VecCopy::<T, 4>::grid(n, cap),
                    8 => VecCopy::<T, 8>::grid(n, cap),
                    16 => VecCopy::<T, 16>::grid(n, cap),
                    _ => VecCopy::<T, ATOMS>::grid(n, cap),
                };
                g.grid[0] = grid;
                g.smem_bytes = resident_smem(self.rmsnorm_smem, resident);
                crate::runtime::module::check_geometry(&name, &g, self.rmsnorm_smem)?;
                self.launch_entry(&name, g, p)
            }
            CopyConfig::Bulk {
                chunk,
                stages,
                per_sm,
            } => {
                let name = format!("bulk_copy_{}", T::NAME);
                if !self.has_kernel(&name) {
                    return Err(GpuError::Invalid(format!(
                        "copy {cfg}: the bulk copy needs sm_90 or newer, this device runs {}",
                        self.arch
                    )));
                }
                let bytes = std::mem::size_of::<T>() as i64;
                let aligned =
                    |t: &FlatTensor<Gmem<T>, 1>| (t.engine().0 as usize).is_multiple_of(16);
                if !aligned(&p.src) || !aligned(&p.dst) {
                    return Err(GpuError::Invalid(format!(
                        "copy {cfg}: the bulk copy needs src and dst 16-byte aligned"
                    )));
                }
                let b = BulkCopyParams {
                    src: p.src,
                    dst: p.dst,
                    chunk: chunk / bytes,
                    stages,
                };
                let tiles = (n / (16 / bytes) * (16 / bytes) + b.chunk - 1) / b.chunk;
                let g = Geometry {
                    grid: [tiles.clamp(1, per_sm * i64::from(self.sms)), 1],
                    threads: BULK_THREADS,
                    smem_bytes: b.smem_bytes(bytes),
                };
                crate::runtime::module::check_geometry(&name, &g, self.rmsnorm_smem)?;
                self.launch_entry(&name, g, b)
            }
        }
    }

    /// `y = alpha x + beta y` with the `axpby_<T>` kernel: `x` and `y` of one shape, any rank-2
    /// layouts (128-bit accesses where rows are contiguous and aligned).
    pub fn axpby<T: Elem>(
        &self,
        x: &DeviceTensor<T>,
        y: &mut DeviceTensor<T>,
        alpha: f32,
        beta: f32,
    ) -> Result<()>
    where
        Axpby<T>: Entry<Params<Device> = AxpbyParams<Gmem<T>>>,
    {
        self.launch::<Axpby<T>>(AxpbyParams {
            x: x.param("x")?,
            y: y.param("y")?,
            alpha,
            beta,
        })
    }

    /// `dst = src^T` with the `transpose_<S>_<T>` kernel: `src` `(rows,cols)` with unit stride along
    /// its rows (any row stride), `dst` `(cols,rows)` likewise. Where `dst`'s rows are not whole
    /// 32-byte sectors ([`TransposeTile::led`]), the `transpose_<S>_led_<T>` kernel.
    pub fn transpose<T: Elem, S: TransposeTile<T>>(
        &self,
        src: &DeviceTensor<T>,
        dst: &mut DeviceTensor<T>,
    ) -> Result<()> {
        self.transpose_with::<T, S>(src, dst, 0, 0)
    }

    /// [`Gpu::transpose`] with the kernel's preferred shared-memory carveout `carveout` % (0: the
    /// driver's choice) and, where `resident` is not 0, each block asking for at least
    /// [`fewest_smem`] bytes, so that no more than `resident` fit on a multiprocessor (the fields
    /// of a [`TransposeConfig`] beside its tile, `S`). `Err` names the condition
    /// they or the tensors break.
    pub fn transpose_with<T: Elem, S: TransposeTile<T>>(
        &self,
        src: &DeviceTensor<T>,
        dst: &mut DeviceTensor<T>,
        carveout: i64,
        resident: i64,
    ) -> Result<()> {
        if !TransposeConfig::knobs_valid(carveout, resident) {
            return Err(GpuError::Invalid(format!(
                "transpose: a shared-memory carveout of 0 (the driver's choice) to 100 %, not \
                 {carveout}, and 0 (as many as fit) to 8 blocks resident per SM, not {resident}"
            )));
        }
        let p = TransposeParams {
            src: src.param("src")?,
            dst: dst.param("dst")?,
        };
        if S::led(p.dst.layout().stride()[0], p.src.shape()[0]) {
            self.launch_config::<S::Led>(p, [carveout, resident])
        } else {
            self.launch_config::<S::Kernel>(p, [carveout, resident])
        }
    }

    /// [`Gpu::launch`] of a transpose kernel `K`: its preferred carveout set first (`-1`, the
    /// driver's choice, for 0, so that no earlier launch's preference stays), its shared memory
    /// raised to [`fewest_smem`] for `resident` where that is not 0.
    fn launch_config<K: Entry>(
        &self,
        p: K::Params<Device>,
        [carveout, resident]: [i64; 2],
    ) -> Result<()> {
        let (p, mut g) =
            crate::runtime::module::prepare::<K>(p, i64::from(self.sms), self.rmsnorm_smem)?;
        if resident > 0 {
            g.smem_bytes = g.smem_bytes.max(fewest_smem(self.rmsnorm_smem, resident));
        }
        let pref = if carveout == 0 { -1 } else { carveout as i32 };
        self.function(K::NAME)?
            .set_attribute(
                sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT,
                pref,
            )
            .ctx(|| format!("{}: shared-memory carveout {pref}", K::NAME))?;
        self.launch_entry(K::NAME, g, p)
    }

    /// `y = x / sqrt(mean(x^2) + eps) * w` row by row with an `rmsnorm_<T>` kernel: `x` and `y`
    /// `(M,N)` of one shape (any row stride keeping rows 16-byte aligned, unit column stride), `w`
    /// `N:1`, `N` a multiple of the vector width (the kernel's `prepare` names a violated
    /// condition); in the default configuration for `N` ([`RmsConfig::default_for`]: warps per
    /// row by `N`, rows staged in half of what [`Gpu::rmsnorm_smem`] allows: two blocks per SM).
    pub fn rmsnorm<T: RmsElem>(
        &self,
        x: &DeviceTensor<T>,
        w: &DeviceTensor<T>,
        y: &mut DeviceTensor<T>,
        eps: f32,
    ) -> Result<()> {
        let n = x.param::<2>("x")?.shape()[1];
        let cfg = RmsConfig::default_for::<T>(n, self.rmsnorm_smem);
        self.rmsnorm_with(x, w, y, eps, cfg)
    }

    /// [`Gpu::rmsnorm`] in configuration `cfg`: `cfg.warps` warps per row (`rmsnorm_w<W>_<T>`),
    /// rows staged in `cfg.smem` bytes of shared memory per block (at most
    /// [`Gpu::rmsnorm_smem`]).
    pub fn rmsnorm_with<T: RmsElem>(
        &self,
        x: &DeviceTensor<T>,
        w: &DeviceTensor<T>,
        y: &mut DeviceTensor<T>,
        eps: f32,
        cfg: RmsConfig,
    ) -> Result<()> {
        if cfg.smem > self.rmsnorm_smem {
            return Err(GpuError::Invalid(format!(
                "rmsnorm {cfg}: more shared memory than a block may have ({})",
                self.rmsnorm_smem
            )));
        }
        let x = x.param("x")?;
        let p = RmsParams {
            x,
            w: w.param("w")?,
            y: y.param("y")?,
            eps,
            staged: T::staged_for(cfg.warps, x.shape()[1], cfg.smem),
        };
        T::launch_rmsnorm(self, p, cfg.warps)
    }

    /// `cuMemcpyDtoDAsync` of `src` into `dst` (the same length).
    pub fn memcpy<T: Elem>(&self, src: &DeviceTensor<T>, dst: &mut DeviceTensor<T>) -> Result<()> {
        if src.len() != dst.len() {
            return Err(GpuError::Invalid(
                "memcpy needs buffers of one length".into(),
            ));
        }
        self.stream
            .memcpy_dtod(&src.buf, &mut dst.buf)
            .ctx(|| "device-to-device copy".into())
    }

    /// Times `f` with CUDA events: `warmup` untimed runs, then `reps` runs each between two events;
    /// the milliseconds of each run, sorted, and the host's microseconds per call of `f`.
    ///
    /// The runs are queued back to back and the stream is synchronized once at the end: the host
    /// enqueues ahead of the device, so each pair of events brackets the device's work alone. (An
    /// earlier version synchronized after every run; then the host's time to enqueue the launch —
    /// building its parameters, checking the layouts — fell between the events, and the GPU
    /// waited for it.)
    pub fn time(
        &self,
        warmup: usize,
        reps: usize,
        mut f: impl FnMut() -> Result<()>,
    ) -> Result<(Vec<f64>, f64)> {
        for _ in 0..warmup {
            f()?;
        }
        self.sync()?;
        let timing = Some(sys::CUevent_flags::CU_EVENT_DEFAULT);
        let mut events = Vec::with_capacity(reps);
        for _ in 0..reps {
            let a = self.ctx.new_event(timing).ctx(|| "event".into())?;
            let b = self.ctx.new_event(timing).ctx(|| "event".into())?;
            events.push((a, b));
        }
        let mut host = std::time::Duration::ZERO;
        for (a, b) in &events {
            a.record(&self.stream).ctx(|| "event record".into())?;
            let t = std::time::Instant::now();
            f()?;
            host += t.elapsed();
            b.record(&self.stream).ctx(|| "event record".into())?;
        }
        self.sync()?;
        let mut ms = Vec::with_capacity(reps);
        for (a, b) in &events {
            ms.push(a.elapsed_ms(b).ctx(|| "event time".into())? as f64);
        }
        ms.sort_by(f64::total_cmp);
        Ok((ms, host.as_secs_f64() * 1e6 / reps.max(1) as f64))
    }

    /// Times several functions launch by launch in turn (`fs[0]`, `fs[1]`, .., `fs[0]`, ..), CUDA
    /// events around each launch: `warmup` untimed rounds, then `reps` timed ones; the
    /// milliseconds of each function's runs, sorted. Interleaved so that each sees the same
    /// device: its clocks fall as it heats, which would favour whichever ran first if each were
    /// timed in a block of its own.
    pub fn time_interleaved(
        &self,
        warmup: usize,
        reps: usize,
        fs: &mut [&mut dyn FnMut() -> Result<()>],
    ) -> Result<Vec<Vec<f64>>> {
        for _ in 0..warmup {
            for f in fs.iter_mut() {
                f()?;
            }
        }
        self.sync()?;
        let timing = Some(sys::CUevent_flags::CU_EVENT_DEFAULT);
        let mut events = Vec::with_capacity(reps * fs.len());
        for _ in 0..reps * fs.len() {
            let a = self.ctx.new_event(timing).ctx(|| "event".into())?;
            let b = self.ctx.new_event(timing).ctx(|| "event".into())?;
            events.push((a, b));
        }
        for round in events.chunks(fs.len()) {
            for ((a, b), f) in round.iter().zip(fs.iter_mut()) {
                a.record(&self.stream).ctx(|| "event record".into())?;
                f()?;
                b.record(&self.stream).ctx(|| "event record".into())?;
            }
        }
        self.sync()?;
        let mut ms = vec![Vec::with_capacity(reps); fs.len()];
        for (i, (a, b)) in events.iter().enumerate() {
            ms[i % fs.len()].push(a.elapsed_ms(b).ctx(|| "event time".into())? as f64);
        }
        for m in &mut ms {
            m.sort_by(f64::total_cmp);
        }
        Ok(ms)
    }

    /// `words` in device memory (a tensor map's 128 bytes: 64-byte aligned, as every allocation).
    pub(crate) fn upload_words(&self, words: &[u64]) -> Result<CudaSlice<u64>> {
        self.stream
            .clone_htod(words)
            .ctx(|| "copying words to the device".into())
    }

    /// `dst = src` box by box through shared memory with the copy engine (`tma_copy_<T>`, sm_90):
    /// `map` of the source ([`crate::runtime::tma::encode_2d`]), `dst` of its shape, any layout.
    pub fn tma_copy<T: crate::runtime::tma::TmaElem>(
        &self,
        map: &crate::runtime::tma::TensorMap,
        dst: &mut DeviceTensor<T>,
    ) -> Result<()> {
        use tessel_gpu::tma_copy::{TmaCopyParams, SMEM_SLACK, THREADS};
        let sw = map
            .mode
            .swizzle(8 * std::mem::size_of::<T>() as i64)
            .map_err(|e| GpuError::Invalid(e.to_string()))?;
        let (b, m, s) = sw.params();
        let p = TmaCopyParams {
            map: map.ptr(),
            shape: map.shape,
            boxed: map.boxed,
            swizzle: [b as i64, m as i64, s as i64],
            dst: dst.param("dst")?,
        };
        if p.dst.shape() != map.shape {
            return Err(GpuError::Invalid(format!(
                "tma_copy needs dst of the source's shape {:?}, got {:?}",
                map.shape,
                p.dst.shape()
            )));
        }
        let name = format!("tma_copy_{}", T::NAME);
        let g = Geometry {
            grid: p.grid(),
            threads: THREADS,
            smem_bytes: p.box_bytes(std::mem::size_of::<T>() as i64) + SMEM_SLACK,
        };
        if g.grid[1] > 65535 {
            return Err(GpuError::Invalid(format!(
                "{name}: more than 65535 box rows"
            )));
        }
        self.launch_entry(&name, g, p)
    }

    /// The stream every launch and copy goes to (cuBLAS is put on it too).
    pub(crate) fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// A second stream on this device (a communicator's), ordered against this `Gpu`'s own by
    /// [`Gpu::signal`] and [`Gpu::wait_for`] only, of the device's highest priority: the blocks
    /// of its kernels go to SMs before the waiting blocks of this `Gpu`'s kernels.
    pub(crate) fn new_stream(&self) -> Result<Arc<CudaStream>> {
        self.ctx
            .bind_to_thread()
            .ctx(|| "binding the device's context".into())?;
        let (_, greatest) = cudarc::driver::result::stream::get_priority_range()
            .ctx(|| "stream priorities".into())?;
        self.ctx
            .new_stream_with_priority(greatest)
            .ctx(|| "a communication stream".into())
    }

    /// `other`'s later work waits for the work queued on this `Gpu` so far.
    pub(crate) fn signal(&self, other: &CudaStream) -> Result<()> {
        let e = self
            .stream
            .record_event(Some(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING))
            .ctx(|| "event record".into())?;
        other.wait(&e).ctx(|| "stream wait".into())
    }

    /// This `Gpu`'s later work waits for the work queued on `other` so far.
    pub(crate) fn wait_for(&self, other: &CudaStream) -> Result<()> {
        let e = other
            .record_event(Some(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING))
            .ctx(|| "event record".into())?;
        self.stream.wait(&e).ctx(|| "stream wait".into())
    }

    /// Launches `gemm_sm90` on `clusters` clusters (at least 1; never more than its pairs of
    /// tiles) from now on. Fewer than those resident at once ([`Gpu::sm90_max_clusters`]) leave
    /// SMs free for kernels beside it (NCCL's, which a persistent GEMM holding every SM would
    /// keep waiting); more than those resident, up to one per pair of tiles, let the hardware
    /// hand out SMs as the clusters finish, to it and to kernels beside it alike. Returns the
    /// number set.
    pub fn set_sm90_clusters(&self, clusters: i64) -> i64 {
        if self.sm90_max_clusters == 0 {
            // no gemm_sm90 here: nothing to set
            return 0;
        }
        let n = clusters.clamp(1, i64::from(i32::MAX) / tessel_gpu::gemm_sm90::CLUSTER_M);
        self.sm90_clusters
            .store(n, std::sync::atomic::Ordering::Relaxed);
        n
    }

    /// `gemm_sm90`'s clusters resident at once (0 without sm_90a PTX).
    pub fn sm90_max_clusters(&self) -> i64 {
        self.sm90_max_clusters
    }
}

/// A GEMM's parameters from its device tensors (`c = alpha a b^T + beta c`).
fn gemm_params<I: Elem, O: Elem>(
    a: &DeviceTensor<I>,
    b: &DeviceTensor<I>,
    c: &DeviceTensor<O>,
    alpha: f32,
    beta: f32,
) -> Result<tessel_gpu::gemm::GemmParams<Gmem<I>, Gmem<O>>> {
    Ok(tessel_gpu::gemm::GemmParams {
        a: a.param("a")?,
        b: b.param("b")?,
        c: c.param("c")?,
        alpha,
        beta,
    })
}

impl crate::elem::Launcher for Gpu {
    type Error = GpuError;
    fn launch<K: Entry>(&self, p: K::Params<Device>) -> Result<()> {
        Gpu::launch::<K>(self, p)
    }
    fn invalid(why: String) -> GpuError {
        GpuError::Invalid(why)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_take_flat_layouts_of_their_rank() {
        let l = |s: &str| Layout::parse(s).unwrap();
        assert_eq!(
            flat_param::<2>("x", &l("(4,8):(1,4)")).unwrap(),
            FlatLayout::new([4, 8], [1, 4]).unwrap()
        );
        assert_eq!(
            flat_param::<2>("x", &l("(4,8):(10,1)")).unwrap().stride(),
            [10, 1]
        );
        assert!(flat_param::<1>("v", &l("7:1")).is_ok());
        let err = |s: &str| flat_param::<2>("x", &l(s)).unwrap_err().to_string();
        assert!(err("((2,2),8):((1,2),4)").contains("x needs a flat rank-2 layout"));
        assert!(err("(2,3,4):(1,2,6)").contains("rank 3"));
        assert!(err("8:1").contains("rank-2"));
    }

    #[test]
    fn views_stay_inside_their_buffer() {
        let l = |s: &str| Layout::parse(s).unwrap();
        assert!(check_inside(32, 0, &l("(4,8):(8,1)")).is_ok());
        assert!(check_inside(32, 1, &l("(4,8):(8,1)")).is_err());
        assert!(check_inside(40, 3, &l("(4,8):(9,1)")).is_ok());
        // negative strides reach below the offset
        assert!(check_inside(8, 7, &l("8:-1")).is_ok());
        assert!(check_inside(8, 6, &l("8:-1")).is_err());
    }

    #[test]
    fn a_ptx_file_names_its_arch() {
        let dir = std::env::temp_dir().join(format!("tessel-ptx-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let write = |name: &str, text: &str| {
            let p = dir.join(name);
            std::fs::write(&p, text).unwrap();
            p
        };
        let good = write(
            "a.ptx",
            "//\n.version 8.3\n.target sm_90a\n.address_size 64\n",
        );
        assert_eq!(ptx_file(&good).unwrap().0, "sm_90a");
        let two = write("b.ptx", ".version 8.3\n.target sm_80, debug\n");
        assert_eq!(ptx_file(&two).unwrap().0, "sm_80");
        let err = |p: &std::path::Path| ptx_file(p).unwrap_err().to_string();
        assert!(err(&write("c.ptx", ".version 8.3\n")).contains("no `.target sm_XX` line"));
        assert!(err(&dir.join("missing.ptx")).contains("TESSEL_PTX="));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
