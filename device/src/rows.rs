//! The cut of a row-wise kernel (RMSNorm, LayerNorm, softmax): each row of an `M x N` matrix gets
//! `warps` warps, a block `32 max(4, warps)` threads (so `rows = 4 / warps` rows when `warps < 4`,
//! else one), and the tiled copy of `(rows, 32 warps)` row-major threads of `(1, v)` values gives
//! each thread one 128-bit atom (`v` elements) of its row per tile: tiles of
//! `(rows, 32 warps v)`, block `b` walking the tiles `(b, k)` along its rows.

use layout_core::{const_ok, make_tiled_copy_row_major, TvCoords};

/// A row-wise kernel's cut of its tiles, for `warps` warps per row and elements of `bits` bits.
#[derive(Clone, Copy, Debug)]
pub struct Rows {
    /// Warps per row: 1, 2, 4, 8 or 16.
    pub warps: i64,
    /// Elements per 128-bit atom.
    pub v: i64,
    /// Threads per block: `32 max(4, warps)`.
    pub threads: i64,
    /// Rows per block: `threads / (32 warps)`.
    pub rows: i64,
    /// The tile: `rows` rows of `32 warps v` columns.
    pub tiler: [i64; 2],
    /// A thread's values of a tile, as coordinates: one atom, `v` consecutive columns of a row.
    pub plan: TvCoords<2>,
}

impl Rows {
    /// The cut for `warps` warps per row (a divisor of 16) and elements of `bits` bits (a divisor
    /// of 128); a constant (it panics at compile time otherwise).
    pub const fn new(warps: i64, bits: i64) -> Self {
        assert!(warps >= 1 && 16 % warps == 0, "warps per row divide 16");
        let v = 128 / bits;
        let threads = 32 * if warps < 4 { 4 } else { warps };
        let rows = threads / (32 * warps);
        let tiler = [rows, 32 * warps * v];
        let copy = const_ok!(make_tiled_copy_row_major(
            [rows, 32 * warps],
            [1, v],
            128,
            bits
        ));
        let plan = const_ok!(TvCoords::new(&copy, tiler));
        assert!(
            plan.values() == v && plan.threads() == threads,
            "one atom per thread"
        );
        Self {
            warps,
            v,
            threads,
            rows,
            tiler,
            plan,
        }
    }

    /// Tiles along a row of `n` elements.
    pub const fn tiles(&self, n: i64) -> i64 {
        (n + self.tiler[1] - 1) / self.tiler[1]
    }
}

#[cfg(test)]
mod tests {
    use super::Rows;

    #[test]
    fn blocks_of_four_rows_or_one() {
        let one = Rows::new(1, 16);
        assert_eq!((one.threads, one.rows, one.tiler), (128, 4, [4, 256]));
        let two = Rows::new(2, 32);
        assert_eq!((two.threads, two.rows, two.tiler), (128, 2, [2, 256]));
        let many = Rows::new(16, 32);
        assert_eq!((many.threads, many.rows, many.tiler), (512, 1, [1, 2048]));
        assert_eq!(many.tiles(2048), 1);
        assert_eq!(many.tiles(2049), 2);
        // thread 33 of two warps per row: row 0, columns 4 * 33 ..
        assert_eq!(two.plan.get_slice(33).coord(0), [0, 132]);
        assert_eq!(two.plan.get_slice(64).coord(3), [1, 3]);
    }
}
