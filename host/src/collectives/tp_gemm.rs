//! A tensor-parallel GEMM: `C = A B^T` (A `(M,K)`, B `(N,K)`, C `(M,N)`, row-major) split over the
//! GPUs of a [`Devices`] set by the mesh algebra (`layout_core::mesh`), in `J` chunks of C's rows
//! so that the collective of one chunk runs while the GPUs compute the next.
//!
//! For chunk `j` (`local_tile` of a tensor by the chunk's rows) and GPU `r` ([`Split`]):
//! - [`Split::Rows`]: A's rows `shard(chunk_j(A), (R,1):(1,0), r)`, all of B; each GPU's GEMM
//!   writes its rows `shard(chunk_j(C), (R,1):(1,0), r)` straight into its copy of C, and an
//!   all-gather in place fills in the other GPUs' rows (`rebuild` says `AllGather`: the gathered
//!   shards are the chunk as it is). Over the chunks GPU `r` holds every `R`-th block of A's
//!   rows: the layout that lets each chunk's all-gather land in C.
//! - [`Split::Cols`]: all of A, B's rows `shard(B, (R,1):(1,0), r)` (C's columns); the chunk is
//!   rebuilt by an all-gather and a copy into C's rows (`AllGatherThenCopy`).
//! - [`Split::K`]: A's and B's columns `shard(_, (1,R):(0,1), r)`; each GPU's chunk is a partial
//!   sum, which a reduce-scatter sums and splits by rows: GPU `r` ends with
//!   `shard(chunk_j(C), (R,1):(1,0), r)`.
//!
//! Every GPU's result is checked against the one-GPU GEMM of the whole problem on the first GPU
//! this process drives: bit for
//! bit where each element is the same sum in the same order (rows, columns), within the proven
//! bound of the `f64` reference for the K split. Without GPUs the host execution of every shard
//! and chunk, moved as the collectives would, is checked the same way against the whole host
//! execution.

use layout_core::{local_tile, IntTuple, Layout};

use crate::blas::{self, gemm_reference_and_tolerance};
use crate::collectives::comm::{CommElem, Devices};
use crate::collectives::sharded::{invalid, mesh_along, put, shard_view, take, View};
use crate::collectives::window::CommTensor;
use crate::elem::{Elem, Rng};
use crate::jobs::gemm::{GemmIn, GemmOut, HOST_EXECUTION};
use crate::jobs::Verdict;
use crate::runtime::gpu::{row_major, DeviceTensor, Gpu, GpuError, MappedGemm, Result};
use crate::runtime::tma::GemmMaps;

/// How the GEMM is split over the GPUs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Split {
    /// A by rows; C all-gathered.
    Rows,
    /// B by rows (C by columns); C all-gathered, then copied into place.
    Cols,
    /// A and B by columns (K); the partial sums reduce-scattered by rows.
    K,
}

impl Split {
    /// `rows`, `cols`, `k`.
    pub fn name(self) -> &'static str {
        match self {
            Split::Rows => "rows",
            Split::Cols => "cols",
            Split::K => "k",
        }
    }
}

/// `local_tile(t, (rows, cols(t)), (j, 0))`: chunk `j` of a rank-2 view's rows.
fn chunk((off, l): View, rows: i64, j: i64) -> Result<View> {
    let tile = IntTuple::from_ints(&[rows, l.shapes()[1]]).map_err(invalid("a chunk"))?;
    let at = IntTuple::from_ints(&[j, 0]).map_err(invalid("a chunk"))?;
    let (l2, o2) = local_tile(&l, &tile, &at).map_err(invalid(format!("chunk {j} of {l}")))?;
    Ok((off + o2, l2))
}

/// The problem split over `gpus` GPUs in `chunks` chunks: what each GPU computes of each chunk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// How.
    pub split: Split,
    /// GPUs.
    pub gpus: usize,
    /// The global `[M, N, K]`.
    pub mnk: [usize; 3],
    /// Chunks of C's rows.
    pub chunks: usize,
    /// The collectives' tensors in symmetric windows ([`crate::collectives::window`]): NCCL gathers between
    /// them on the copy engines, on no SM. [`Plan::new`] leaves them in ordinary device memory.
    pub windows: bool,
}

