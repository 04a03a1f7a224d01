//! Clusters on the simulated GPU (tessel_gpu::cluster_check): two blocks that exchange values
//! through distributed shared memory after `cluster_sync`, receive one box multicast by the copy
//! engine into both, and signal each other's mbarriers; written correctly and broken one way at a
//! time (no cluster barrier before reading the partner's memory, a multicast that leaves a block
//! out, a wait on the partner's mbarrier), each fault reported with the kernel's sites.

use host::sim::{self, HostMem, Options, Sim, SimError, SimTensorMap};
use layout_core::{FlatLayout, FlatTensor, SwizzleMode};
use tessel_gpu::cluster_check::{ClusterCheck, ClusterParams, BOX, COLS, ROWS, THREADS};
use tessel_gpu::ctx::Kernel;

/// Clusters in the grid.
const CLUSTERS: i64 = 2;

const FINE: u8 = 0;
const NO_CLUSTER_SYNC: u8 = 1;
const ONE_BLOCK: u8 = 2;
const REMOTE_WAIT: u8 = 3;

/// The kernel on `x` (`10 x 40`, the box its top-left `ROWS x COLS`) under schedule `seed`: `y`
/// and `z`.
fn exchange<const FAULT: u8>(seed: u64) -> Result<(Vec<f32>, Vec<f32>), SimError> {
    let blocks = 2 * CLUSTERS;
    let mut x: Vec<f32> = (0..400).map(|i| i as f32 * 0.5).collect();
    let mut y = vec![f32::NAN; (blocks * THREADS) as usize];
    let mut z = vec![f32::NAN; (blocks * BOX) as usize];
    let mut rx = vec![0u32; x.len()];
    let (mut wy, mut wz) = (vec![0u32; y.len()], vec![0u32; z.len()]);
    // SAFETY: the buffers outlive the launch
    let (ex, ey, ez) = unsafe {
        (
            HostMem::new(&mut x, &mut rx),
            HostMem::new(&mut y, &mut wy).once(),
            HostMem::new(&mut z, &mut wz).once(),
        )
    };
    let p = ClusterParams {
        x: SimTensorMap::new(ex, [10, 40], 40, [ROWS, COLS], SwizzleMode::None).unwrap(),
        y: FlatTensor::new(
            ey,
            FlatLayout::new([blocks, THREADS], [THREADS, 1]).unwrap(),
        ),
        z: FlatTensor::new(ez, FlatLayout::new([blocks, BOX], [BOX, 1]).unwrap()),
    };
    let p = ClusterCheck::<FAULT>::prepare::<Sim>(p).expect("the outputs' shapes");
    let g = ClusterCheck::<FAULT>::geometry::<Sim>(&p, 1, 0);
    sim::launch::<ClusterCheck<FAULT>>(&p, g, Options { seed })?;
    assert!(rx.iter().all(|&r| r == 0), "x written");
    Ok((y, z))
}

#[test]
fn a_cluster_exchanges_through_distributed_shared_memory_and_multicast() {
    for seed in [0, 1, 9] {
        let (y, z) = exchange::<FINE>(seed).unwrap_or_else(|e| panic!("{e}"));
        for b in 0..2 * CLUSTERS {
            let partner = b ^ 1;
            for t in 0..THREADS {
                assert_eq!(y[(b * THREADS + t) as usize], (100 * partner + t) as f32);
            }
            for i in 0..BOX {
                let (r, c) = (i / COLS, i % COLS);
                assert_eq!(z[(b * BOX + i) as usize], (r * 40 + c) as f32 * 0.5);
            }
        }
    }
}

/// The line in the kernel's source of the comment `// site: NAME`.
fn at(name: &str) -> String {
    let src = include_str!("../../gpu/src/cluster_check.rs");
    let line = src
        .lines()
        .position(|l| l.ends_with(&format!("// site: {name}")))
        .expect("the site");
    format!("gpu/src/cluster_check.rs:{}", line + 1)
}

#[test]
fn each_broken_cluster_is_reported_with_its_sites() {
    let e = exchange::<NO_CLUSTER_SYNC>(3).unwrap_err();
    println!("{e}");
    assert!(
        e.message.contains(&at("DSM_READ")) && e.message.contains(&at("WRITE"))
            || e.message.contains("before any thread wrote it"),
        "{e}"
    );
    let e = exchange::<ONE_BLOCK>(3).unwrap_err();
    println!("{e}");
    assert!(
        e.message.contains("deadlock") && e.message.contains(&at("FULL_WAIT")),
        "{e}"
    );
    let e = exchange::<REMOTE_WAIT>(3).unwrap_err();
    assert!(
        e.message.contains("not its own") && e.message.contains(&at("REMOTE_WAIT")),
        "{e}"
    );
    println!("{e}");
}
