//! Tensors for collectives, in NCCL's symmetric windows: memory from `ncclMemAlloc`, registered
//! on every rank of a communicator at once (`ncclCommWindowRegister`, `NCCL_WIN_COLL_SYMMETRIC`),
//! so that each rank can address the others' copies at the same offsets. Between such tensors
//! NCCL 2.28+ makes an all-gather with the copy engines under the communicators' zero-CTA
//! policy (`comm::config`): the data moves over NVLink while every SM computes.
//!
//! A [`CommTensor`] is such a tensor, or (asked for without a window) one in ordinary device
//! memory: the same type either way, so that one program measures both.

use crate::collectives::comm::{bind, Devices, Rank};
use crate::elem::Elem;
use crate::runtime::gpu::{DeviceTensor, GpuError, Result};
use crate::runtime::library::{first_missing, probe, Library};
use cudarc::driver::{CudaStream, DevicePtr};
use cudarc::nccl::{group_end, group_start, result::NcclError, sys};
use layout_core::Layout;
use std::borrow::{Borrow, BorrowMut};
use std::ffi::c_void;
use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};
use std::rc::Rc;
use std::sync::Arc;

/// The NCCL functions of windows, probed before the first is called.
const SYMBOLS: &[&str] = &[
    "ncclGetVersion",
    "ncclMemAlloc",
    "ncclMemFree",
    "ncclCommWindowRegister",
    "ncclCommWindowDeregister",
];

/// The oldest NCCL whose all-gather runs on the copy engines between symmetric windows (2.28).
const COPY_ENGINE_NCCL: i32 = 22800;

/// A tensor on one GPU of a [`Devices`] set that collectives read or write: in a symmetric
/// window ([`CommTensor::is_window`]) or in ordinary device memory. It is a [`DeviceTensor`]
/// (`Deref`) for kernels, copies and collectives alike. Its buffer is its own: one swapped in
/// through `DerefMut` is dropped as its owner would, and the window's memory is then never
/// freed (leaked, not freed twice or while another tensor holds it).
pub struct CommTensor<T> {
    tensor: ManuallyDrop<DeviceTensor<T>>,
    window: Option<Window>,
}

/// A registered window and what freeing it needs.
struct Window {
    win: sys::ncclWindow_t,
    ptr: *mut c_void,
    /// The communicator it is registered with, kept alive until it is deregistered.
    rank: Rc<Rank>,
    /// The streams that may still use the memory: the GPU's own, its communication stream.
    streams: [Arc<CudaStream>; 2],
}

impl<T> CommTensor<T> {
    /// Is the tensor in a symmetric window?
    pub fn is_window(&self) -> bool {
        self.window.is_some()
    }

    /// A window's memory from `ncclMemAlloc` as a tensor of `len` elements, freed (and
    /// deregistered, once registered) when dropped; `None` for `len == 0`, the memory freed.
    ///
    /// # Safety
    /// `ptr` holds `len` elements of `T` on `streams[0]`'s device, from `ncclMemAlloc`.
    unsafe fn window(
        ptr: *mut c_void,
        len: usize,
        (rank, streams): (Rc<Rank>, [Arc<CudaStream>; 2]),
    ) -> Option<Self> {
        let buf = streams[0].upgrade_device_ptr::<T>(ptr as u64, len);
        let window = Window {
            win: std::ptr::null_mut(),
            ptr,
            rank,
            streams,
        };
        match DeviceTensor::adopt(buf) {
            Ok(t) => Some(Self {
                tensor: ManuallyDrop::new(t),
                window: Some(window),
            }),
            Err(buf) => {
                let _ = buf.leak();
                sys::ncclMemFree(window.ptr);
                None
            }
        }
    }
}

impl<T> Deref for CommTensor<T> {
    type Target = DeviceTensor<T>;
    fn deref(&self) -> &DeviceTensor<T> {
        &self.tensor
    }
}

impl<T> DerefMut for CommTensor<T> {
    fn deref_mut(&mut self) -> &mut DeviceTensor<T> {
        &mut self.tensor
    }
}

impl<T> Borrow<DeviceTensor<T>> for CommTensor<T> {
    fn borrow(&self) -> &DeviceTensor<T> {
        self
    }
}

impl<T> BorrowMut<DeviceTensor<T>> for CommTensor<T> {
    fn borrow_mut(&mut self) -> &mut DeviceTensor<T> {
        self
    }
}

impl<T> Drop for CommTensor<T> {
    /// Waits for the streams that may use a window's memory, deregisters it and gives it back to
    /// NCCL (errors here cannot be reported: the memory is then leaked, never freed twice).
    fn drop(&mut self) {
        // SAFETY: taken once, here, and not used after.
        let tensor = unsafe { ManuallyDrop::take(&mut self.tensor) };
        let Some(w) = self.window.take() else {
            return drop(tensor);
        };
        let idle = w.streams.iter().all(|s| s.synchronize().is_ok());
        let _ = w.streams[0].context().bind_to_thread();
        let (base, _) = tensor.buffer().device_ptr(&w.streams[0]);
        let own = base == w.ptr as u64;
        if own {
            // the slice borrowed NCCL's memory: not cudarc's to free
            let _ = tensor.into_buffer().leak();
        } else {
            // another buffer was swapped in: its owner's to free; ours lives on elsewhere
            drop(tensor);
        }
        if !idle {
            return;
        }
        // SAFETY: the window was registered with this communicator (or is null, which NCCL
        // ignores); no stream uses the memory any more, and no tensor holds it where `own`.
        unsafe {
            sys::ncclCommWindowDeregister(w.rank.raw, w.win);
            if own {
                sys::ncclMemFree(w.ptr);
            }
        }
    }
}

