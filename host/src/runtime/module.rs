//! A kernel crate's PTX loaded on a device ([`Module`], from [`Gpu::load`](crate::runtime::gpu::Gpu::load)),
//! and the launch every kernel goes through: prepare the parameters, take the launch's shape from
//! the kernel's layouts, check it against the device, launch on the `Gpu`'s stream.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use cudarc::driver::{
    sys, CudaFunction, CudaModule, CudaStream, DeviceRepr, LaunchConfig, PushKernelArg,
};
use tessel_gpu::ctx::{Entry, Geometry, Kernel};
use tessel_gpu::mem::Device;

use crate::runtime::gpu::{Context, GpuError, Result};

/// A kernel crate's PTX, loaded on one device; launches go to the stream of the
/// [`Gpu`](crate::runtime::gpu::Gpu) that loaded it (ordered with its copies and timing events). An entry
/// point is looked up at its first launch, and checked then against what the host passes it
/// ([`check_entry`]).
pub struct Module {
    stream: Arc<CudaStream>,
    arch: String,
    module: Arc<CudaModule>,
    ptx: String,
    /// The entries launched so far, with the parameter size the PTX gives each.
    functions: Mutex<HashMap<String, (CudaFunction, usize)>>,
    sms: i64,
    smem_limit: i64,
}

impl Module {
    pub(crate) fn new(
        stream: Arc<CudaStream>,
        arch: String,
        (module, ptx): (Arc<CudaModule>, String),
        sms: i64,
        smem_limit: i64,
    ) -> Self {
        Self {
            stream,
            arch,
            module,
            ptx,
            functions: Mutex::default(),
            sms,
            smem_limit,
        }
    }

    /// Entry point `name`, taking one parameter of `param_bytes` bytes, checked at every launch:
    /// from the PTX the first time (by [`check_entry`], allowed all the shared memory a block can
    /// have: each launch asks for what it needs), then from the ones found, whose size the PTX
    /// gave.
    fn function(&self, name: &str, param_bytes: usize) -> Result<CudaFunction> {
        let mut found = self.functions.lock().unwrap_or_else(|e| e.into_inner());
        match found.get(name) {
            Some((f, bytes)) if *bytes == param_bytes => return Ok(f.clone()),
            // found with another size: check_entry names the difference
            _ => check_entry(&self.ptx, name, param_bytes)
                .map_err(|why| GpuError::Invalid(format!("the {} PTX: {why}", self.arch)))?,
        }
        let f = entry(&self.module, name, self.smem_limit)?;
        found.insert(name.to_string(), (f.clone(), param_bytes));
        Ok(f)
    }

    /// The arch of the PTX loaded (`sm_90`, `sm_90a`, ..).
    pub fn arch(&self) -> &str {
        &self.arch
    }

    /// Launches kernel `K` on `p` (its tensors from
    /// [`DeviceTensor::param`](crate::runtime::gpu::DeviceTensor::param)): `K::prepare` checks the
    /// parameters (an error names the condition), `K::geometry` gives the grid, block and shared
    /// memory, checked against the device's limits. Asynchronous: errors the kernel raises
    /// surface at the next [`Gpu::sync`](crate::runtime::gpu::Gpu::sync) or download.
    pub fn launch<K: Entry>(&self, p: K::Params<Device>) -> Result<()> {
        let (p, g) = prepare::<K>(p, self.sms, self.smem_limit)?;
        let f = self.function(K::NAME, std::mem::size_of::<DeviceParams<K>>())?;
        if K::CLUSTER > 1 {
            check_cluster(&f, K::NAME, K::CLUSTER, &g)?;
        }
        launch(&self.stream, &f, K::NAME, g, p)
    }

    /// Launches entry `name` of this module on its one by-value parameter `p`, with the launch
    /// shape `g` given (CUDA C++'s `<<<grid, block, smem>>>`): for an entry not declared through
    /// `Kernel`, e.g. a plain `extern "ptx-kernel" fn` taking pointers. `g` is checked against
    /// the device's limits, and `P`'s size against the entry's parameter in the PTX.
    ///
    /// # Safety
    /// `P` must be the entry's parameter (its size is checked; its layout is the caller's to
    /// match), and every pointer in it valid for what the kernel does with it.
    pub unsafe fn launch_raw<P: Copy>(&self, name: &str, g: Geometry, p: P) -> Result<()> {
        check_geometry(name, &g, self.smem_limit)?;
        let f = self.function(name, std::mem::size_of::<P>())?;
        launch(&self.stream, &f, name, g, p)
    }

