// SPDX-License-Identifier: GPL-2.0

//! Rust parts of the mm subsystem.
//!
//! Precise "mapped shared" tracking of large folios with rmap IDs: the
//! rmap-ID allocator, the sub-ID tables, the atomic seqcount and the rmap
//! state of large folios. C reaches this crate only through
//! `include/linux/rmap_id.h` (see [`rmap_id`] and [`folio_rmap`]) and
//! `include/linux/atomic_seqcount.h` (see [`atomic_seqcount`]).
//!
//! [`subid`], [`idspace`], [`seqcount`] and [`folio`] are kernel-independent:
//! the same files are built and tested on the host with cargo
//! (`rust/mm/Cargo.toml`).

pub mod atomic_seqcount;
#[path = "core/folio.rs"]
pub mod folio;
pub mod folio_rmap;
#[path = "core/idspace.rs"]
pub mod idspace;
pub mod rmap_id;
#[path = "core/seqcount.rs"]
pub mod seqcount;
#[path = "core/subid.rs"]
pub mod subid;

/// Prefix of this crate's kernel log messages (used by `pr_*!`).
const __LOG_PREFIX: &[u8] = b"rmap_id\0";