impl Plan {
    /// The split of `mnk` over `gpus` GPUs in `chunks` chunks; `Err` names the size that does not
    /// divide into equal shards (NCCL's collectives move equal shards).
    pub fn new(split: Split, gpus: usize, mnk: [usize; 3], chunks: usize) -> Result<Self> {
        let [m, n, k] = mnk;
        let what = format!(
            "gemm {m}x{n}x{k} split by {} over {gpus} GPUs in {chunks} chunks",
            split.name()
        );
        if gpus == 0 || chunks == 0 {
            return Err(GpuError::Invalid(format!("{what}: no GPU or no chunk")));
        }
        // the chunks' rows, split again by the GPUs where the rows are sharded
        let rows_per = match split {
            Split::Rows | Split::K => chunks * gpus,
            Split::Cols => chunks,
        };
        let need = |size: usize, by: usize, name: &str| {
            if size.is_multiple_of(by) {
                Ok(())
            } else {
                Err(GpuError::Invalid(format!(
                    "{what}: {name} = {size} is not a multiple of {by}"
                )))
            }
        };
        need(m, rows_per, "M")?;
        match split {
            Split::Rows => {}
            Split::Cols => need(n, gpus, "N")?,
            Split::K => need(k, gpus, "K")?,
        }
        Ok(Self {
            split,
            gpus,
            mnk,
            chunks,
            windows: false,
        })
    }

    /// The same plan, its collectives' tensors in symmetric windows or not.
    pub fn in_windows(self, windows: bool) -> Self {
        Self { windows, ..self }
    }

    fn layouts(&self) -> Result<[Layout; 3]> {
        let [m, n, k] = self.mnk.map(|x| x as i64);
        Ok([row_major(m, k)?, row_major(n, k)?, row_major(m, n)?])
    }

    /// Rows of C in a chunk.
    fn chunk_rows(&self) -> i64 {
        (self.mnk[0] / self.chunks) as i64
    }

    /// GPU `r`'s part of chunk `j`: its A (in global A), its B (in global B), where its result
    /// lies in C (for the K split, the whole chunk: a partial sum), and where the collective
    /// leaves GPU `r`'s result of the chunk (all of the chunk, or its rows of it).
    fn part(&self, j: usize, r: usize) -> Result<[View; 4]> {
        let [a, b, c] = self.layouts()?;
        let (rows, cols) = (mesh_along(0, self.gpus)?, mesh_along(1, self.gpus)?);
        let (h, j) = (self.chunk_rows(), j as i64);
        let whole = |l: Layout| (0i64, l);
        Ok(match self.split {
            Split::Rows => {
                let cj = chunk(whole(c), h, j)?;
                [
                    shard_view(chunk(whole(a), h, j)?, &rows, r)?,
                    whole(b),
                    shard_view(cj, &rows, r)?,
                    cj,
                ]
            }
            Split::Cols => {
                let cj = chunk(whole(c), h, j)?;
                [
                    chunk(whole(a), h, j)?,
                    shard_view(whole(b), &rows, r)?,
                    shard_view(cj, &cols, r)?,
                    cj,
                ]
            }
            Split::K => {
                let cj = chunk(whole(c), h, j)?;
                [
                    shard_view(chunk(whole(a), h, j)?, &cols, r)?,
                    shard_view(whole(b), &cols, r)?,
                    cj,
                    shard_view(cj, &rows, r)?,
                ]
            }
        })
    }

    /// The mesh of the collective that rebuilds a chunk (the K split's reduce-scatter's rows).
    fn mesh(&self) -> Result<Layout> {
        mesh_along(usize::from(self.split == Split::Cols), self.gpus)
    }

    /// `[m, n, k]` of one GPU's GEMM of one chunk.
    fn local_mnk(&self) -> [usize; 3] {
        let [m, n, k] = self.mnk;
        let (g, h) = (self.gpus, self.chunk_rows() as usize);
        match self.split {
            Split::Rows => [h / g, n, k],
            Split::Cols => [h, n / g, k],
            Split::K => [h, n, k / g],
        }
        .map(|x| x.max(usize::from(m == 0)))
    }
}

/// `c = a b^T` (alpha 1, beta 0) with the fastest GEMM the GPU has: `gemm_sm90` through `maps`
/// where given, else `gemm_sm80`.
fn gemm_on<I: GemmIn, O: GemmOut>(
    g: &Gpu,
    maps: Option<&GemmMaps>,
    a: &DeviceTensor<I>,
    b: &DeviceTensor<I>,
    c: &mut DeviceTensor<O>,
) -> Result<()> {
    match maps {
        Some(m) => g.gemm_mapped(MappedGemm::Sm90, m, a, b, c, 1.0, 0.0),
        None => g.gemm(a, b, c, 1.0, 0.0),
    }
}

