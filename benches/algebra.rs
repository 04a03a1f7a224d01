//! Host cost of the algebra: ns per operation on layouts read at run time (a `const` layout costs
//! nothing: the compiler computes it). The same expressions as `benches/cute/algebra.cpp`, CuTe
//! C++ with run-time integers; `scripts/algebra-vs-cute.sh` runs both and prints the ratios.

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use layout_core::*;

/// Keeps a result alive in memory without copying it (as the C++ side's `keep`).
#[inline(always)]
fn keep<T>(r: T) {
    black_box(&r);
}

fn l(s: &str) -> Layout {
    Layout::parse(s).unwrap()
}

fn t(s: &str) -> Tiler {
    Tiler::parse(s).unwrap()
}

fn algebra(c: &mut Criterion) {
    c.bench_function("make_layout 4:2 (the smallest result)", |x| {
        x.iter(|| keep(Layout::int(black_box(4), black_box(2))))
    });
    let (a, b) = (l("(6,2):(8,2)"), l("(4,3):(3,1)"));
    c.bench_function("composition (6,2):(8,2) o (4,3):(3,1)", |x| {
        x.iter(|| keep(composition(black_box(&a), black_box(&b))))
    });
    let big = l("((8,16),(32,4)):((1,8),(128,4096))");
    let tile = t("<(4,8):(1,4),(8,4):(4,1)>");
    c.bench_function("composition by mode, rank-2 depth-2", |x| {
        x.iter(|| keep(composition_tiler(black_box(&big), black_box(&tile))))
    });
    let c1 = l("4:2");
    c.bench_function("complement 4:2 24", |x| {
        x.iter(|| keep(complement(black_box(&c1), black_box(24))))
    });
    let c2 = l("(2,2):(1,6)");
    c.bench_function("complement (2,2):(1,6) 24", |x| {
        x.iter(|| keep(complement(black_box(&c2), black_box(24))))
    });
    let co = l("((2,4),(3,5)):((1,2),(8,24))");
    c.bench_function("coalesce ((2,4),(3,5)):((1,2),(8,24))", |x| {
        x.iter(|| keep(coalesce(black_box(&co))))
    });
    let (d, db) = (l("(4,2,3):(2,1,8)"), l("4:2"));
    c.bench_function("logical_divide (4,2,3):(2,1,8) / 4:2", |x| {
        x.iter(|| keep(logical_divide(black_box(&d), black_box(&db))))
    });
    let (a2, t2) = (l("(9,(4,8)):(59,(13,1))"), t("<3:3,(2,4):(1,8)>"));
    c.bench_function(
        "zipped_divide (9,(4,8)):(59,(13,1)) / <3:3,(2,4):(1,8)>",
        |x| x.iter(|| keep(zipped_divide(black_box(&a2), black_box(&t2)))),
    );
    let (m, t3) = (l("(8192,8192):(8192,1)"), t("<32,32>"));
    c.bench_function("zipped_divide 8192x8192 by <32,32>", |x| {
        x.iter(|| keep(zipped_divide(black_box(&m), black_box(&t3))))
    });
    let (blk, grid) = (l("(2,5):(5,1)"), l("(3,4):(1,3)"));
    c.bench_function("logical_product (2,5):(5,1) x (3,4):(1,3)", |x| {
        x.iter(|| keep(logical_product(black_box(&blk), black_box(&grid))))
    });
    c.bench_function("blocked_product (2,5):(5,1) x (3,4):(1,3)", |x| {
        x.iter(|| keep(blocked_product(black_box(&blk), black_box(&grid))))
    });
    c.bench_function("raked_product (2,5):(5,1) x (3,4):(1,3)", |x| {
        x.iter(|| keep(raked_product(black_box(&blk), black_box(&grid))))
    });
    let zd = zipped_divide(&m, &t3).unwrap();
    c.bench_function("evaluate a 1-D coordinate of a zipped 8192x8192", |x| {
        x.iter(|| keep(black_box(&zd).call(black_box(123_457))))
    });
}

criterion_group!(benches, algebra);
criterion_main!(benches);