/// NCCL has symmetric windows and makes all-gathers between them on the copy engines (2.28+);
/// else why not.
fn probe_windows() -> Result<()> {
    let nccl = Library {
        file: "libnccl.so",
        what: "an NCCL with symmetric windows (2.28 or later)",
        hint: "pip's nvidia-nccl-cu12 2.28 or later has them",
    };
    // SAFETY: only probes whether the library loads.
    let present = unsafe { sys::is_culib_present() };
    probe(&nccl, present, first_missing!(sys, SYMBOLS)).map_err(GpuError::NoComm)?;
    let version = cudarc::nccl::result::get_nccl_version().map_err(|e| GpuError::Comm {
        what: "ncclGetVersion".into(),
        err: format!("{e:?}"),
    })?;
    if version < COPY_ENGINE_NCCL {
        return Err(GpuError::NoComm(format!(
            "NCCL {version} has no all-gather on the copy engines (2.28 or later: 22800)"
        )));
    }
    Ok(())
}

/// An NCCL status as this module's error.
fn status(what: &str, r: sys::ncclResult_t) -> Result<()> {
    if r == sys::ncclResult_t::ncclSuccess {
        return Ok(());
    }
    Err(GpuError::Comm {
        what: what.to_string(),
        err: format!("{r:?}"),
    })
}

/// cudarc's result of a group call as NCCL's status.
fn ok_or_status<S>(r: std::result::Result<S, NcclError>) -> sys::ncclResult_t {
    r.map_or_else(|e| e.0, |_| sys::ncclResult_t::ncclSuccess)
}

impl Devices {
    /// Can this NCCL put tensors in symmetric windows and gather between them on the copy
    /// engines? `Err` says why not.
    pub fn windows(&self) -> Result<()> {
        probe_windows()
    }

    /// One tensor of `layout` on each GPU this process drives, every element `fill`: in a
    /// symmetric window of the GPU's communicator where `window` (registered on every rank at
    /// once, so every process must ask for the same), else in ordinary device memory.
    /// [`GpuError::NoComm`] where windows are asked for and NCCL has none.
    pub fn comm_tensors<T: Elem>(
        &self,
        layout: Layout,
        fill: T,
        window: bool,
    ) -> Result<Vec<CommTensor<T>>> {
        let plain = |t| CommTensor {
            tensor: ManuallyDrop::new(t),
            window: None,
        };
        if !window {
            return self
                .gpus()
                .iter()
                .map(|g| Ok(plain(g.filled(layout, fill)?)))
                .collect();
        }
        probe_windows()?;
        let len = layout.cosize().max(1) as usize;
        let bytes = len * std::mem::size_of::<T>();
        let host = vec![fill; len];
        let mut ts = Vec::with_capacity(self.gpus().len());
        for (i, gpu) in self.gpus().iter().enumerate() {
            let (rank, comm_stream) = self.rank_of(i);
            let stream = gpu.stream();
            bind(stream, "ncclMemAlloc")?;
            let mut ptr = std::ptr::null_mut();
            // SAFETY: NCCL writes the address of `bytes` bytes on the current device.
            status("ncclMemAlloc", unsafe {
                sys::ncclMemAlloc(&mut ptr, bytes)
            })?;
            // owned at once: whatever fails below, its `Drop` gives the memory back to NCCL
            let owners = (rank.clone(), [stream.clone(), comm_stream.clone()]);
            // SAFETY: `len` elements of `T` at `ptr` on this device, from ncclMemAlloc.
            let mut t = unsafe { CommTensor::window(ptr, len, owners) }
                .ok_or_else(|| GpuError::Invalid("an empty window".into()))?;
            gpu.write_buffer(&mut t, &host)?;
            t.set_view(0, layout)?;
            ts.push(t);
        }
        // every rank of this process in one group: registering is collective
        status("ncclGroupStart", ok_or_status(group_start()))?;
        let mut calls = Ok(());
        for w in ts.iter_mut().filter_map(|t| t.window.as_mut()) {
            // SAFETY: `ptr` holds `bytes` bytes from ncclMemAlloc; `win` outlives the group.
            let r = unsafe { sys::ncclCommWindowRegister(w.rank.raw, w.ptr, bytes, &mut w.win, 1) };
            calls = calls.and(status("ncclCommWindowRegister", r));
        }
        let end = status("ncclGroupEnd", ok_or_status(group_end()));
        calls.and(end)?;
        // NCCL registers nothing (and says nothing) without symmetric support
        if ts
            .iter()
            .any(|t| t.window.as_ref().is_some_and(|w| w.win.is_null()))
        {
            return Err(GpuError::NoComm(
                "NCCL registered no symmetric window (it needs every pair of GPUs peer to peer, \
                 cuMem allocations and NCCL_WIN_ENABLE unset or 1)"
                    .into(),
            ));
        }
        Ok(ts)
    }
}