/// The tensor maps of `gemm_sm90` for `a`, `b`, `c` where the loaded PTX has it for `I` into
/// `O` and the rows are a multiple of 16 bytes; else `None` (`gemm_sm80` runs).
fn maps_for<I: GemmIn, O: GemmOut>(
    g: &Gpu,
    a: &DeviceTensor<I>,
    b: &DeviceTensor<I>,
    c: &DeviceTensor<O>,
) -> Result<Option<GemmMaps>> {
    let k = a.layout().shapes()[1] as usize;
    if g.has_mapped_gemm::<I, O>(MappedGemm::Sm90)
        && (k * std::mem::size_of::<I>()).is_multiple_of(16)
    {
        Ok(Some(GemmMaps::new(g, a, b, c)?))
    } else {
        Ok(None)
    }
}

/// A [`Plan`]'s tensors on every GPU this process drives, and each chunk's views of them.
struct Tensors<I, O> {
    a: Vec<DeviceTensor<I>>,
    b: Vec<DeviceTensor<I>>,
    /// Each GPU's results, chunk after chunk (compact): cols, K; none for rows, whose GEMMs
    /// write into `out`.
    c: Vec<CommTensor<O>>,
    /// The rebuilt C (rows, cols), or the GPU's rows of each chunk (K).
    out: Vec<CommTensor<O>>,
    /// The all-gathered chunks before their copy into `out` (cols; else none).
    staging: Vec<CommTensor<O>>,
    /// Per chunk, on every GPU: the views of `a`, `c`, `out` and `staging`.
    views: Vec<[View; 4]>,
    /// Per GPU, per chunk: `gemm_sm90`'s maps.
    maps: Vec<Vec<Option<GemmMaps>>>,
}

/// The tensor the `i`-th GPU's GEMM writes: its `c`, or (rows) its `out`.
fn target<'t, O>(
    c: &'t mut [CommTensor<O>],
    out: &'t mut [CommTensor<O>],
    i: usize,
) -> &'t mut DeviceTensor<O> {
    match c.get_mut(i) {
        Some(c) => c,
        None => &mut out[i],
    }
}

impl Plan {
    /// Views each GPU's tensors as chunk `j`'s GEMM has them: its A, the C it writes (for rows,
    /// the GPU's block of the chunk in `out`), `out` and `staging`. `ranks`: the GPUs' ranks.
    fn set_chunk<I, O>(
        &self,
        t: &mut Tensors<I, O>,
        j: usize,
        ranks: std::ops::Range<usize>,
    ) -> Result<()> {
        let [(ao, al), (co, cl), out, (so, sl)] = t.views[j];
        for (i, rank) in ranks.enumerate() {
            t.a[i].set_view(ao, al)?;
            let (oo, ol) = match self.split {
                Split::Rows => shard_view(out, &self.mesh()?, rank)?,
                _ => out,
            };
            t.out[i].set_view(oo, ol)?;
            if let Some(c) = t.c.get_mut(i) {
                c.set_view(co, cl)?;
            }
            if let Some(s) = t.staging.get_mut(i) {
                s.set_view(so, sl)?;
            }
        }
        Ok(())
    }

    /// The plan's tensors on every GPU of `devs`, from the global `a` and `b`; results
    /// poisoned.
    fn upload<I: GemmIn, O: GemmOut>(
        &self,
        devs: &Devices,
        a: &[I],
        b: &[I],
    ) -> Result<Tensors<I, O>> {
        let [lm, ln, lk] = self.local_mnk().map(|x| x as i64);
        let (g, h, n) = (self.gpus as i64, self.chunk_rows(), self.mnk[1] as i64);
        let j_all = self.chunks as i64;
        let out_rows = if self.split == Split::K { h / g } else { h };
        let staged = self.split == Split::Cols;
        let mut views = vec![];
        for j in 0..j_all {
            let staging = if staged {
                let l = layout_core::gathered(&self.mesh()?, &row_major(h, n / g)?)
                    .map_err(invalid("the gathered chunk"))?;
                (j * h * n, l)
            } else {
                (0, row_major(1, 1)?)
            };
            views.push([
                (j * lm * lk, row_major(lm, lk)?),
                (j * lm * ln, row_major(lm, ln)?),
                (j * out_rows * n, row_major(out_rows, n)?),
                staging,
            ]);
        }
        let poisoned = |rows: i64, cols: i64| -> Result<Vec<CommTensor<O>>> {
            devs.comm_tensors(row_major(rows, cols)?, O::poison(), self.windows)
        };
        let mut t = Tensors {
            a: vec![],
            b: vec![],
            c: match self.split {
                Split::Rows => vec![],
                _ => poisoned(lm * j_all, ln)?,
            },
            out: poisoned(out_rows * j_all, n)?,
            staging: if staged {
                poisoned(1, h * j_all * n)?
            } else {
                vec![]
            },
            views,
            maps: vec![],
        };
        for (r, gpu) in devs.ranks().zip(devs.gpus()) {
            let parts = (0..self.chunks)
                .map(|j| self.part(j, r))
                .collect::<Result<Vec<_>>>()?;
            let a_r: Vec<I> = parts.iter().flat_map(|v| take(a, &v[0])).collect();
            t.a.push(gpu.upload(&a_r, row_major(lm * j_all, lk)?)?);
            t.b.push(gpu.upload(&take(b, &parts[0][1]), row_major(ln, lk)?)?);
            t.maps.push(vec![]);
        }
        for j in 0..self.chunks {
            self.set_chunk(&mut t, j, devs.ranks())?;
            for (i, gpu) in devs.gpus().iter().enumerate() {
                let m = maps_for(gpu, &t.a[i], &t.b[i], target(&mut t.c, &mut t.out, i))?;
                t.maps[i].push(m);
            }
        }
        Ok(t)
    }

