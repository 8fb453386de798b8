// SPDX-License-Identifier: GPL-2.0

//! Rust parts of the mm subsystem.
//!
//! Each mechanism is a module pair behind its own Kconfig option: a
//! kernel-independent core (`core/*.rs`, built and tested on the host with
//! cargo through `rust/mm/Cargo.toml`) and an FFI edge, the only place with
//! `unsafe`, which C reaches through one header. The crate is built when
//! any of the options is on (`CONFIG_RUST_MM`).
//!
//! - `CONFIG_PER_VMA_LOCK_RUST`: the per-VMA lock as one atomic word in
//!   the vma; C reaches its state machine through
//!   `include/linux/vma_lock.h`.
//! - `CONFIG_MM_RMAP_ID`: precise "mapped shared" tracking of large folios
//!   with rmap IDs; C reaches it through `include/linux/rmap_id.h` and
//!   `include/linux/atomic_seqcount.h`.
//! - `CONFIG_ARM64_CONTPTE_RUST`: the decisions of arm64's transparent
//!   contiguous PTEs; C reaches them through
//!   `arch/arm64/include/asm/contpte_rust.h`.
//! - `CONFIG_PAGEMAP_SHARED_SWAP`: the pagemap entries of shared memory's
//!   unmapped pages (where a swapped-out shmem page is); C reaches them
//!   through `include/linux/pagemap_swap.h`.

#[cfg(CONFIG_ARM64_CONTPTE_RUST)]
pub mod arm64_contpte;
#[cfg(CONFIG_ARM64_CONTPTE_RUST)]
#[path = "core/contpte.rs"]
pub mod contpte;
#[cfg(CONFIG_ARM64_CONTPTE_RUST_KUNIT_TEST)]
#[path = "core/contpte_vectors.rs"]
pub mod contpte_vectors;

#[cfg(CONFIG_MM_RMAP_ID)]
pub mod atomic_seqcount;
#[cfg(CONFIG_MM_RMAP_ID)]
#[path = "core/folio.rs"]
pub mod folio;
#[cfg(CONFIG_MM_RMAP_ID)]
pub mod folio_rmap;
#[cfg(CONFIG_MM_RMAP_ID)]
#[path = "core/idspace.rs"]
pub mod idspace;
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

#[cfg(CONFIG_PAGEMAP_SHARED_SWAP)]
#[path = "core/pagemap_swap.rs"]
pub mod pagemap_swap;
#[cfg(CONFIG_PAGEMAP_SHARED_SWAP)]
pub mod pagemap_swap_api;

/// Prefix of this crate's kernel log messages (used by `pr_*!`).
const __LOG_PREFIX: &[u8] = b"rust_mm\0";
