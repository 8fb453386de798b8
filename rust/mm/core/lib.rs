// SPDX-License-Identifier: GPL-2.0

//! Kernel-independent core of rust/mm, built on the host for tests.
//!
//! The kernel compiles these same modules into vmlinux, as the module
//! `logic` of `rust/mm/rust_mm.rs`; this file only exists so `cargo test`
//! can build them as a `no_std` library. Both places forbid `unsafe`: the
//! core is safe Rust, and everything `unsafe` is in the edges.

#![no_std]
#![forbid(unsafe_code)]

pub mod atomic_seqcount;
pub mod compound_pagemaps;
pub mod contpte;
pub mod contpte_vectors;
pub mod folio_rmap;
pub mod pagemap_swap;
pub mod rmap_id;
pub mod sync;
pub mod vma_lock;