    /// Enqueues the whole split GEMM: for each chunk, every GPU's GEMM, then the collective
    /// that rebuilds the chunk, started beside the next chunk's GEMMs; at the end each GPU's
    /// later work waits for the collectives.
    fn enqueue<I: GemmIn, O: GemmOut + CommElem>(
        &self,
        devs: &Devices,
        t: &mut Tensors<I, O>,
    ) -> Result<()> {
        let run = self.enqueue_chunks(devs, t);
        // the GPUs wait for the collectives started, also after an error: the tensors may be
        // dropped (freed on the GPUs' own streams) once this returns
        let waited = devs.wait_comm();
        run.and(waited)
    }

    fn enqueue_chunks<I: GemmIn, O: GemmOut + CommElem>(
        &self,
        devs: &Devices,
        t: &mut Tensors<I, O>,
    ) -> Result<()> {
        let mesh = self.mesh()?;
        for j in 0..self.chunks {
            self.set_chunk(t, j, devs.ranks())?;
            for (i, gpu) in devs.gpus().iter().enumerate() {
                let c = target(&mut t.c, &mut t.out, i);
                gemm_on(gpu, t.maps[i][j].as_ref(), &t.a[i], &t.b[i], c)?;
            }
            match self.split {
                Split::Rows => {
                    // each GPU's rows are in place: the whole chunk gathers the others'
                    let [_, (_, shard), (oo, ol), _] = t.views[j];
                    for o in &mut t.out {
                        o.set_view(oo, ol)?;
                    }
                    devs.start_all_gather_in_place(&mesh, &shard, &mut t.out)?
                }
                Split::Cols => devs.start_rebuild(&mesh, &t.c, &mut t.staging, &mut t.out)?,
                Split::K => devs.start_reduce_scatter(&mesh, &t.c, &mut t.out)?,
            }
        }
        Ok(())
    }

    /// The global C from the `out` of the GPUs of ranks `first..` (downloaded whole): the first
    /// one's (rows, cols; every other's must be bit-equal to it, else `Err` says where), or the
    /// GPUs' rows put together (K; the other ranks' rows poisoned).
    fn result<O: Elem>(
        &self,
        first: usize,
        outs: &[Vec<O>],
    ) -> std::result::Result<Vec<O>, String> {
        if self.split != Split::K {
            for (r, o) in outs.iter().enumerate().skip(1) {
                if let Some(i) = (0..o.len()).find(|&i| o[i].bits() != outs[0][i].bits()) {
                    return Err(format!(
                        "GPU {}'s C differs from GPU {first}'s at element {i}",
                        first + r
                    ));
                }
            }
            return Ok(outs[0].clone());
        }
        let [m, n, _] = self.mnk;
        let mut c = vec![O::poison(); m * n];
        let rows = self.chunk_rows() as usize / self.gpus;
        for (r, o) in (first..).zip(outs) {
            for j in 0..self.chunks {
                let v = self.part(j, r).map_err(|e| e.to_string())?[3];
                put(&mut c, &v, &o[j * rows * n..(j + 1) * rows * n]);
            }
        }
        Ok(c)
    }

