// SPDX-License-Identifier: GPL-2.0

//! rmap IDs: one unique ID per mm, and the sub-IDs it adds to the rmap
//! values of the large folios it maps.
//!
//! [`subid`] derives an ID's sub-IDs, class by class, and proves at
//! compile time that no sum of them can overflow; [`idspace`] hands the
//! IDs out and takes them back.

// The paths are explicit: the kernel mounts this file with `#[path]`, and a
// module file mounted that way looks for its modules beside itself.
#[path = "rmap_id/idspace.rs"]
pub mod idspace;
#[path = "rmap_id/subid.rs"]
pub mod subid;
