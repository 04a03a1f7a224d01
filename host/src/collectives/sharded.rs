//! Workloads split across the GPUs of one host by the mesh algebra (`layout_core::mesh`): each
//! GPU's shard is `shard(global, mesh, rank)`, the kernels run on the shards, and the collective
//! that [`layout_core::rebuild`] names brings the result back (over NCCL, [`crate::collectives::comm`]).
//!
//! Each check compares the rebuilt result with the one-GPU result of the same inputs; without the
//! GPUs it runs the host execution of every shard against the one-GPU host execution, and says
//! so.

use layout_core::{rebuild, shard, shard_shape, IntTuple, Layout, Rebuild};

use crate::checks::exec;
use crate::collectives::comm::{CommElem, Devices};
use crate::elem::{RmsElem, Rng};
use crate::jobs::{rel_error, rmsnorm_reference, rmsnorm_size, rmsnorm_tolerance, Verdict};
use crate::runtime::gpu::{row_major, GpuError, Result};
use crate::tune::RmsConfig;

/// A layout error as [`GpuError::Invalid`], saying what was being done.
pub(crate) fn invalid(
    what: impl std::fmt::Display,
) -> impl Fn(layout_core::LayoutError) -> GpuError {
    move |e| GpuError::Invalid(format!("{what}: {e}"))
}

/// The mesh of `gpus` GPUs along mode `mode` of a matrix: `(gpus,1):(1,0)` or `(1,gpus):(0,1)`.
pub fn mesh_along(mode: usize, gpus: usize) -> Result<Layout> {
    let (s, d) = if mode == 0 {
        ([gpus as i64, 1], [1, 0])
    } else {
        ([1, gpus as i64], [0, 1])
    };
    IntTuple::from_ints(&s)
        .and_then(|s| Layout::from_parts(s, &d))
        .map_err(invalid(format!("a mesh of {gpus} GPUs")))
}

/// A view `offset o layout` of a rank-2 tensor.
pub(crate) type View = (i64, Layout);

/// `shard(t, mesh, r)` of a view.
pub(crate) fn shard_view((off, l): View, mesh: &Layout, r: usize) -> Result<View> {
    let (l2, o2) =
        shard(&l, mesh, r as i64).map_err(invalid(format!("shard {r} of {l} over {mesh}")))?;
    Ok((off + o2, l2))
}

/// The buffer ranges of a rank-2 view's rows, in order, and their element stride: one
/// contiguous run per row where its mode 1 is flat with unit stride (each row then copied as one
/// slice), else `None` (element by element, through the layout).
fn rows_of((off, l): &View) -> Option<impl Iterator<Item = std::ops::Range<usize>> + '_> {
    let [r, c] = [l.shapes()[0], l.shapes()[1]];
    let flat = l.depth() <= 1 && l.strides().get(1) == Some(&1);
    flat.then(|| {
        (0..r).map(move |i| {
            let at = (off + l.dot(&[i, 0])) as usize;
            at..at + c as usize
        })
    })
}

/// The elements of a rank-2 view of `x`, row by row.
pub(crate) fn take<T: Copy>(x: &[T], v: &View) -> Vec<T> {
    if let Some(rows) = rows_of(v) {
        return rows.flat_map(|row| x[row].iter().copied()).collect();
    }
    let (off, l) = v;
    let [r, c] = [l.shapes()[0], l.shapes()[1]];
    (0..r)
        .flat_map(|i| (0..c).map(move |j| (i, j)))
        .map(|(i, j)| x[(off + l.dot(&[i, j])) as usize])
        .collect()
}

/// `x`'s elements of a rank-2 view set from `v`, row by row.
pub(crate) fn put<T: Copy>(x: &mut [T], view: &View, v: &[T]) {
    if let Some(rows) = rows_of(view) {
        let mut from = v.chunks(view.1.shapes()[1].max(1) as usize);
        for (row, src) in rows.zip(&mut from) {
            x[row].copy_from_slice(src);
        }
        return;
    }
    let (off, l) = view;
    let c = l.shapes()[1];
    for (e, &val) in v.iter().enumerate() {
        let (i, j) = (e as i64 / c, e as i64 % c);
        x[(off + l.dot(&[i, j])) as usize] = val;
    }
}