    /// The rows of C the ranks `ranks` hold at the end (sorted): all of them, or for the K split
    /// their rows of each chunk.
    fn rows_of(&self, ranks: std::ops::Range<usize>) -> Result<Vec<usize>> {
        let n = self.mnk[1] as i64;
        if self.split != Split::K {
            return Ok((0..self.mnk[0]).collect());
        }
        let mut rows = vec![];
        for j in 0..self.chunks {
            for r in ranks.clone() {
                let (off, l) = self.part(j, r)?[3];
                rows.extend((0..l.shapes()[0]).map(|i| (off / n + i) as usize));
            }
        }
        rows.sort_unstable();
        Ok(rows)
    }

    /// The problem and its split, for a line.
    fn problem<I: Elem, O: Elem>(&self) -> String {
        let [m, n, k] = self.mnk;
        format!(
            "gemm_{}_{} {m}x{n}x{k} split by {} over {} GPUs",
            I::NAME,
            O::NAME,
            self.split.name(),
            self.gpus,
        )
    }

    /// What the plan is, for a line.
    fn what<I: Elem, O: Elem>(&self) -> String {
        format!(
            "{} in {} chunk{}{}",
            self.problem::<I, O>(),
            self.chunks,
            if self.chunks == 1 { "" } else { "s" },
            if self.windows { ", windows" } else { "" }
        )
    }

    /// The host execution of every GPU's GEMM of every chunk, moved and summed as the
    /// collectives would: the global C.
    fn host_execution<I: GemmIn, O: GemmOut>(&self, a: &[I], b: &[I]) -> Result<Vec<O>> {
        let [m, n, _] = self.mnk;
        let [lm, ln, lk] = self.local_mnk();
        let mut out = vec![O::poison(); m * n];
        let mut sum = vec![0f64; m * n];
        for j in 0..self.chunks {
            for r in 0..self.gpus {
                let [va, vb, vc, _] = self.part(j, r)?;
                let x = crate::checks::gemm_sm80::Inputs {
                    mnk: [lm, ln, lk],
                    a: take(a, &va),
                    b: take(b, &vb),
                    c: vec![O::poison(); lm * ln],
                    alpha: 1.0,
                    beta: 0.0,
                };
                let c = crate::checks::gemm_sm80::simulate::<I, O, 0>(
                    &x,
                    crate::checks::gemm_sm80::Fill::CpAsync,
                    0,
                )
                .map_err(|e| GpuError::Invalid(format!("gemm_sm80 on the simulated GPU: {e}")))?;
                if self.split == Split::K {
                    // in rank order, each sum rounded to O as NCCL's
                    let mut acc = take(&sum, &vc);
                    for (s, x) in acc.iter_mut().zip(&c) {
                        *s = O::from_f64(*s + x.to_f64()).to_f64();
                    }
                    put(&mut sum, &vc, &acc);
                } else {
                    put(&mut out, &vc, &c);
                }
            }
        }
        if self.split == Split::K {
            out = sum.iter().map(|&x| O::from_f64(x)).collect();
        }
        Ok(out)
    }
}

