//! The calculator's mesh operations (in process): a global tensor's shards over a mesh of GPUs
//! and the layout the all-gathered shards leave it in.

use tessel_calc::eval_line;

#[test]
fn shards_and_the_gathered_layout() {
    for (expr, want) in [
        // an (8,6) row-major matrix over two GPUs along its rows: GPU 1 holds rows 4..8
        ("shard_shape((8,6),(2,1):(1,0))", "(4,6)"),
        ("shard((8,6):(6,1),(2,1):(1,0),1)", "24 o (4,6):(6,1)"),
        // over a 2x2 mesh numbered row-major: GPU 1 is at mesh coordinate (0,1)
        ("mesh_coord((2,2):(2,1),1)", "(0,1)"),
        ("shard((8,6):(6,1),(2,2):(2,1),1)", "3 o (4,3):(6,1)"),
        // three GPUs along the columns, each shard a compact (8,2) row-major buffer: gathered, the
        // shards' rows are 2 apart and the GPUs 16 apart
        (
            "gathered((1,3):(0,1),(8,2):(2,1))",
            "((8,1),(2,3)):((2,0),(1,16))",
        ),
    ] {
        assert_eq!(eval_line(expr), want, "{expr}");
    }
}

#[test]
fn a_mesh_that_does_not_divide_is_an_error_naming_it() {
    let e = eval_line("shard((8,6):(6,1),(1,4):(0,1),0)");
    assert!(e.contains('6') && e.contains('4'), "{e}");
    let e = eval_line("mesh_coord((2,2):(1,1),0)");
    assert!(e.to_lowercase().contains("injective"), "{e}");
}
