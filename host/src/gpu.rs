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
    LaunchConfig, PushKernelArg,
};
use layout_core::{FlatLayout, FlatTensor, IntTuple, Layout};
use tessel_gpu::copy::CopyParams;
use tessel_gpu::ctx::Entry;
use tessel_gpu::mem::Gmem;
use tessel_gpu::rmsnorm::{RmsNorm, RmsParams};
use tessel_gpu::transpose::{self, Problem, SmemTile};

use crate::elem::{Elem, RmsElem};

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
        }
    }
}

impl std::error::Error for GpuError {}

/// `Result` with [`GpuError`].
pub type Result<T> = std::result::Result<T, GpuError>;

trait Context<T> {
    fn ctx(self, what: impl FnOnce() -> String) -> Result<T>;
}
impl<T> Context<T> for std::result::Result<T, DriverError> {
    fn ctx(self, what: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|err| GpuError::Driver { what: what(), err })
    }
}

/// The extents `(rows, cols)` of a rank-2 layout.
fn extents(kernel: &str, l: &Layout) -> Result<(i64, i64)> {
    match (l.get(0), l.get(1)) {
        (Ok(r), Ok(c)) if l.rank() == 2 => Ok((r.size(), c.size())),
        _ => Err(GpuError::Invalid(format!(
            "{kernel} needs a rank-2 tensor, got {l}"
        ))),
    }
}

/// `(rows,cols):(cols,1)`.
pub fn row_major(rows: i64, cols: i64) -> Result<Layout> {
    IntTuple::from_ints(&[rows, cols])
        .and_then(|s| Layout::from_parts(s, &[cols, 1]))
        .map_err(|e| GpuError::Invalid(format!("({rows},{cols}):({cols},1): {e}")))
}

/// A kernel parameter passed by value: a `#[repr(C)]` struct the kernel declares (a
/// [`FlatTensor`] of device memory), copied into the launch.
#[repr(transparent)]
struct ByValue<P>(P);
// SAFETY: `P` is a plain `#[repr(C)]` value of the kernel's parameter type.
unsafe impl<P: Copy> DeviceRepr for ByValue<P> {}

/// A typed buffer in device memory and the layout that gives its elements' coordinates.
pub struct DeviceTensor<T> {
    buf: CudaSlice<T>,
    layout: Layout,
}

impl<T> DeviceTensor<T> {
    /// The tensor as a kernel's rank-`N` parameter `name`: its device address and its layout,
    /// which must be flat of rank `N` (`(s_0,..,s_{N-1}):(d_0,..)`, an integer for `N == 1`).
    pub fn param<const N: usize>(&self, name: &str) -> Result<FlatTensor<Gmem<T>, N>> {
        let l = &self.layout;
        let flat = l.depth() <= 1 && l.shapes().len() == N && (N == 1 || l.rank() == N);
        let layout = FlatLayout::from_layout(l)
            .ok()
            .filter(|_| flat)
            .ok_or_else(|| {
                GpuError::Invalid(format!(
                    "{name} needs a flat rank-{N} layout, got {l} (rank {}, depth {})",
                    l.rank(),
                    l.depth()
                ))
            })?;
        let (ptr, _) = self.buf.device_ptr(self.buf.stream());
        Ok(FlatTensor::new(Gmem(ptr as *mut T), layout))
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
    sms: u32,
    smem_optin: i64,
    rmsnorm_smem: i64,
}

impl Gpu {
    /// Opens device `ordinal` and loads the PTX built for the newest arch in `ptx` (pairs of
    /// `sm_XX` and PTX text) that the device runs.
    pub fn open(ordinal: usize, ptx: &[(&str, &str)]) -> Result<Self> {
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
        let arch = format!("sm_{cc}");
        // the newest arch that runs here (`sm_90a` before `sm_90`)
        let best = ptx
            .iter()
            .filter_map(|(a, p)| Some((crate::arch::Arch::parse(a).ok()?, *p)))
            .filter(|(a, _)| a.runs_on(cc))
            .max_by_key(|(a, _)| *a);
        let Some((_, text)) = best else {
            return Err(GpuError::NoPtx {
                arch,
                built: ptx.iter().map(|(a, _)| a.to_string()).collect(),
            });
        };
        let module = ctx
            .load_module(cudarc::nvrtc::Ptx::from_src(text))
            .ctx(|| format!("loading the PTX on {arch}"))?;
        let name = ctx.name().ctx(|| "device name".into())?;
        let sms = ctx
            .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
            .ctx(|| "multiprocessor count".into())? as u32;
        let smem_optin = ctx
            .attribute(
                sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
            )
            .ctx(|| "shared memory per block".into())? as i64;
        // RMSNorm stages rows in all a block can have, or TESSEL_RMSNORM_SMEM bytes (a tuning
        // knob: less staging, more blocks per SM)
        let rmsnorm_smem = std::env::var("TESSEL_RMSNORM_SMEM")
            .ok()
            .and_then(|v| v.parse::<i64>().ok())
            .map_or(smem_optin, |v| v.clamp(0, smem_optin));
        let mut kernels = HashMap::new();
        let names = tessel_gpu::KERNELS.iter().map(|k| k.name);
        for k in names.chain(tessel_gpu::LEGACY) {
            let f = module
                .load_function(k)
                .ctx(|| format!("kernel {k} in the PTX"))?;
            // every kernel may take up to the limit: each launch asks for what its layouts need
            f.set_attribute(
                sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                rmsnorm_smem as i32,
            )
            .ctx(|| format!("{k}: {rmsnorm_smem} bytes of shared memory"))?;
            kernels.insert(k, f);
        }
        // one stream, ordered: cudarc's per-buffer event tracking would only add work per launch
        // SAFETY: every launch and copy of this type goes to the one stream.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.default_stream();
        Ok(Self {
            ctx,
            stream,
            kernels,
            name,
            arch,
            sms,
            smem_optin,
            rmsnorm_smem,
        })
    }