/// The split GEMM of fresh random `a` and `b`, checked as the module says. `devs`: on its GPUs;
/// `None`: the host executions (up to 2^25 multiply-adds).
pub fn run_gemm_split<I: GemmIn, O: GemmOut + CommElem + blas::GemmOut<I>>(
    devs: Option<&Devices>,
    plan: &Plan,
    rng: &mut Rng,
) -> Result<Verdict>
where
    f32: blas::GemmOut<I>,
{
    let [m, n, k] = plan.mnk;
    let what = plan.what::<I, O>();
    let a: Vec<I> = rng.fill(m * k);
    let b: Vec<I> = rng.fill(n * k);
    let verdict = |ok: bool, line: String| {
        Ok(Verdict {
            ok,
            skipped: false,
            line: format!("{what}: {} {line}", if ok { "PASS" } else { "FAIL" }),
        })
    };
    let exact = plan.split != Split::K;
    let not_run = |why: String| {
        Ok(Verdict {
            ok: true,
            skipped: true,
            line: format!("{what}: not run ({why})"),
        })
    };
    if plan.windows {
        match devs.map(Devices::windows) {
            None => {
                return not_run(
                    "no GPUs; the host executions are those of the plan without windows".into(),
                )
            }
            Some(Err(e)) => return not_run(format!("no symmetric windows: {e}")),
            Some(Ok(())) => {}
        }
    }
    // the reference at every row, or a sample of them
    let mut rows = crate::jobs::gemm::rows_to_check(plan.mnk, rng);
    if let Some(d) = devs {
        // the K split leaves each rank its rows: those of the ranks this process drives
        let mine = plan.rows_of(d.ranks())?;
        rows.retain(|r| mine.binary_search(r).is_ok());
    }
    let (want, tol) = {
        let none: Vec<O> = vec![O::poison(); rows.len() * n];
        gemm_reference_and_tolerance::<I, O>(
            &crate::jobs::gemm::take_rows(&a, k, &rows),
            &b,
            &none,
            rows.len(),
            n,
            k,
            1.0,
            0.0,
        )
    };
    let check =
        |c: &[O]| blas::check_gemm(&crate::jobs::gemm::take_rows(c, n, &rows), &want, &tol, n);
    let Some(devs) = devs else {
        if m * n * k > HOST_EXECUTION {
            return not_run("no GPUs; the host executions run up to 2^25 multiply-adds".into());
        }
        let whole = Plan::new(plan.split, 1, plan.mnk, 1)?.host_execution::<I, O>(&a, &b)?;
        let split = plan.host_execution::<I, O>(&a, &b)?;
        let chk = check(&split);
        if exact {
            if let Some(i) = (0..whole.len()).find(|&i| whole[i].bits() != split[i].bits()) {
                return verdict(
                    false,
                    format!("the shards' host executions differ from the whole one at element {i}"),
                );
            }
        }
        return verdict(
            chk.ok(),
            format!(
                "host executions of every shard and chunk{} (NOT run on {} GPUs); vs the f64 \
                 reference: {chk}",
                if exact {
                    " = the one-GPU host execution, bit-exact"
                } else {
                    ""
                },
                plan.gpus
            ),
        );
    };
    if devs.len() != plan.gpus {
        return Err(GpuError::Invalid(format!(
            "{} GPUs asked for, {} opened",
            plan.gpus,
            devs.len()
        )));
    }
    // the one-GPU GEMM, on the first GPU this process drives
    let g0 = &devs.gpus()[0];
    let one = {
        let da = g0.upload(&a, row_major(m as i64, k as i64)?)?;
        let db = g0.upload(&b, row_major(n as i64, k as i64)?)?;
        let mut dc = g0.filled(row_major(m as i64, n as i64)?, O::poison())?;
        let maps = maps_for(g0, &da, &db, &dc)?;
        gemm_on(g0, maps.as_ref(), &da, &db, &mut dc)?;
        g0.download(&dc)?
    };
    let chk_one = check(&one);
    if !chk_one.ok() {
        return verdict(
            false,
            format!("the one-GPU result vs the f64 reference: {chk_one}"),
        );
    }
    let mut t = match plan.upload::<I, O>(devs, &a, &b) {
        Err(GpuError::NoComm(why)) if plan.windows => return not_run(why),
        t => t?,
    };
    plan.enqueue(devs, &mut t)?;
    devs.sync()?;
    let c = match plan.result(devs.ranks().start, &devs.download_all(&t.out)?) {
        Ok(c) => c,
        Err(why) => return verdict(false, why),
    };
    let chk = check(&c);
    let which = if rows.len() == plan.rows_of(devs.ranks())?.len() {
        "every row".to_string()
    } else {
        format!("{} sampled rows", rows.len())
    };
    if exact {
        if let Some(i) = (0..c.len()).find(|&i| c[i].bits() != one[i].bits()) {
            return verdict(
                false,
                format!(
                    "the rebuilt C differs from the one-GPU result at ({}, {}): {:?} vs {:?}",
                    i / n,
                    i % n,
                    c[i],
                    one[i]
                ),
            );
        }
    }
    let kernel = if t.maps[0][0].is_some() {
        "gemm_sm90"
    } else {
        "gemm_sm80"
    };
    verdict(
        chk.ok(),
        format!(
            "({kernel}) {}; vs the f64 reference ({which}): {chk}",
            if exact {
                "every GPU's rebuilt C = the one-GPU result, bit-exact"
            } else {
                "the reduce-scattered rows of the GPUs this process drives"
            }
        ),
    )
}

/// A weak-scaling measurement: one GPU's GEMM against the same per-GPU work split over the GPUs,
/// collectives included, in several ways ([`WeakScaling::runs`]).
#[derive(Debug, Clone)]
pub struct WeakScaling {
    /// The split GEMM (`gemm_bf16_bf16 16384x8192x8192 split by rows over 2 GPUs`).
    pub what: String,
    /// Median milliseconds of the per-GPU problem on GPU 0 alone (every cluster).
    pub one_ms: f64,
    /// Each way of running the whole problem, and its median milliseconds.
    pub runs: Vec<(Way, f64)>,
    /// `2 m n k` of the per-GPU problem.
    pub flops: f64,
    /// Why the runs in windows are missing, if they are.
    pub no_windows: Option<String>,
}