    /// The launch `K` would get for `p`: its prepared parameters' geometry (for reports, and to
    /// run the host execution over the same grid).
    pub fn geometry<K: Entry>(&self, p: K::Params<Device>) -> Result<Geometry> {
        prepare::<K>(p, self.sms, self.smem_limit).map(|(_, g)| g)
    }
}

/// Entry point `name` of `module`, allowed up to `smem` bytes of dynamic shared memory per block
/// (each launch asks for what its layouts need).
pub(crate) fn entry(module: &Arc<CudaModule>, name: &str, smem: i64) -> Result<CudaFunction> {
    let f = module
        .load_function(name)
        .ctx(|| format!("kernel {name} in the PTX"))?;
    f.set_attribute(
        sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
        smem as i32,
    )
    .ctx(|| format!("{name}: {smem} bytes of shared memory"))?;
    Ok(f)
}

/// A kernel's parameters over global memory, as its entry point takes them.
pub type DeviceParams<K> = <K as tessel_gpu::ctx::Kernel>::Params<Device>;

/// `K::prepare(p)` and `K::geometry` on a device of `sms` multiprocessors allowing `smem_limit`
/// bytes of shared memory per block; `Err` names the condition the parameters or the launch
/// break.
pub(crate) fn prepare<K: Entry>(
    p: K::Params<Device>,
    sms: i64,
    smem_limit: i64,
) -> Result<(DeviceParams<K>, Geometry)> {
    prepare_as::<K>(K::NAME, p, sms, smem_limit)
}

/// [`prepare`] of kernel `K` whose entry point is `name` (a generic instance, whose name the
/// caller composes).
pub(crate) fn prepare_as<K: Kernel>(
    name: &str,
    p: K::Params<Device>,
    sms: i64,
    smem_limit: i64,
) -> Result<(DeviceParams<K>, Geometry)> {
    let p = K::prepare::<Device>(p).map_err(|why| GpuError::Invalid(format!("{name}: {why}")))?;
    let g = K::geometry::<Device>(&p, sms, smem_limit);
    check_geometry(name, &g, smem_limit)?;
    Ok((p, g))
}

/// `Ok` when launch shape `g` of `name` is within the device's limits; `Err` names the one it
/// breaks.
pub(crate) fn check_geometry(name: &str, g: &Geometry, smem_limit: i64) -> Result<()> {
    if !(1..=i64::from(i32::MAX)).contains(&g.grid[0]) || !(1..=65535).contains(&g.grid[1]) {
        return Err(GpuError::Invalid(format!(
            "{name}: a grid of {}x{} blocks is outside the device's limits (2^31-1 x 65535)",
            g.grid[0], g.grid[1]
        )));
    }
    if !(1..=1024).contains(&g.threads) {
        return Err(GpuError::Invalid(format!(
            "{name}: {} threads per block, 1..=1024 allowed",
            g.threads
        )));
    }
    if !(0..=smem_limit).contains(&g.smem_bytes) {
        return Err(GpuError::Invalid(format!(
            "{name}: {} bytes of shared memory per block, {smem_limit} allowed",
            g.smem_bytes
        )));
    }
    Ok(())
}

/// `Ok` when entry `name`, whose kernel declares clusters of `cluster` blocks, was compiled for
/// them (`.reqnctapercluster cluster, 1, 1`, from `ptx_directives!`: a plain launch then makes
/// the clusters) and `g`'s grid is whole clusters; `Err` names what is not.
fn check_cluster(f: &CudaFunction, name: &str, cluster: i64, g: &Geometry) -> Result<()> {
    use cudarc::driver::sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH;
    let width = f
        .get_attribute(CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH)
        .ctx(|| format!("{name}: its cluster width"))?;
    if i64::from(width) != cluster {
        return Err(GpuError::Invalid(format!(
            "{name}: its kernel declares clusters of {cluster} blocks, its entry was compiled for \
             clusters of {width} (declare `reqnctapercluster: {name} => {cluster}` with \
             ptx_directives!)"
        )));
    }
    if g.grid[0] % cluster != 0 {
        return Err(GpuError::Invalid(format!(
            "{name}: a grid of {} blocks along x is not whole clusters of {cluster}",
            g.grid[0]
        )));
    }
    Ok(())
}

/// A kernel parameter passed by value: a `#[repr(C)]` struct the kernel declares (a
/// `FlatTensor` of device memory), copied into the launch.
#[repr(transparent)]
struct ByValue<P>(P);
// SAFETY: `P` is a plain `#[repr(C)]` value of the kernel's parameter type.
unsafe impl<P: Copy> DeviceRepr for ByValue<P> {}