    /// The device's name.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// `sm_XX`.
    pub fn arch(&self) -> &str {
        &self.arch
    }
    /// Multiprocessors.
    pub fn sms(&self) -> u32 {
        self.sms
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
    pub fn upload<T: Elem>(&self, host: &[T], layout: Layout) -> Result<DeviceTensor<T>> {
        if host.len() as i64 != layout.cosize() {
            return Err(GpuError::Invalid(format!(
                "{} elements for layout {layout} of cosize {}",
                host.len(),
                layout.cosize()
            )));
        }
        let buf = self
            .stream
            .clone_htod(host)
            .ctx(|| "copy to the device".into())?;
        Ok(DeviceTensor { buf, layout })
    }
    /// A tensor of `layout` with every element `fill`.
    pub fn filled<T: Elem>(&self, layout: Layout, fill: T) -> Result<DeviceTensor<T>> {
        self.upload(&vec![fill; layout.cosize() as usize], layout)
    }
    /// The tensor's buffer, copied to the host (waits for the stream).
    pub fn download<T: Elem>(&self, t: &DeviceTensor<T>) -> Result<Vec<T>> {
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
    pub fn launch<K: Entry>(&self, p: K::Params<Gmem<K::T>>) -> Result<()> {
        let p = K::prepare(p).map_err(|why| GpuError::Invalid(format!("{}: {why}", K::NAME)))?;
        let g = K::geometry(&p, i64::from(self.sms), self.rmsnorm_smem);
        if !(1..=i64::from(i32::MAX)).contains(&g.grid[0]) || !(1..=65535).contains(&g.grid[1]) {
            return Err(GpuError::Invalid(format!(
                "{}: a grid of {}x{} blocks is outside the device's limits (2^31-1 x 65535)",
                K::NAME,
                g.grid[0],
                g.grid[1]
            )));
        }
        if g.smem_bytes > self.rmsnorm_smem {
            return Err(GpuError::Invalid(format!(
                "{}: {} bytes of shared memory per block, {} allowed",
                K::NAME,
                g.smem_bytes,
                self.rmsnorm_smem
            )));
        }
        let f = self.function(K::NAME)?;
        let cfg = LaunchConfig {
            grid_dim: (g.grid[0] as u32, g.grid[1] as u32, 1),
            block_dim: (g.threads as u32, 1, 1),
            shared_mem_bytes: g.smem_bytes as u32,
        };
        let p = ByValue(p);
        let mut b = self.stream.launch_builder(f);
        b.arg(&p);
        // SAFETY: the one parameter is the kernel's `Params` (the registry's sizes are checked
        // against the PTX in tests/ptx.rs), prepared; its tensors are device buffers whose
        // layouts `DeviceTensor::param` checked against the buffers.
        unsafe { b.launch(cfg) }.ctx(|| format!("launching {}", K::NAME))?;
        Ok(())
    }

    /// `dst = src` with the `copy_<T>` kernel: both `n:1`.
    pub fn copy<T: Elem>(&self, src: &DeviceTensor<T>, dst: &mut DeviceTensor<T>) -> Result<()> {
        self.launch::<T::Copy>(CopyParams {
            src: src.param("src")?,
            dst: dst.param("dst")?,
        })
    }

    /// `dst = src^T` with the `transpose_<S>_<T>` kernel: `src` `(rows,cols):(cols,1)`, `dst`
    /// `(cols,rows):(rows,1)`.
    pub fn transpose<T: Elem, S: SmemTile>(
        &self,
        src: &DeviceTensor<T>,
        dst: &mut DeviceTensor<T>,
    ) -> Result<()> {
        let (rows, cols) = extents("transpose", &src.layout)?;
        if row_major(rows, cols)? != src.layout || row_major(cols, rows)? != dst.layout {
            return Err(GpuError::Invalid(format!(
                "transpose needs ({rows},{cols}):({cols},1) in and ({cols},{rows}):({rows},1) out, got {} and {}",
                src.layout, dst.layout
            )));
        }
        let p = Problem::new(rows, cols).ok_or_else(|| GpuError::Invalid("extents".into()))?;
        let (gx, gy) = p.grid();
        if gy > 65535 || gx > i64::from(u32::MAX) {
            return Err(GpuError::Invalid(format!(
                "{rows}x{cols} needs more blocks than a grid has"
            )));
        }
        let name = format!("transpose_{}_{}", S::NAME, T::NAME);
        let f = self.function(&name)?;
        let cfg = LaunchConfig {
            grid_dim: (gx as u32, gy as u32, 1),
            block_dim: (transpose::THREADS as u32, 1, 1),
            shared_mem_bytes: (S::ELEMS as usize * std::mem::size_of::<T>()) as u32,
        };
        let mut b = self.stream.launch_builder(f);
        b.arg(&src.buf).arg(&mut dst.buf).arg(&rows).arg(&cols);
        // SAFETY: the arguments match the kernel's signature and the layouts were checked.
        unsafe { b.launch(cfg) }.ctx(|| format!("launching {name}"))?;
        Ok(())
    }

    /// `y = x / sqrt(mean(x^2) + eps) * w` row by row with the `rmsnorm_<T>` kernel: `x` and `y`
    /// `(M,N)` of one shape (any row stride keeping rows 16-byte aligned, unit column stride), `w`
    /// `N:1`, `N` a multiple of the vector width (the kernel's `prepare` names a violated
    /// condition); rows staged in the shared memory [`Gpu::rmsnorm_smem`] allows.
    pub fn rmsnorm<T: RmsElem>(
        &self,
        x: &DeviceTensor<T>,
        w: &DeviceTensor<T>,
        y: &mut DeviceTensor<T>,
        eps: f32,
    ) -> Result<()> {
        let x = x.param("x")?;
        self.launch::<T::Rms>(RmsParams {
            x,
            w: w.param("w")?,
            y: y.param("y")?,
            eps,
            staged: RmsNorm::<T>::staged_for(x.shape()[1], self.rmsnorm_smem),
        })
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
    /// the milliseconds of each run, sorted.
    pub fn time(
        &self,
        warmup: usize,
        reps: usize,
        mut f: impl FnMut() -> Result<()>,
    ) -> Result<Vec<f64>> {
        for _ in 0..warmup {
            f()?;
        }
        self.sync()?;
        let timing = Some(sys::CUevent_flags::CU_EVENT_DEFAULT);
        let mut ms = Vec::with_capacity(reps);
        for _ in 0..reps {
            let a = self.ctx.new_event(timing).ctx(|| "event".into())?;
            let b = self.ctx.new_event(timing).ctx(|| "event".into())?;
            a.record(&self.stream).ctx(|| "event record".into())?;
            f()?;
            b.record(&self.stream).ctx(|| "event record".into())?;
            b.synchronize().ctx(|| "running the timed work".into())?;
            ms.push(a.elapsed_ms(&b).ctx(|| "event time".into())? as f64);
        }
        ms.sort_by(f64::total_cmp);
        Ok(ms)
    }
}