/// One way of running the split problem.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Way {
    /// Chunks: 1 runs the GEMMs, then the collective; more run each chunk's collective beside
    /// the next chunk's GEMMs.
    pub chunks: usize,
    /// The collectives' tensors in symmetric windows (where NCCL 2.28 makes all-gathers on the
    /// copy engines) or in ordinary memory (NCCL's kernels, on SMs).
    pub windows: bool,
    /// How the GEMMs share the SMs with NCCL's kernels.
    pub sharing: Sharing,
}

impl Way {
    /// For a table: `4 chunks, windows`, `1 chunk, ordinary memory`.
    pub fn name(&self) -> String {
        format!(
            "{} chunk{}, {}",
            self.chunks,
            if self.chunks == 1 { "" } else { "s" },
            if self.windows {
                "windows"
            } else {
                "ordinary memory"
            }
        )
    }
}

impl WeakScaling {
    /// `one / ms`: 1 is perfect scaling.
    pub fn efficiency(&self, ms: f64) -> f64 {
        self.one_ms / ms
    }
}

/// How the chunked GEMMs share the SMs with NCCL's kernels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sharing {
    /// Persistent clusters on every SM (collectives on the copy engines, or not beside a GEMM).
    All,
    /// Persistent clusters leaving this many SMs free.
    Reserve(i64),
    /// One cluster per pair of tiles: the hardware hands SMs out as clusters finish, NCCL's
    /// blocks first (its streams have the highest priority).
    PerTile,
}

