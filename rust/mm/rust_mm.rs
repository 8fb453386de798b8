// SPDX-License-Identifier: GPL-2.0

//! Rust parts of the mm subsystem.
//!
//! Each mechanism is a module pair behind its own Kconfig option: a
//! kernel-independent core (`core/*.rs`, built and tested on the host with
//! cargo through `rust/mm/Cargo.toml`) and an FFI edge, the only place with
//! `unsafe`, which C reaches through one header. The crate is built when
//! any of the options is on (`CONFIG_RUST_MM`). A module's `#[cfg]` names
//! its option; an edge module's documentation names its C header.
//!
//! The modules are in alphabetical order, one item each, with no blank
//! lines between: every mechanism after rmap IDs is a topic of the series
//! that depends on rmap IDs alone, and this order gives each topic's lines
//! their own place among rmap IDs' modules, so that each topic's patch
//! applies with or without the others.

#[cfg(CONFIG_ARM64_CONTPTE_RUST)]
pub mod arm64_contpte;
#[cfg(CONFIG_MM_RMAP_ID)]
pub mod atomic_seqcount;
#[cfg(CONFIG_ARM64_CONTPTE_RUST)]
#[path = "core/contpte.rs"]
pub mod contpte;
#[cfg(CONFIG_ARM64_CONTPTE_RUST_KUNIT_TEST)]
#[path = "core/contpte_vectors.rs"]
pub mod contpte_vectors;
#[cfg(CONFIG_MM_RMAP_ID)]
#[path = "core/folio.rs"]
pub mod folio;
#[cfg(CONFIG_MM_RMAP_ID)]
pub mod folio_rmap;
#[cfg(CONFIG_COMPOUND_PAGEMAPS_RUST)]
#[path = "core/hotplug_vmemmap.rs"]
pub mod hotplug_vmemmap;
#[cfg(CONFIG_COMPOUND_PAGEMAPS_RUST)]
pub mod hotplug_vmemmap_api;
#[cfg(CONFIG_MM_RMAP_ID)]
#[path = "core/idspace.rs"]
pub mod idspace;
#[cfg(CONFIG_PAGEMAP_SHARED_SWAP)]
#[path = "core/pagemap_swap.rs"]
pub mod pagemap_swap;
#[cfg(CONFIG_PAGEMAP_SHARED_SWAP)]
pub mod pagemap_swap_api;
#[cfg(CONFIG_MM_RMAP_ID)]
pub mod rmap_id;
#[cfg(CONFIG_MM_RMAP_ID)]
#[path = "core/seqcount.rs"]
pub mod seqcount;
#[cfg(CONFIG_MM_RMAP_ID)]
#[path = "core/subid.rs"]
pub mod subid;
#[cfg(CONFIG_PER_VMA_LOCK_RUST)]
#[path = "core/vma_lock.rs"]
pub mod vma_lock;
#[cfg(CONFIG_PER_VMA_LOCK_RUST)]
pub mod vma_lock_api;

/// Prefix of this crate's kernel log messages (used by `pr_*!`).
const __LOG_PREFIX: &[u8] = b"rust_mm\0";
