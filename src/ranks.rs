//! `--process-per-gpu`: one process per GPU of a `--gpus N` run or bench, as a launcher would
//! start them. The first process makes the NCCL id, starts `N` copies of itself (the same
//! arguments, `TESSEL_RANK`, `TESSEL_WORLD`, `TESSEL_NCCL_ID` and `TESSEL_SEED` in their
//! environment), prints each one's output under its rank once all have ended, and exits with the
//! worst status. Each copy opens its GPU with `Devices::open_rank` and runs the same checks on
//! the same inputs, its own rank's part of each.

use std::io::Read;
use std::process::{Command, ExitCode, Stdio};

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

/// Starts `world` copies of this process as ranks `0..world` sharing a new NCCL id and `seed`,
/// waits for all, prints their outputs rank by rank and returns the worst exit status (1 over 3
/// over 0). `Err` when no NCCL id could be made (no NCCL): the caller runs as one process then.
pub fn spawn(world: usize, seed: u64) -> Result<ExitCode, String> {
    let id = host::comm::new_comm_id().map_err(|e| e.to_string())?;
    let exe = std::env::current_exe().map_err(|e| format!("this program's path: {e}"))?;
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut children = vec![];
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
            .spawn()
            .map_err(|e| format!("starting rank {rank}: {e}"))?;
        children.push(child);
    }
    // each child's pipes read on a thread of its own: a child blocked on a full pipe would hold
    // the others up in NCCL
    let readers: Vec<_> = children
        .iter_mut()
        .map(|c| {
            let (mut out, mut err) = (c.stdout.take(), c.stderr.take());
            std::thread::spawn(move || {
                let mut text = String::new();
                if let Some(o) = out.as_mut() {
                    let _ = o.read_to_string(&mut text);
                }
                if let Some(e) = err.as_mut() {
                    let _ = e.read_to_string(&mut text);
                }
                text
            })
        })
        .collect();
    let mut worst = 0;
    for (rank, (mut child, reader)) in children.into_iter().zip(readers).enumerate() {
        let code = child.wait().ok().and_then(|s| s.code()).unwrap_or(1);
        let text = reader.join().unwrap_or_default();
        println!(
            "rank {rank} of {world} (process {}, exit {code}):",
            child.id()
        );
        for line in text.lines() {
            println!("  {line}");
        }
        worst = match (worst, code) {
            (1, _) | (_, 1) => 1,
            (w, c) => w.max(c),
        };
    }
    Ok(ExitCode::from(worst.clamp(0, 255) as u8))
}
