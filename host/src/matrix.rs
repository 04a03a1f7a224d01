//! A matrix of rows on the host, as the row-wise examples (softmax, layernorm) and their tests
//! lay their inputs and outputs out: `rows x cols`, rows `ld` elements apart, the padding between
//! rows part of the buffer.

use layout_core::{FlatLayout, IntTuple, Layout};

/// `rows x cols`, rows `ld` elements apart (`ld >= cols`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    /// `M`.
    pub rows: usize,
    /// `N`.
    pub cols: usize,
    /// The row stride of `x` and `y`.
    pub ld: usize,
}

impl Shape {
    /// Contiguous rows.
    pub fn new(rows: usize, cols: usize) -> Self {
        Self {
            rows,
            cols,
            ld: cols,
        }
    }
    /// Elements of a buffer holding the matrix.
    pub fn len(&self) -> usize {
        if self.rows == 0 {
            0
        } else {
            (self.rows - 1) * self.ld + self.cols
        }
    }
    /// Is the matrix empty?
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// `(rows,cols):(ld,1)`.
    pub fn flat(&self) -> Result<FlatLayout<2>, String> {
        FlatLayout::new([self.rows as i64, self.cols as i64], [self.ld as i64, 1])
            .map_err(|e| format!("{self:?}: {e}"))
    }
    /// The same as a [`Layout`].
    pub fn layout(&self) -> Result<Layout, String> {
        IntTuple::from_ints(&[self.rows as i64, self.cols as i64])
            .and_then(|s| Layout::from_parts(s, &[self.ld as i64, 1]))
            .map_err(|e| format!("{self:?}: {e}"))
    }
    /// Is buffer element `i` inside the matrix (not in the padding between rows)?
    pub fn inside(&self, i: usize) -> bool {
        i % self.ld < self.cols
    }
}
