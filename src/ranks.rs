//! `--process-per-gpu`: one process per GPU of a `--gpus N` run or bench, as a launcher would
//! start them. The first process makes the NCCL id, starts `N` copies of itself (the same
//! arguments, `TESSEL_RANK`, `TESSEL_WORLD`, `TESSEL_NCCL_ID` and `TESSEL_SEED` in their
//! environment), prints each one's output under its rank once all have ended, and exits with the
//! worst status. Each copy opens its GPU with `Devices::open_rank` and runs the same checks on
//! the same inputs, its own rank's part of each.

use std::io::Read;
use std::process::{Child, Command, ExitCode, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// This process's rank, the ranks in all, and the NCCL id, when it is one of the copies.
pub struct Rank {
    pub rank: usize,
    pub world: usize,
    pub id: String,
    pub seed: u64,
}

/// The rank this process was started as (by [`spawn`]), if any; `Err` names a malformed variable.
pub fn this_rank() -> Result<Option<Rank>, String> {
    let Ok(rank) = std::env::var("TESSEL_RANK") else {
        return Ok(None);
    };
    let var = |k: &str| std::env::var(k).map_err(|_| format!("TESSEL_RANK is set, {k} is not"));
    let num = |k: &str, v: &str| {
        v.parse::<u64>()
            .map_err(|_| format!("{k}={v:?} is not a number"))
    };
    let world = var("TESSEL_WORLD")?;
    let seed = var("TESSEL_SEED")?;
    Ok(Some(Rank {
        rank: num("TESSEL_RANK", &rank)? as usize,
        world: num("TESSEL_WORLD", &world)? as usize,
        id: var("TESSEL_NCCL_ID")?,
        seed: num("TESSEL_SEED", &seed)?,
    }))
}

/// How long the other ranks may run on once one has failed before they are stopped (they would
/// wait in NCCL for it forever).
const GRACE: Duration = Duration::from_secs(10);

/// A pipe of a child read to its end on a thread of its own (a child blocked on a full pipe
/// would hold the other ranks up in NCCL).
fn drain(pipe: Option<impl Read + Send + 'static>) -> JoinHandle<String> {
    std::thread::spawn(move || {
        let mut text = String::new();
        if let Some(mut p) = pipe {
            let _ = p.read_to_string(&mut text);
        }
        text
    })
}

/// Starts `world` copies of this process as ranks `0..world` sharing a new NCCL id and `seed`,
/// waits for all, prints their outputs rank by rank and returns the worst exit status (1 over 3
/// over 0; any other status, or a copy stopped by a signal, counts as 1). Once one copy has
/// failed, the others are stopped after [`GRACE`]. `Err` when no NCCL id could be made (no
/// NCCL) or this host has fewer than `world` GPUs: the caller runs as one process then.
pub fn spawn(world: usize, seed: u64) -> Result<ExitCode, String> {
    let present = host::runtime::gpu::Gpu::count().map_err(|e| e.to_string())?;
    if present < world {
        return Err(format!("{world} GPUs asked for, {present} present"));
    }
    let id = host::collectives::comm::new_comm_id().map_err(|e| e.to_string())?;
    let exe = std::env::current_exe().map_err(|e| format!("this program's path: {e}"))?;
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut children: Vec<Child> = vec![];
    for rank in 0..world {
        let child = Command::new(&exe)
            .args(&args)
            .env("TESSEL_RANK", rank.to_string())
            .env("TESSEL_WORLD", world.to_string())
            .env("TESSEL_NCCL_ID", &id)
            .env("TESSEL_SEED", seed.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn();
        match child {
            Ok(c) => children.push(c),
            Err(e) => {
                for c in &mut children {
                    let _ = c.kill();
                    let _ = c.wait();
                }
                return Err(format!("starting rank {rank}: {e}"));
            }
        }
    }
    let pipes: Vec<_> = children
        .iter_mut()
        .map(|c| (drain(c.stdout.take()), drain(c.stderr.take())))
        .collect();
    // wait for all; once one fails, stop the rest after the grace period
    let mut codes: Vec<Option<i32>> = vec![None; world];
    let mut failed_at: Option<Instant> = None;
    while codes.iter().any(Option::is_none) {
        for (c, code) in children.iter_mut().zip(codes.iter_mut()) {
            if code.is_none() {
                if let Ok(Some(s)) = c.try_wait() {
                    let v = s.code().unwrap_or(1);
                    if v != 0 && failed_at.is_none() {
                        failed_at = Some(Instant::now());
                    }
                    *code = Some(v);
                }
            }
        }
        if failed_at.is_some_and(|t| t.elapsed() > GRACE) {
            for (c, code) in children.iter_mut().zip(codes.iter_mut()) {
                if code.is_none() {
                    let _ = c.kill();
                    let _ = c.wait();
                    *code = Some(1);
                }
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut worst = 0;
    for (rank, ((child, (out, err)), code)) in children.iter().zip(pipes).zip(codes).enumerate() {
        let code = code.unwrap_or(1);
        println!(
            "rank {rank} of {world} (process {}, exit {code}):",
            child.id()
        );
        let text = out.join().unwrap_or_default() + &err.join().unwrap_or_default();
        for line in text.lines() {
            println!("  {line}");
        }
        let code = if matches!(code, 0 | 2 | 3) { code } else { 1 };
        worst = match (worst, code) {
            (1, _) | (_, 1) => 1,
            (w, c) => w.max(c),
        };
    }
    Ok(ExitCode::from(worst as u8))
}
