// SPDX-License-Identifier: GPL-2.0

//! Rust parts of the mm subsystem.
//!
//! Each mechanism is a module pair behind its own Kconfig option, both
//! named after the mechanism's C header: a kernel-independent core in
//! [`logic`] (`core/*.rs`, built and tested on the host with cargo through
//! `rust/mm/Cargo.toml`), and an FFI edge at the crate root, which C
//! reaches through that header: `rust_<name>_*` functions declared in
//! `<name>.h` and defined in `<name>.rs`. The edges are the only places
//! with `unsafe`; the cores cannot have any (`forbid(unsafe_code)`). The
//! crate is built when any of the options is on (`CONFIG_RUST_MM`). A
//! module's `#[cfg]` names its option; an edge's documentation opens with
//! its C header.
//!
//! Every mechanism after rmap IDs is a topic of the series that depends on
//! rmap IDs alone. Each module is declared under a comment naming it, and
//! the mechanisms' modules alternate with rmap IDs' own: each topic's
//! lines then sit between lines of rmap IDs, three or more on each side,
//! which no other topic changes, so that each topic's patch applies with
//! or without the others.

/// Prefix of this crate's kernel log messages (used by `pr_*!`).
const __LOG_PREFIX: &[u8] = b"rust_mm\0";

// C words viewed as the cores' atomics, in one place.
pub mod atomic;
// Compound pagemaps: include/linux/compound_pagemaps.h.
#[cfg(CONFIG_COMPOUND_PAGEMAPS_RUST)]
pub mod compound_pagemaps;
// The atomic seqcount: include/linux/atomic_seqcount.h.
#[cfg(CONFIG_MM_RMAP_ID)]
pub mod atomic_seqcount;
// Contiguous PTEs: arch/arm64/include/asm/contpte.h.
#[cfg(CONFIG_ARM64_CONTPTE_RUST)]
pub mod contpte;
// The rmap state of large folios: include/linux/folio_rmap.h.
#[cfg(CONFIG_MM_RMAP_ID)]
pub mod folio_rmap;
// Swapped-out shared memory in pagemap: include/linux/pagemap_swap.h.
#[cfg(CONFIG_PAGEMAP_SHARED_SWAP)]
pub mod pagemap_swap;
// rmap IDs and sub-IDs: include/linux/rmap_id.h.
#[cfg(CONFIG_MM_RMAP_ID)]
pub mod rmap_id;
// The per-VMA lock word: include/linux/vma_lock.h.
#[cfg(CONFIG_PER_VMA_LOCK_RUST)]
pub mod vma_lock;
/// The kernel-independent cores, one per mechanism, and their atomics.
///
/// Not `core`, which would shadow the `core` crate in every path of this
/// crate; `logic` is what the cores hold: the decisions, without the
/// kernel. `#[path = "."]` keeps the paths below relative to `rust/mm/`.
#[forbid(unsafe_code)]
#[path = "."]
pub mod logic {
    // Compound pagemaps: the vmemmap plan of device memory.
    #[cfg(CONFIG_COMPOUND_PAGEMAPS_RUST)]
    #[path = "core/compound_pagemaps.rs"]
    pub mod compound_pagemaps;
    // The atomic seqcount.
    #[cfg(CONFIG_MM_RMAP_ID)]
    #[path = "core/atomic_seqcount.rs"]
    pub mod atomic_seqcount;
    // Contiguous PTEs: the decisions, and the vectors of their KUnit suite.
    #[cfg(CONFIG_ARM64_CONTPTE_RUST)]
    #[path = "core/contpte.rs"]
    pub mod contpte;
    #[cfg(CONFIG_ARM64_CONTPTE_RUST_KUNIT_TEST)]
    #[path = "core/contpte_vectors.rs"]
    pub mod contpte_vectors;
    // The rmap state of large folios.
    #[cfg(CONFIG_MM_RMAP_ID)]
    #[path = "core/folio_rmap.rs"]
    pub mod folio_rmap;
    // Swapped-out shared memory in pagemap.
    #[cfg(CONFIG_PAGEMAP_SHARED_SWAP)]
    #[path = "core/pagemap_swap.rs"]
    pub mod pagemap_swap;
    // rmap IDs and sub-IDs.
    #[cfg(CONFIG_MM_RMAP_ID)]
    #[path = "core/rmap_id.rs"]
    pub mod rmap_id;
    // The per-VMA lock word.
    #[cfg(CONFIG_PER_VMA_LOCK_RUST)]
    #[path = "core/vma_lock.rs"]
    pub mod vma_lock;
    // The cores' atomics: core's (loom's on the host, under --cfg loom).
    #[path = "core/sync.rs"]
    pub mod sync;
}
