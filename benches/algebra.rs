//! Host cost of the algebra: ns per composition, divide and product on layouts read at run time
//! (a `const` layout costs nothing: the compiler computes it).

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use layout_core::*;

fn l(s: &str) -> Layout {
    Layout::parse(s).unwrap()
}

fn algebra(c: &mut Criterion) {
    let a = l("(6,2):(8,2)");
    let b = l("(4,3):(3,1)");
    c.bench_function("composition (6,2):(8,2) o (4,3):(3,1)", |x| {
        x.iter(|| composition(black_box(&a), black_box(&b)))
    });
    let big = l("((8,16),(32,4)):((1,8),(128,4096))");
    let tile = Tiler::parse("<(4,8):(1,4),(8,4):(4,1)>").unwrap();
    c.bench_function("composition by mode, rank-2 depth-2", |x| {
        x.iter(|| composition_tiler(black_box(&big), black_box(&tile)))
    });
    c.bench_function("complement (2,2):(1,6) 24", |x| {
        x.iter(|| complement(black_box(&l("(2,2):(1,6)")), 24))
    });
    let a2 = l("(9,(4,8)):(59,(13,1))");
    let t2 = Tiler::parse("<3:3,(2,4):(1,8)>").unwrap();
    c.bench_function("logical_divide (4,2,3):(2,1,8) / 4:2", |x| {
        x.iter(|| logical_divide(black_box(&l("(4,2,3):(2,1,8)")), black_box(&l("4:2"))))
    });
    c.bench_function(
        "zipped_divide (9,(4,8)):(59,(13,1)) / <3:3,(2,4):(1,8)>",
        |x| x.iter(|| zipped_divide(black_box(&a2), black_box(&t2))),
    );
    let m = l("(8192,8192):(8192,1)");
    let t3 = Tiler::parse("<32,32>").unwrap();
    c.bench_function("zipped_divide 8192x8192 by <32,32>", |x| {
        x.iter(|| zipped_divide(black_box(&m), black_box(&t3)))
    });
    let blk = l("(2,5):(5,1)");
    let grid = l("(3,4):(1,3)");
    c.bench_function("logical_product (2,5):(5,1) x (3,4):(1,3)", |x| {
        x.iter(|| logical_product(black_box(&blk), black_box(&grid)))
    });
    c.bench_function("blocked_product (2,5):(5,1) x (3,4):(1,3)", |x| {
        x.iter(|| blocked_product(black_box(&blk), black_box(&grid)))
    });
    c.bench_function("raked_product (2,5):(5,1) x (3,4):(1,3)", |x| {
        x.iter(|| raked_product(black_box(&blk), black_box(&grid)))
    });
    let zd = zipped_divide(&m, &t3).unwrap();
    c.bench_function("evaluate a 1-D coordinate of a zipped 8192x8192", |x| {
        x.iter(|| black_box(&zd).call(black_box(123_457)))
    });
}

criterion_group!(benches, algebra);
criterion_main!(benches);
