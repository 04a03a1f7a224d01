#!/usr/bin/env python3
"""torch.distributed's NCCL all-reduce beside `tessel bench --gpus N`, on the same GPUs and sizes.

torch runs one process per GPU (its NCCL backend's model; tessel drives every GPU from one
process, `ncclCommInitAll`): rank 0 times each all-reduce (sum, in place) with CUDA events,
--reps runs after 5 warm-ups, the median; algbw = bytes / time, busbw = algbw * 2 (n-1) / n, as
`tessel bench --gpus N` prints them. The inputs are random, never zeros. Then, with --tessel, the
tessel binary's own rows in the same run, and the ratio of the busbw figures.

usage: NCCL_NVLS_ENABLE=0 python3 scripts/allreduce-peer.py --gpus 2 [--reps 50] [--tessel PATH]

Without torch or fewer GPUs it says so and exits 3.
"""
import argparse
import os
import re
import subprocess
import sys

SIZES = [1 << 20, 1 << 26]  # elements per rank, as tessel's ALL_REDUCE_ELEMS


def worker(rank, n, reps, port, queue):
    import torch
    import torch.distributed as dist

    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=n)
    gen = torch.Generator(device="cuda")
    gen.manual_seed(int.from_bytes(os.urandom(4), "little") + rank)
    rows = []
    for elems in SIZES:
        for name, dtype in [("f32", torch.float32), ("bf16", torch.bfloat16)]:
            x = (torch.rand(elems, generator=gen, device="cuda") * 2 - 1).to(dtype)
            for _ in range(5):
                dist.all_reduce(x)
            torch.cuda.synchronize()
            ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(reps)]
            for a, b in ev:
                a.record()
                dist.all_reduce(x)
                b.record()
            torch.cuda.synchronize()
            ms = sorted(a.elapsed_time(b) for a, b in ev)
            rows.append((f"all_reduce {name} n={elems}", elems * x.element_size(), ms[len(ms) // 2]))
    if rank == 0:
        queue.put(rows)
    dist.barrier()
    dist.destroy_process_group()


def busbw(nbytes, ms, n):
    return nbytes / ms / 1e6 * 2 * (n - 1) / n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpus", type=int, default=2)
    ap.add_argument("--reps", type=int, default=50)
    ap.add_argument("--tessel", default=None)
    a = ap.parse_args()
    try:
        import torch
        import torch.multiprocessing as mp
    except ImportError:
        print("allreduce-peer: no torch here: nothing compared")
        return 3
    if torch.cuda.device_count() < a.gpus:
        print(f"allreduce-peer: {torch.cuda.device_count()} GPUs here, {a.gpus} asked for")
        return 3
    print(f"NCCL_NVLS_ENABLE={os.environ.get('NCCL_NVLS_ENABLE', '(unset)')}; torch {torch.__version__}, "
          f"NCCL {'.'.join(map(str, torch.cuda.nccl.version()))}; {a.gpus} x {torch.cuda.get_device_name(0)}")
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    port = 29500 + int.from_bytes(os.urandom(2), "little") % 1000
    procs = [ctx.Process(target=worker, args=(r, a.gpus, a.reps, port, queue)) for r in range(a.gpus)]
    for p in procs:
        p.start()
    rows = queue.get()
    for p in procs:
        p.join()
    torch_busbw = {}
    print(f"{'torch.distributed':<28} {'bytes':>12} {'ms':>9} {'busbw GB/s':>11}")
    for what, nbytes, ms in rows:
        torch_busbw[what] = busbw(nbytes, ms, a.gpus)
        print(f"{what:<28} {nbytes:>12} {ms:>9.4f} {torch_busbw[what]:>11.1f}")
    if a.tessel:
        out = subprocess.run([a.tessel, "bench", "--gpus", str(a.gpus), "--reps", str(a.reps)],
                             capture_output=True, text=True)
        print(out.stdout, end="")
        if out.returncode != 0:
            print(out.stderr, end="")
            return out.returncode
        print(f"{'tessel / torch busbw':<28}")
        for line in out.stdout.splitlines():
            m = re.match(r"(all_reduce \S+ n=\d+)\s+\S+\s+\S+\s+\S+\s+(\S+)", line)
            if m and m.group(1) in torch_busbw:
                print(f"{m.group(1):<28} {100 * float(m.group(2)) / torch_busbw[m.group(1)]:>10.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