/// Launches `f` (entry point `name`) on `stream` with geometry `g` and its one by-value
/// parameter `p`.
pub(crate) fn launch<P: Copy>(
    stream: &Arc<CudaStream>,
    f: &CudaFunction,
    name: &str,
    g: Geometry,
    p: P,
) -> Result<()> {
    let cfg = LaunchConfig {
        grid_dim: (g.grid[0] as u32, g.grid[1] as u32, 1),
        block_dim: (g.threads as u32, 1, 1),
        shared_mem_bytes: g.smem_bytes as u32,
    };
    let p = ByValue(p);
    let mut b = stream.launch_builder(f);
    b.arg(&p);
    // SAFETY: the one parameter is the entry's parameter struct (its size is checked against the
    // PTX: `check_entry` at the first launch for a user's module, tests/ptx.rs for tessel's), checked by its
    // launcher; its tensors are device buffers whose layouts `DeviceTensor::param` checked
    // against the buffers.
    unsafe { b.launch(cfg) }.ctx(|| format!("launching {name}"))?;
    Ok(())
}

/// `Ok` when `ptx` declares `.entry <name>` with one parameter of `param_bytes` bytes (the
/// by-value `Params` struct the host passes); `Err` names what differs. A launch with a
/// parameter of another size would hand the kernel garbage.
pub fn check_entry(ptx: &str, name: &str, param_bytes: usize) -> std::result::Result<(), String> {
    let head = format!(".entry {name}(");
    let Some(start) = ptx.find(&head) else {
        return Err(format!(
            "no entry point {name} (is it declared with #[kernel], and built for this arch?)"
        ));
    };
    let sig = &ptx[start + head.len()..];
    let sig = &sig[..sig.find(')').unwrap_or(sig.len())];
    let params = sig.matches(".param").count();
    if params != 1 {
        return Err(format!(
            "{name} takes {params} parameters; a kernel takes one by-value Params struct"
        ));
    }
    // `.param .align A .b8 name[N]` (a struct) or `.param .u64 [.ptr ..] name` (a scalar)
    let bytes = match sig.rsplit_once('[') {
        Some((_, n)) => n
            .split(']')
            .next()
            .and_then(|n| n.trim().parse::<usize>().ok()),
        None => sig.split_whitespace().find_map(|w| {
            let bits = w.strip_prefix('.')?.get(1..)?.parse::<usize>().ok()?;
            (w[1..2].chars().all(|c| "busf".contains(c)) && bits % 8 == 0).then_some(bits / 8)
        }),
    };
    match bytes {
        Some(n) if n == param_bytes => Ok(()),
        Some(n) => Err(format!(
            "{}'s parameter is {n} bytes in the PTX, {} on the host (rebuild both from one source)",
            name, param_bytes
        )),
        None => Err(format!(
            "{}: cannot read its parameter's size in `{sig}`",
            name
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PTX: &str = ".visible .entry k(\n\t.param .align 8 .b8 k_param_0[48]\n)\n{\n}\n\
                       .visible .entry two(\n\t.param .u64 a,\n\t.param .u64 b\n)\n{\n}\n\
                       .visible .entry ptr(\n\t.param .u64 .ptr .align 1 ptr_param_0\n)\n{\n}\n";

    #[test]
    fn an_entry_of_the_registry_s_size_passes() {
        assert_eq!(check_entry(PTX, "k", 48), Ok(()));
        // a plain pointer parameter
        assert_eq!(check_entry(PTX, "ptr", 8), Ok(()));
        let e = check_entry(PTX, "ptr", 4).unwrap_err();
        assert!(e.contains("8 bytes in the PTX, 4"), "{e}");
    }

    #[test]
    fn each_mismatch_is_named() {
        let e = check_entry(PTX, "k", 40).unwrap_err();
        assert!(e.contains("48 bytes in the PTX, 40"), "{e}");
        let e = check_entry(PTX, "missing", 8).unwrap_err();
        assert!(e.contains("no entry point missing"), "{e}");
        let e = check_entry(PTX, "two", 16).unwrap_err();
        assert!(e.contains("takes 2 parameters"), "{e}");
        // a prefix of another entry's name is not that entry
        let e = check_entry(PTX, "t", 16).unwrap_err();
        assert!(e.contains("no entry point t"), "{e}");
    }
}