/// The elements of `x` (row-major `rows x cols`) in GPU `rank`'s shard over `mesh`, in the
/// shard's own row-major order, and the shard's shape.
fn shard_of<T: Copy>(
    x: &[T],
    global: &Layout,
    mesh: &Layout,
    rank: usize,
) -> Result<(Vec<T>, [usize; 2])> {
    let v = shard_view((0, *global), mesh, rank)?;
    let shape = [v.1.shapes()[0] as usize, v.1.shapes()[1] as usize];
    Ok((take(x, &v), shape))
}

/// RMSNorm of a random `rows x cols` batch split by rows over `gpus` GPUs (mesh
/// `(gpus,1):(1,0)`; `rows` a multiple of `gpus`): each GPU normalizes its shard, and an
/// all-gather in rank order rebuilds the batch on every GPU (`rebuild` says the gathered
/// buffer is the row-major batch itself). Every rank's rebuilt batch must be bit-equal to the
/// one-GPU kernel's result on GPU 0 (rows are independent: the same code on the same row gives
/// the same bits), which must be within RMSNorm's tolerance of f64. Without `devs`: the host
/// execution of every shard against the one-GPU host execution, bit for bit.
pub fn run_rmsnorm_sharded<T: RmsElem + CommElem>(
    devs: Option<&Devices>,
    gpus: usize,
    (rows, cols): (usize, usize),
    cfg: Option<RmsConfig>,
    rng: &mut Rng,
) -> Result<Verdict> {
    let eps = 1e-6f32;
    rmsnorm_size(rows, cols)?;
    let mesh = mesh_along(0, gpus)?;
    let global = row_major(rows as i64, cols as i64)?;
    let s = shard_shape(&global.shape(), &mesh).map_err(|e| {
        GpuError::Invalid(format!(
            "rmsnorm of {rows} rows over {gpus} GPUs (mesh {mesh}): {e} (equal shards)"
        ))
    })?;
    let shard_layout = row_major(s.leaves()[0], s.leaves()[1])?;
    let how = rebuild(&global, &mesh, &shard_layout)
        .map_err(|e| GpuError::Invalid(format!("rebuilding over {mesh}: {e}")))?;
    let x: Vec<T> = rng.fill(rows * cols);
    let w: Vec<T> = rng.fill(cols);
    let smem = devs.map_or(232_448, |d| d.gpus()[0].rmsnorm_smem());
    let cfg = cfg.unwrap_or_else(|| RmsConfig::default_for::<T>(cols as i64, smem));
    let staged = T::staged_for(cfg.warps, cols as i64, cfg.smem);
    let what = format!(
        "rmsnorm {} {rows}x{cols} {cfg} over {gpus} GPUs (mesh {mesh}, shards {s}, {how:?})",
        T::NAME
    );
    let fail = |why: String| {
        Ok(Verdict {
            skipped: false,
            ok: false,
            line: format!("{what}: FAIL {why}"),
        })
    };
    if how != Rebuild::AllGather && how != Rebuild::Whole {
        return fail(format!("the row shards do not gather in place ({how:?})"));
    }
    let Some(devs) = devs else {
        // the host execution of every shard, against the rows of the one-GPU host execution
        let whole = exec::rmsnorm(
            &x,
            &w,
            rows as i64,
            cols as i64,
            eps,
            (cfg.warps, staged),
            T::poison(),
        );
        for r in 0..gpus {
            let (xs, [sr, sc]) = shard_of(&x, &global, &mesh, r)?;
            let (want, _) = shard_of(&whole.out, &global, &mesh, r)?;
            let run = exec::rmsnorm(
                &xs,
                &w,
                sr as i64,
                sc as i64,
                eps,
                (cfg.warps, staged),
                T::poison(),
            );
            if let Some(i) = (0..want.len()).find(|&i| run.out[i].bits() != want[i].bits()) {
                return fail(format!(
                    "shard {r}'s host execution differs from the one-GPU host execution at \
                     element {i} of the shard"
                ));
            }
        }
        return Ok(Verdict {
            skipped: false,
            ok: true,
            line: format!(
                "{what}: host executions of the {gpus} shards = the one-GPU host execution, \
                 bit-exact (NOT run on {gpus} GPUs)"
            ),
        });
    };
    if devs.len() != gpus {
        return Err(GpuError::Invalid(format!(
            "{gpus} GPUs asked for, {} opened",
            devs.len()
        )));
    }
    // the one-GPU result, on GPU 0
    let g0 = &devs.gpus()[0];
    let lw = Layout::int(cols as i64, 1).map_err(|e| GpuError::Invalid(e.to_string()))?;
    let one = crate::jobs::rmsnorm_on(g0, &x, &w, (rows, cols), eps, cfg)?;
    let tol = rmsnorm_tolerance::<T>();
    let err = rel_error(&one, &rmsnorm_reference(&x, &w, cols, eps as f64));
    if err > tol {
        return fail(format!(
            "the one-GPU result's error {err:.2e} > {tol:.0e} vs f64"
        ));
    }
    // each shard on its GPU, then the all-gather into every GPU's whole batch
    let mut ys = Vec::with_capacity(gpus);
    let mut outs = Vec::with_capacity(gpus);
    let gathered = layout_core::gathered(&mesh, &shard_layout)
        .map_err(|e| GpuError::Invalid(format!("{mesh}: {e}")))?;
    for (r, g) in devs.ranks().zip(devs.gpus()) {
        let (xs, _) = shard_of(&x, &global, &mesh, r)?;
        let dx = g.upload(&xs, shard_layout)?;
        let dw = g.upload(&w, lw)?;
        let mut dy = g.filled(shard_layout, T::poison())?;
        g.rmsnorm_with(&dx, &dw, &mut dy, eps, cfg)?;
        ys.push(dy);
        outs.push(g.filled(gathered, T::poison())?);
    }
    devs.all_gather(&mesh, &ys, &mut outs)?;
    devs.sync()?;
    for (r, (g, o)) in devs.ranks().zip(devs.gpus().iter().zip(&outs)) {
        let got = g.download(o)?;
        if let Some(i) = (0..got.len()).find(|&i| got[i].bits() != one[i].bits()) {
            return fail(format!(
                "GPU {r}'s gathered batch differs from the one-GPU result at element {i} \
                 ({:?} vs {:?})",
                got[i], one[i]
            ));
        }
    }
    Ok(Verdict {
        skipped: false,
        ok: true,
        line: format!(
            "{what}: PASS every GPU's all-gathered batch = the one-GPU result, bit-exact \
             ({} elements; that result's error {err:.2e} vs f64, tolerance {tol:.0e})",
            rows * cols
        ),
    })
}

