// SPDX-License-Identifier: GPL-2.0

//! Kernel-independent core of rust/mm, built on the host for tests.
//!
//! The kernel compiles these same modules into vmlinux (see
//! `rust/mm/rust_mm.rs`); this file only exists so `cargo test` can build
//! them as a `no_std` library.

#![no_std]

pub mod contpte;
pub mod contpte_vectors;
pub mod folio;
pub mod hotplug_vmemmap;
pub mod idspace;
pub mod pagemap_swap;
pub mod seqcount;
pub mod subid;
pub mod vma_lock;