/// Times the split GEMM whose per-GPU work is `per_gpu` (`[m, n, k]`; the split mode scaled by
/// the GPUs) against that work on GPU 0 alone, in the same run, interleaved: in one chunk and in
/// `chunks` chunks (NCCL's kernels sharing the SMs as `sharing` says), each with its tensors in
/// ordinary memory and, where NCCL has them, in symmetric windows (the chunks' GEMMs on every
/// SM). Every result is checked bit-equal to the first's on every GPU first (the one-chunk
/// result is `run_gemm_split`'s to check).
pub fn bench_weak_scaling<I: GemmIn, O: GemmOut + CommElem>(
    devs: &Devices,
    split: Split,
    per_gpu: [usize; 3],
    (chunks, sharing): (usize, Sharing),
    reps: usize,
    rng: &mut Rng,
) -> Result<WeakScaling> {
    let g = devs.len();
    let [m, n, k] = per_gpu;
    let mnk = match split {
        Split::Rows => [m * g, n, k],
        Split::Cols => [m, n * g, k],
        Split::K => [m, n, k * g],
    };
    let no_windows = devs.windows().err().map(|e| e.to_string());
    let mut ways = vec![];
    for windows in [false, true] {
        if windows && no_windows.is_some() {
            continue;
        }
        // NCCL's all-gathers between windows take no SM; beside its reduce-scatter between
        // windows (kernels) persistent clusters on every SM measured faster too (docs/perf.md)
        let chunked = if windows { Sharing::All } else { sharing };
        ways.push(Way {
            chunks: 1,
            windows,
            sharing: Sharing::All,
        });
        // one chunk is the way above (its SMs all the GEMM's: nothing runs beside it)
        if chunks > 1 {
            ways.push(Way {
                chunks,
                windows,
                sharing: chunked,
            });
        }
    }
    let a: Vec<I> = rng.fill(mnk[0] * mnk[2]);
    let b: Vec<I> = rng.fill(mnk[1] * mnk[2]);
    let g0 = &devs.gpus()[0];
    let all = g0.sm90_max_clusters();
    let cm = tessel_gpu::gemm_sm90::CLUSTER_M;
    let clusters = |s: Sharing| match s {
        Sharing::All => all,
        Sharing::Reserve(sms) => (all - (sms.max(0) + cm - 1) / cm).max(1),
        Sharing::PerTile => i64::from(i32::MAX) / cm,
    };
    let set = |s: Sharing| {
        devs.gpus().iter().for_each(|g| {
            g.set_sm90_clusters(clusters(s));
        })
    };
    // the per-GPU problem on GPU 0
    let da = g0.upload(&a[..m * k], row_major(m as i64, k as i64)?)?;
    let db = g0.upload(&b[..n * k], row_major(n as i64, k as i64)?)?;
    let mut dc = g0.filled(row_major(m as i64, n as i64)?, O::poison())?;
    let maps = maps_for(g0, &da, &db, &dc)?;
    let mut runs = vec![];
    for w in &ways {
        let plan = Plan::new(split, g, mnk, w.chunks)?.in_windows(w.windows);
        let t = plan.upload::<I, O>(devs, &a, &b)?;
        runs.push((plan, t));
    }
    // checked first: every way gives what the first gives, on every GPU
    let first = devs.ranks().start;
    let mut want = None;
    for (w, (plan, t)) in ways.iter().zip(&mut runs) {
        set(w.sharing);
        plan.enqueue(devs, t)?;
        devs.sync()?;
        let c = plan.result(first, &devs.download_all(&t.out)?);
        let c = c.map_err(GpuError::Invalid)?;
        let want = want.get_or_insert_with(|| c.clone());
        if let Some(i) = (0..c.len()).find(|&i| c[i].bits() != want[i].bits()) {
            return Err(GpuError::Invalid(format!(
                "{}: C differs from the first way's at element {i}",
                plan.what::<I, O>()
            )));
        }
    }
    let mut one = || {
        set(Sharing::All);
        gemm_on(g0, maps.as_ref(), &da, &db, &mut dc)
    };
    let mut fs: Vec<Box<dyn FnMut() -> Result<()> + '_>> = vec![Box::new(&mut one)];
    for (w, (plan, t)) in ways.iter().zip(&mut runs) {
        let set = &set;
        fs.push(Box::new(move || {
            set(w.sharing);
            plan.enqueue(devs, t)
        }));
    }
    let mut refs: Vec<&mut dyn FnMut() -> Result<()>> =
        fs.iter_mut().map(|f| &mut **f as _).collect();
    let ms = g0.time_interleaved(3, reps, &mut refs);
    drop(refs);
    drop(fs);
    let ms = ms?;
    devs.sync()?;
    set(Sharing::All);
    let med = |v: &Vec<f64>| v[v.len() / 2];
    Ok(WeakScaling {
        what: Plan::new(split, g, mnk, 1)?.problem::<I, O>(),
        one_ms: med(&ms[0]),
        runs: ways
            .iter()
            .zip(&ms[1..])
            .map(|(w, v)| (*w, med(v)))
            .collect(),
        flops: 2.0 * (m * n * k) as f64,
        no_windows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use half::bf16;

    #[test]
    fn every_split_host_execution_is_the_one_gpu_result() {
        let mut rng = Rng::new(11);
        for split in [Split::Rows, Split::Cols, Split::K] {
            for (gpus, chunks, mnk) in [
                (2, 1, [64, 96, 40]),
                (2, 4, [128, 64, 48]),
                (4, 2, [64, 128, 64]),
            ] {
                let p = Plan::new(split, gpus, mnk, chunks).unwrap();
                let v = if split == Split::K {
                    run_gemm_split::<bf16, f32>(None, &p, &mut rng).unwrap()
                } else {
                    run_gemm_split::<bf16, bf16>(None, &p, &mut rng).unwrap()
                };
                assert!(v.ok && !v.skipped, "{}", v.line);
            }
        }
    }

    #[test]
    fn unequal_shards_are_refused_naming_the_size() {
        let e = Plan::new(Split::Rows, 2, [100, 64, 64], 4).unwrap_err();
        assert!(
            e.to_string().contains("M = 100 is not a multiple of 8"),
            "{e}"
        );
        let e = Plan::new(Split::Cols, 2, [64, 63, 64], 1).unwrap_err();
        assert!(
            e.to_string().contains("N = 63 is not a multiple of 2"),
            "{e}"
        );
        let e = Plan::new(Split::K, 4, [64, 64, 66], 1).unwrap_err();
        assert!(
            e.to_string().contains("K = 66 is not a multiple of 4"),
            "{e}"
        );
    }

    #[test]
    fn rows_chunks_take_every_gpus_block_of_rows_in_turn() {
        // 8 rows, 2 GPUs, 2 chunks: GPU 1 holds rows 2-3 and 6-7
        let p = Plan::new(Split::Rows, 2, [8, 4, 4], 2).unwrap();
        let a: Vec<u32> = (0..32).collect();
        let rows: Vec<u32> = (0..2)
            .flat_map(|j| take(&a, &p.part(j, 1).unwrap()[0]))
            .collect();
        assert_eq!(
            rows,
            [8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31]
        );
    }
}
