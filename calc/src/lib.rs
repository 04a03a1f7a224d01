//! The layout calculator behind `tessel eval`, `tessel show`, `tessel svg` and `tessel analyze`: CuTe's notation in, CuTe's
//! notation out, every operation computed by `layout-core`.
//!
//! Grammar (whitespace is free):
//! ```text
//! expr   := call | atom | tiler | swz | tuple [':' tuple]
//! atom   := NAME ['<' TYPE '>']  (an MMA or copy atom by CuTe's name, e.g. SM80_16x8x16_F32F16F16F32_TN,
//!                                 SM75_U32x4_LDSM_N, SM80_CP_ASYNC_CACHEGLOBAL<uint128_t>)
//! call   := NAME ['<' INT '>'] '(' [expr {',' expr}] ')'
//! tiler  := '<' (expr | '_') {',' (expr | '_')} '>'
//! swz    := 'Sw<' INT ',' INT ',' INT '>' 'o' [INT 'o'] expr
//! tuple  := INT | '_' | '_'INT | '(' tuple {',' tuple} ')'
//! ```
//! A bare shape is its column-major layout where a layout is wanted, a by-mode tiler where a tiler
//! is wanted, and its size where an integer cotarget is wanted.
//!
//! MMAs: `mma_atom(ATOM)` is the atom; `make_tiled_mma(ATOM, atom_layout)` repeats it over a
//! layout of warps `(AM, AN[, AK])` (identity permutation); `make_tiled_mma(ATOM, atom_layout,
//! <PM,PN,PK>)` with CuTe's `PermutationMNK`, a tiler whose modes are layouts, integers (`64`
//! is `64:1`) or `_` (none), missing trailing modes `_`, e.g.
//! `make_tiled_mma(SM80_16x8x16_F32BF16BF16F32_TN, (2,4), <_,(8,4,2):(1,16,8),_>)`; a shape
//! `(32,64,16)` is `<32:1,64:1,16:1>`. `layout_a_tv(X)`, `layout_b_tv(X)`,
//! `layout_c_tv(X)` of an atom or a tiled MMA are its TV layouts `(thread, value) -> index` in
//! the column-major operand tile; `partition_A/B/C(tiled_mma, thread, tensor)` is one thread's
//! part of a tensor; `partition_fragment_A/B/C(tiled_mma, tensor)` the layout of a thread's
//! register fragment for it.
//!
//! Copy atoms: a copy atom's name alone is its `Copy_Atom` for 16-bit elements;
//! `copy_atom(NAME[, BITS])` for elements of `BITS` bits. `make_tiled_copy_A/B/C(ATOM,
//! tiled_mma)` is the tiled copy over the MMA's operand tile with the MMA's TV layout;
//! `get_layoutS_TV(X)` / `get_layoutD_TV(X)` its source / destination TV layouts
//! `(thread, value) -> m + M n`; `partition_S/D(X, thread, tensor)` a thread's part of a tensor;
//! `retile(X, fragment)` a register fragment (e.g. `partition_fragment_A(...)`) in the copy's
//! value order.

#![warn(missing_docs)]
pub mod analyze;
mod ops;
mod parse;
mod show;
pub mod svg;
mod value;

pub use ops::{apply, op, Call, Op, OPS};
pub use parse::{eval, eval_line};
pub use show::{show, show_value};
pub use svg::svg;
pub use value::{to_layout, Value, MAX_NESTING, R};