/// A timed all-reduce over a set of GPUs: NCCL's figures (as `nccl-tests` prints them).
#[derive(Debug, Clone)]
pub struct AllReduceTiming {
    /// What was reduced.
    pub what: String,
    /// GPUs.
    pub gpus: usize,
    /// Bytes of each rank's buffer.
    pub bytes: f64,
    /// Median milliseconds (CUDA events on GPU 0's stream around each all-reduce).
    pub ms: f64,
    /// Fastest and slowest runs, milliseconds.
    pub spread: (f64, f64),
}

impl AllReduceTiming {
    /// Algorithm bandwidth, GB/s: a buffer's bytes over the time.
    pub fn algbw(&self) -> f64 {
        self.bytes / self.ms / 1e6
    }
    /// Bus bandwidth, GB/s: `algbw * 2 (n - 1) / n`, what each link carries in a ring all-reduce
    /// (comparable across GPU counts, and with `nccl-tests` and torch's figures).
    pub fn busbw(&self) -> f64 {
        let n = self.gpus as f64;
        self.algbw() * 2.0 * (n - 1.0) / n
    }
}

/// Sums `elems` random values of `T` on every GPU of `devs` with [`Devices::all_reduce`]: first
/// checked (each rank's result against the f64 sum of the ranks' inputs, within `T`'s rounding
/// of `gpus` additions), then timed, `reps` runs after 5 warm-ups (in place: the values grow by
/// a factor of `gpus` a run, far from overflow in 60 runs for two GPUs).
pub fn bench_all_reduce<T: CommElem>(
    devs: &Devices,
    elems: usize,
    reps: usize,
    rng: &mut Rng,
) -> Result<AllReduceTiming> {
    let n = devs.len();
    let l = Layout::int(elems as i64, 1).map_err(|e| GpuError::Invalid(e.to_string()))?;
    let inputs: Vec<Vec<T>> = (0..n).map(|_| rng.fill(elems)).collect();
    let mut bufs = devs
        .ranks()
        .zip(devs.gpus())
        .map(|(r, g)| g.upload(&inputs[r], l))
        .collect::<Result<Vec<_>>>()?;
    devs.all_reduce(&mut bufs)?;
    devs.sync()?;
    let tol = if std::mem::size_of::<T>() == 4 {
        2e-7 * n as f64
    } else {
        8e-3 * n as f64
    };
    for (r, (g, b)) in devs.ranks().zip(devs.gpus().iter().zip(&bufs)) {
        let got = g.download(b)?;
        for (i, v) in got.iter().enumerate() {
            let want: f64 = inputs.iter().map(|x| x[i].to_f64()).sum();
            let scale: f64 = inputs.iter().map(|x| x[i].to_f64().abs()).sum();
            if (v.to_f64() - want).abs() > tol * scale.max(f64::MIN_POSITIVE) {
                return Err(GpuError::Invalid(format!(
                    "all_reduce over {n} GPUs: rank {r}'s element {i} is {v:?}, the sum {want}"
                )));
            }
        }
    }
    let g0 = &devs.gpus()[0];
    let (ms, _) = g0.time(5, reps, || devs.all_reduce(&mut bufs))?;
    devs.sync()?;
    Ok(AllReduceTiming {
        what: format!("all_reduce {} n={elems}", T::NAME),
        gpus: n,
        bytes: (elems * std::mem::size_of::<T>()) as f64,
        ms: ms[ms.len() / 2],
        spread: (ms[0], ms[ms.len() - 1]),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use half::bf16;

    #[test]
    fn every_shards_host_execution_is_the_one_gpu_rows() {
        let mut rng = Rng::new(7);
        for (gpus, rows, cols) in [(1, 3, 8), (2, 6, 64), (4, 8, 1000), (3, 9, 4096)] {
            let v = run_rmsnorm_sharded::<f32>(None, gpus, (rows, cols), None, &mut rng).unwrap();
            assert!(v.ok && v.line.contains("bit-exact"), "{}", v.line);
            let v = run_rmsnorm_sharded::<bf16>(None, gpus, (rows, cols), None, &mut rng).unwrap();
            assert!(v.ok, "{}", v.line);
        }
    }

    #[test]
    fn unequal_shards_are_refused_naming_the_rows() {
        let e = run_rmsnorm_sharded::<f32>(None, 2, (7, 64), None, &mut Rng::new(1)).unwrap_err();
        assert!(e.to_string().contains("2 does not divide 7"), "{e}");
    }

    #[test]
    fn a_shard_is_its_rows_of_the_batch() {
        let x: Vec<u32> = (0..24).collect();
        let (global, mesh) = (row_major(6, 4).unwrap(), mesh_along(0, 3).unwrap());
        let (s, shape) = shard_of(&x, &global, &mesh, 1).unwrap();
        assert_eq!((s, shape), ((8..16).collect(), [2, 4]));
    }
}
