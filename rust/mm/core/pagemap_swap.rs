// SPDX-License-Identifier: GPL-2.0

//! `/proc/pid/pagemap` entries for the pages of shared memory that no PTE
//! of the reader's target maps: where a swapped-out shmem page is.
//!
//! 6.12 reports a `pte_none` entry of a shmem, memfd or
//! `MAP_SHARED|MAP_ANONYMOUS` mapping as 0, "never touched", also when the
//! page is on swap: for shared memory the swap entry lives in the file's
//! page cache (an XArray value entry), not in the process's page table.
//! With the per-open opt-in (`PAGEMAP_SET_OPTS` with
//! `PAGEMAP_OPT_SHARED_SWAP`), pagemap reads, for the `pte_none` entries of
//! a *shared* shmem mapping, what the file holds at that page's offset:
//!
//! - nothing (a hole): 0, as 6.12;
//! - a folio in the page cache: [`FILE`] -- the file has the page in
//!   memory, this process does not map it;
//! - a swap entry (on swap, or in the swap cache): [`SWAP`] | [`FILE`] |
//!   the swap type and offset, as 6.12 encodes `PM_SWAP` entries.
//!
//! C's PTE loop computes 6.12's entries; for an opted-in reader C then
//! walks the file's XArray once (RCU) over the span of entries that take
//! the file's entry -- 6.12's entry of a `pte_none` PTE has none of the
//! bits [`PTE_DECIDED`], every other PTE's has one, so the entries say
//! which PTEs were none ([`PteState::of_entry`]) -- and hands the entries
//! it found, as the XArray holds them ([`Found`]), to [`Run::merge_all`],
//! which decodes each ([`Found::decode`]: a folio, or the type and offset
//! of a swap entry), expands it -- a large (multi-index) entry covers
//! `1 << order` offsets, the swap offset growing with the index -- and
//! gives the offsets it covers their final entry ([`report`]): one call
//! into Rust per page-table range, work per entry found.
//! Everything else keeps 6.12's encoding; a reader that did
//! not opt in never reaches this code. [`FileRange`] is the same
//! expansion into a range of its own slots (the reference the host tests
//! compare against).
//!
//! As for a swap PTE, the location is shown only to a reader that may see
//! PFNs (`CAP_SYS_ADMIN` when it opened the file); others read frame 0.
//!
//! Bad input never panics: an order or an offset the arithmetic cannot
//! hold, a swap type at or above `MAX_SWAPFILES` (shmem stores a
//! swap-in error as a poisoned entry of the marker type), a swap location
//! a pagemap entry cannot represent, or an entry outside the range
//! records nothing wrong -- at worst "swapped, location unknown" (frame 0:
//! offset 0 of a swap device is its header, never a page), never another
//! page's location.

/// Bits of the frame field of a pagemap entry (`PM_PFRAME_BITS`).
pub const PFRAME_BITS: u32 = 55;
/// The frame field (`PM_PFRAME_MASK`): a PFN, or a swap type and offset.
pub const PFRAME_MASK: u64 = (1 << PFRAME_BITS) - 1;
/// `PM_SOFT_DIRTY`: the PTE is soft-dirty, or the vma is `VM_SOFTDIRTY`.
pub const SOFT_DIRTY: u64 = 1 << 55;
/// `PM_MMAP_EXCLUSIVE`: the page is mapped exclusively.
pub const MMAP_EXCLUSIVE: u64 = 1 << 56;
/// `PM_UFFD_WP`: the PTE is uffd-wp write-protected.
pub const UFFD_WP: u64 = 1 << 57;
/// `PM_FILE`: a file page or shared anonymous page.
pub const FILE: u64 = 1 << 61;
/// `PM_SWAP`: the page is swapped.
pub const SWAP: u64 = 1 << 62;
/// `PM_PRESENT`: the page is present (mapped).
pub const PRESENT: u64 = 1 << 63;
/// Bits of the swap type in a swap frame (`MAX_SWAPFILES_SHIFT`): 6.12
/// encodes a swap entry as `type | offset << MAX_SWAPFILES_SHIFT`.
pub const SWAP_TYPE_BITS: u32 = 5;
/// Swap types a frame can name (`1 << MAX_SWAPFILES_SHIFT`; the kernel's
/// `MAX_SWAPFILES` is below it).
pub const SWAP_TYPES: u32 = 1 << SWAP_TYPE_BITS;
/// The largest swap offset a frame can hold.
pub const MAX_SWAP_OFFSET: u64 = PFRAME_MASK >> SWAP_TYPE_BITS;
/// The largest order of an XArray entry [`FileRange::record`] accepts: an
/// entry of `1 << order` offsets still has its count in a `u64`.
pub const MAX_ENTRY_ORDER: u32 = u64::BITS - 1;

const _: () = {
    assert!(PFRAME_MASK & (SOFT_DIRTY | MMAP_EXCLUSIVE | UFFD_WP | FILE | SWAP | PRESENT) == 0);
    assert!(SWAP_TYPE_BITS < PFRAME_BITS);
    assert!(MAX_SWAP_OFFSET << SWAP_TYPE_BITS | (SWAP_TYPES as u64 - 1) == PFRAME_MASK);
};

/// The pagemap entry of a page on swap whose location cannot be
/// represented (frame 0 is type 0, offset 0: a swap device's header page,
/// which never holds a page of memory).
pub const SWAPPED_NOWHERE: u64 = SWAP | FILE;

/// The pagemap entry of a page the file holds in memory, unmapped here.
pub const RESIDENT: u64 = FILE;

/// The frame of a swap entry, as 6.12 encodes it (`swp_type(entry) |
/// swp_offset(entry) << MAX_SWAPFILES_SHIFT`), or `None` if the type or
/// the offset does not fit.
pub const fn swap_frame(swap_type: u32, offset: u64) -> Option<u64> {
    if swap_type >= SWAP_TYPES || offset > MAX_SWAP_OFFSET {
        return None;
    }
    Some(swap_type as u64 | offset << SWAP_TYPE_BITS)
}

/// The pagemap entry of a shared page on swap at (`swap_type`, `offset`).
pub const fn swapped_entry(swap_type: u32, offset: u64) -> u64 {
    match swap_frame(swap_type, offset) {
        Some(frame) => SWAP | FILE | frame,
        None => SWAPPED_NOWHERE,
    }
}

/// Bits of the value an XArray value entry holds (`BITS_PER_XA_VALUE`): a
/// value entry is `value << 1 | 1` (`xa_mk_value()`), the bit pattern of
/// an `unsigned long` whose low bit is set.
pub const XA_VALUE_BITS: u32 = u64::BITS - 1;
/// Where the type of a swap entry starts in its value (`SWP_TYPE_SHIFT`):
/// shmem stores a swapped-out page as the value entry of its
/// `swp_entry_t` (`swp_to_radix_entry()`), the offset in the low
/// `SWP_TYPE_SHIFT` bits, the type in the [`SWAP_TYPE_BITS`] above.
pub const SWP_TYPE_SHIFT: u32 = XA_VALUE_BITS - SWAP_TYPE_BITS;
/// The offset bits of a swap entry's value (`SWP_OFFSET_MASK`).
pub const SWP_OFFSET_MASK: u64 = (1 << SWP_TYPE_SHIFT) - 1;

const _: () = {
    // Every swap type, and the type and offset fields fill the value.
    assert!(SWP_TYPE_SHIFT + SWAP_TYPE_BITS == XA_VALUE_BITS);
    assert!(SWP_OFFSET_MASK >> (SWP_TYPE_SHIFT - 1) == 1);
};

/// One XArray entry as C's walk found it, undecoded: the index it was
/// found at (any offset it covers), its order (`xas_get_order()`), and the
/// entry as the XArray holds it (`void *` as an integer): a folio pointer
/// (low two bits clear, never dereferenced here) or a value entry (low bit
/// set: a swap entry). C copies the words and decides nothing;
/// [`Found::decode`] reads them.
///
/// An order-0 value entry may stand for a run of `nr` (C's walk extends
/// the last entry when the next index holds the next value: swap-out in
/// index order takes consecutive swap slots): the entries at `index + i`
/// hold `xa_entry + 2 * i` (`xa_mk_value(v + i)`), for `i < nr`, each
/// decoded on its own -- a run is exactly its `nr` entries written out
/// ([`Found::nth`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Found {
    /// The index the walk found the entry at.
    pub index: u64,
    /// Its order.
    pub order: u32,
    /// The entry's bits.
    pub xa_entry: u64,
    /// How many entries the run stands for: 1 for a single entry.
    pub nr: u32,
}

impl Found {
    /// The `i`-th entry of the run, as a single entry, or `None` past the
    /// run's end, for a run that is not one of order-0 value entries
    /// (`nr` 0, a run of folios or of large entries: C builds none), or
    /// whose indices or values would wrap.
    #[inline]
    pub const fn nth(&self, i: u32) -> Option<Found> {
        let single = self.nr == 1 && i == 0;
        let run = self.order == 0 && self.xa_entry & 1 != 0 && i < self.nr;
        if !single && !run {
            return None;
        }
        // The last index and value of the run must not wrap either.
        let last = (self.nr - 1) as u64;
        if self.index.checked_add(last).is_none() || self.xa_entry.checked_add(2 * last).is_none() {
            return None;
        }
        Some(Found {
            index: self.index + i as u64,
            order: self.order,
            xa_entry: self.xa_entry + 2 * i as u64,
            nr: 1,
        })
    }

    /// The entry C found, decoded: a folio, or a swap entry with its type
    /// and offset (`radix_to_swp_entry()`, `swp_type()`, `swp_offset()`);
    /// [`RecordError::Entry`] for NULL or an internal entry (a node,
    /// sibling or retry entry: the walk hands none of them over).
    #[inline]
    pub const fn decode(&self) -> Result<Entry, RecordError> {
        let raw = self.xa_entry;
        let (kind, swap_type, swap_offset) = if raw & 1 != 0 {
            let value = raw >> 1;
            (
                EntryKind::Swap,
                (value >> SWP_TYPE_SHIFT) as u32,
                value & SWP_OFFSET_MASK,
            )
        } else if raw != 0 && raw & 2 == 0 {
            (EntryKind::Folio, 0, 0)
        } else {
            return Err(RecordError::Entry);
        };
        Ok(Entry {
            index: self.index,
            order: self.order,
            kind,
            swap_type,
            swap_offset,
        })
    }
}

/// What an XArray entry of a shmem mapping is ([`Found::decode`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryKind {
    /// A folio: the page is in the page cache (maybe also in the swap
    /// cache, while it is being written out).
    Folio,
    /// A value entry: a swap entry, the page is on swap (maybe also in the
    /// swap cache).
    Swap,
}

/// One XArray entry as the walk found it: at `index`, of `1 << order`
/// offsets (a large entry starts at `index` rounded down to its order),
/// and for [`EntryKind::Swap`] the swap entry stored in it, which is the
/// location of the entry's first offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The index the walk found the entry at (any offset it covers).
    pub index: u64,
    /// Its order (`xas_get_order()`).
    pub order: u32,
    /// A folio or a swap entry.
    pub kind: EntryKind,
    /// The swap type of a swap entry (`swp_type()`).
    pub swap_type: u32,
    /// The swap offset of a swap entry's first offset (`swp_offset()`).
    pub swap_offset: u64,
}

/// Why [`FileRange::record`] recorded nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordError {
    /// Not an entry the walk can find ([`Found::decode`]).
    Entry,
    /// The order is above [`MAX_ENTRY_ORDER`].
    Order,
    /// The entry covers none of the range's offsets.
    Outside,
}

/// The pagemap entries of the file offsets `[first, first + len)` of a
/// shared shmem mapping, one per offset, from one walk of the file's
/// XArray over those offsets. A new range says "hole" (0) everywhere;
/// every entry the walk finds fills the offsets it covers. The kernel
/// merges entries straight into its pagemap entries ([`Run`]); this is the
/// same expansion into slots of its own, which the host tests use as the
/// reference.
pub struct FileRange<'a> {
    first: u64,
    slots: &'a mut [u64],
    swap_types: u32,
    show_location: bool,
}

impl<'a> FileRange<'a> {
    /// A range of `slots.len()` offsets from `first`, all holes. Swap
    /// types below `swap_types` (the kernel's `MAX_SWAPFILES`) are swap
    /// devices; the location is in the entries only if `show_location`
    /// (the reader may see PFNs).
    pub fn new(first: u64, slots: &'a mut [u64], swap_types: u32, show_location: bool) -> Self {
        slots.fill(0);
        Self {
            first,
            slots,
            swap_types,
            show_location,
        }
    }

    /// The range's first offset.
    pub fn first(&self) -> u64 {
        self.first
    }

    /// The pagemap entries, one per offset from [`Self::first`].
    pub fn slots(&self) -> &[u64] {
        self.slots
    }

    /// Fill the offsets `entry` covers inside the range, returning how
    /// many. A large swap entry's offset `i` is at swap offset
    /// `entry.swap_offset + (i - start)`; an offset whose location is not
    /// shown, does not fit a frame, or is not on a swap device (a type at
    /// or above `swap_types`: shmem's swap-in error entries) is "swapped,
    /// location unknown" ([`SWAPPED_NOWHERE`]), never a wrapped offset.
    pub fn record(&mut self, entry: &Entry) -> Result<usize, RecordError> {
        let located = self.show_location && entry.swap_type < self.swap_types;
        let (from, to, delta) = covered(entry, self.first, self.slots.len())?;
        for (i, slot) in self.slots[from..=to].iter_mut().enumerate() {
            *slot = slot_of(entry, delta + i as u64, located);
        }
        Ok(to - from + 1)
    }
}

/// Which offsets of the range `[first, first + len)` `entry` covers: the
/// first and last index into the range, and the distance of the first
/// from the entry's start.
fn covered(entry: &Entry, first: u64, len: usize) -> Result<(usize, usize, u64), RecordError> {
    if entry.order > MAX_ENTRY_ORDER {
        return Err(RecordError::Order);
    }
    let span = 1u64 << entry.order;
    let start = entry.index & !(span - 1);
    // The entry's last offset; `start + span - 1` cannot overflow: the
    // start is aligned to `span`, so it is at most `u64::MAX - (span - 1)`.
    let last = start + (span - 1);
    // The range's last offset (an empty range, or one that would run past
    // the top of the offsets, holds what fits).
    if len == 0 {
        return Err(RecordError::Outside);
    }
    let range_last = first.saturating_add(len as u64 - 1);
    let lo = start.max(first);
    let hi = last.min(range_last);
    if lo > hi {
        return Err(RecordError::Outside);
    }
    // INVARIANT: first <= lo <= hi <= first + len - 1, so both indexes are
    // below `len`.
    Ok(((lo - first) as usize, (hi - first) as usize, lo - start))
}

/// The pagemap entry of the offset `delta` pages into `entry`: a
/// resident page, or the swap location of that page (`located`: the
/// reader may see it and the type is a swap device's), or "swapped,
/// location unknown".
#[inline]
fn slot_of(entry: &Entry, delta: u64, located: bool) -> u64 {
    match entry.kind {
        EntryKind::Folio => RESIDENT,
        EntryKind::Swap if !located => SWAPPED_NOWHERE,
        EntryKind::Swap => match entry.swap_offset.checked_add(delta) {
            Some(offset) => swapped_entry(entry.swap_type, offset),
            None => SWAPPED_NOWHERE,
        },
    }
}

/// A run of PTEs of a shared shmem mapping from file offset `first`, as
/// C's pagemap walk left them: `pmes` the entries 6.12 computed, which
/// also say what each PTE held ([`PteState::of_entry`]). Each entry one
/// walk of the file's
/// XArray found over the run gives the offsets it covers their final
/// entry ([`report`]); an offset no entry covers keeps 6.12's entry (a
/// hole: what [`report`] gives it). Work per entry found, none per offset
/// without one.
pub struct Run<'a> {
    first: u64,
    pmes: &'a mut [u64],
    swap_types: u32,
    show_location: bool,
}

impl<'a> Run<'a> {
    /// The run of `pmes.len()` PTEs from `first`. `swap_types` and
    /// `show_location` as for [`FileRange::new`].
    pub fn new(first: u64, pmes: &'a mut [u64], swap_types: u32, show_location: bool) -> Self {
        Self {
            first,
            pmes,
            swap_types,
            show_location,
        }
    }

    /// The run's entries.
    pub fn pmes(&self) -> &[u64] {
        self.pmes
    }

    /// Give the offsets `entry` covers their final entries: how many it
    /// covers, or why none ([`FileRange::record`]'s errors).
    #[inline]
    pub fn merge(&mut self, entry: &Entry) -> Result<usize, RecordError> {
        let located = self.show_location && entry.swap_type < self.swap_types;
        // Most entries are order 0: one offset, no span to clip.
        if entry.order == 0 {
            return self.merge_one(entry, located);
        }
        self.merge_large(entry, located)
    }

    /// [`Self::merge`] of an order-0 entry.
    #[inline]
    fn merge_one(&mut self, entry: &Entry, located: bool) -> Result<usize, RecordError> {
        // An index below `first` wraps to an offset past the run.
        let i = entry.index.wrapping_sub(self.first);
        let Some(pme) = usize::try_from(i).ok().and_then(|i| self.pmes.get_mut(i)) else {
            return Err(RecordError::Outside);
        };
        // report() for a slot of the walk's: never a hole, always a file
        // slot (the host tests compare the two over random runs).
        if takes_file(*pme) {
            *pme = slot_of(entry, 0, located) | (*pme & SOFT_DIRTY);
        }
        Ok(1)
    }

    /// [`Self::merge`] each entry of the order-0 run of `nr` above 1 at
    /// `index` from `xa_entry` ([`Found`]):
    /// the offsets of the range it covers, each with its own value,
    /// decoded and merged as [`Self::merge_one`] does; `located_types` as
    /// in [`Self::merge_all`]. Refused as a whole ([`RecordError::Entry`])
    /// if it is not a run C builds ([`Found::nth`]).
    #[inline(never)]
    fn merge_run(
        first: u64,
        pmes: &mut [u64],
        index: u64,
        xa_entry: u64,
        nr: u32,
        located_types: u32,
    ) -> Result<usize, RecordError> {
        let run = Found {
            index,
            order: 0,
            xa_entry,
            nr,
        };
        let Some(last) = run.nth(run.nr.wrapping_sub(1)) else {
            return Err(RecordError::Entry);
        };
        let Some(len) = pmes.len().checked_sub(1) else {
            return Err(RecordError::Outside);
        };
        let range_last = first.saturating_add(len as u64);
        let lo = run.index.max(first);
        let hi = last.index.min(range_last);
        if lo > hi {
            return Err(RecordError::Outside);
        }
        // INVARIANT: `run.index <= lo <= hi <= last.index`, so `skip` and
        // `n` are below `nr` and the values below lie between the run's
        // first and last, which nth() checked do not wrap.
        let (skip, n) = (lo - run.index, hi - lo);
        let from = (lo - first) as usize;
        let Some(pmes) = pmes.get_mut(from..=from.saturating_add(n as usize)) else {
            return Err(RecordError::Outside);
        };
        let v0 = run.xa_entry.wrapping_add(skip.wrapping_mul(2));
        let v1 = v0.wrapping_add(n.wrapping_mul(2));
        let one = |xa_entry| Found {
            index: 0,
            order: 0,
            xa_entry,
            nr: 1,
        };
        // Value entries: they always decode.
        let (Ok(e0), Ok(e1)) = (one(v0).decode(), one(v1).decode()) else {
            return Err(RecordError::Entry);
        };
        // Within one swap type the offsets grow by one per entry: the
        // slots are all "swapped nowhere" (type not shown, or the first
        // offset already beyond a frame), or all located, each one
        // offset (1 << SWAP_TYPE_BITS of the frame) past the one before
        // (the last offset fits a frame). Otherwise -- a run across a
        // type's last offset or across the largest offset a frame holds --
        // each entry is decoded on its own.
        let located = e0.swap_type < located_types;
        let one_type = e0.swap_type == e1.swap_type;
        let (mut slot, step) = if one_type && (!located || e0.swap_offset > MAX_SWAP_OFFSET) {
            (SWAPPED_NOWHERE, 0)
        } else if one_type && e1.swap_offset <= MAX_SWAP_OFFSET {
            (
                swapped_entry(e0.swap_type, e0.swap_offset),
                1 << SWAP_TYPE_BITS,
            )
        } else {
            let mut value = v0;
            for pme in pmes {
                if let (true, Ok(e)) = (takes_file(*pme), one(value).decode()) {
                    *pme = slot_of(&e, 0, e.swap_type < located_types) | (*pme & SOFT_DIRTY);
                }
                // Past the last entry this is never read: it may wrap.
                value = value.wrapping_add(2);
            }
            return Ok(n as usize + 1);
        };
        for pme in pmes {
            if takes_file(*pme) {
                *pme = slot | (*pme & SOFT_DIRTY);
            }
            // INVARIANT: the last slot's offset fits a frame: no carry
            // into the flag bits before the loop ends.
            slot = slot.wrapping_add(step);
        }
        Ok(n as usize + 1)
    }

    /// [`Self::merge`] for an entry of order above 0: shmem mTHP swap-out,
    /// rare next to order-0 entries, kept out of their loop.
    #[cold]
    #[inline(never)]
    fn merge_large(&mut self, entry: &Entry, located: bool) -> Result<usize, RecordError> {
        let (from, to, delta) = covered(entry, self.first, self.pmes.len())?;
        for (i, pme) in self.pmes[from..=to].iter_mut().enumerate() {
            *pme = report(
                PteState::of_entry(*pme),
                *pme,
                slot_of(entry, delta + i as u64, located),
            );
        }
        Ok(to - from + 1)
    }

    /// [`Self::merge`] every entry one walk found ([`Found::decode`]d):
    /// how many offsets they covered, or the error of the first entry
    /// refused (order-0 entries count first) -- the entries after a
    /// refused one are merged all the same (a refused entry changes
    /// nothing). What the kernel runs, once per walk.
    ///
    /// Two passes over `found`: the order-0 entries, nearly all of them,
    /// decoded and merged in registers with no call in the loop (a run
    /// in a loop of its own); then,
    /// only if the first pass met one, the large entries. The entries of
    /// one walk cover distinct offsets (an XArray holds one entry per
    /// index; an entry a retried walk met twice merges the same way
    /// twice), so the order does not change the result.
    pub fn merge_all<I>(&mut self, found: I) -> Result<usize, RecordError>
    where
        I: IntoIterator<Item = Found>,
        I::IntoIter: Clone,
    {
        let found = found.into_iter();
        // Which swap types are shown: none to a reader without PFNs.
        let located_types = if self.show_location {
            self.swap_types
        } else {
            0
        };
        let mut covered: usize = 0;
        let mut refused = None;
        let mut large = false;
        // The run's bounds in registers: nothing of `self` is read from
        // memory in the loop.
        let first = self.first;
        let pmes: &mut [u64] = self.pmes;
        for f in found.clone() {
            // Taken apart: nothing of `f` needs to live in memory.
            let Found {
                index,
                order,
                xa_entry,
                nr,
            } = f;
            if order != 0 {
                large = true;
                continue;
            }
            if nr != 1 {
                match Self::merge_run(first, pmes, index, xa_entry, nr, located_types) {
                    Ok(n) => covered = covered.saturating_add(n),
                    Err(RecordError::Outside) => {}
                    Err(err) => refused = refused.or(Some(err)),
                }
                continue;
            }
            // A single order-0 entry, the common case: decoded straight to
            // its file slot (as merge_one() does through an Entry), then
            // merged into the PTE's entry at its offset, if in the run.
            let slot = match single_slot(xa_entry, located_types) {
                Ok(slot) => slot,
                Err(err) => {
                    refused = refused.or(Some(err));
                    continue;
                }
            };
            // An index below `first` wraps to an offset past the run.
            let at = usize::try_from(index.wrapping_sub(first)).ok();
            if let Some(pme) = at.and_then(|i| pmes.get_mut(i)) {
                if takes_file(*pme) {
                    *pme = slot | (*pme & SOFT_DIRTY);
                }
                // At most one per entry: `covered` counts entries.
                covered = covered.wrapping_add(1);
            }
        }
        if large {
            for f in found.filter(|f| f.order != 0) {
                // A large entry is a single entry (nr 1): no run of them.
                let entry = f.nth(0).ok_or(RecordError::Entry);
                match entry.and_then(|f| f.decode()).and_then(|e| self.merge(&e)) {
                    Ok(n) => covered = covered.saturating_add(n),
                    Err(RecordError::Outside) => {}
                    Err(err) => refused = refused.or(Some(err)),
                }
            }
        }
        match refused {
            Some(err) => Err(err),
            None => Ok(covered),
        }
    }
}

/// The file slot of a single order-0 XArray entry `xa_entry` (one of
/// [`Found`]): [`RESIDENT`] for a folio, the swap location for a value
/// entry whose type is below `located_types` (the types shown to this
/// reader: [`Run::merge_all`]) and whose offset fits a frame, otherwise
/// [`SWAPPED_NOWHERE`]; [`RecordError::Entry`] for what
/// [`Found::decode`] refuses. Exactly [`Found::decode`] then the slot
/// [`Run::merge`] gives an order-0 entry (the host tests compare the
/// two), without building the [`Entry`] in between.
#[inline(always)]
pub const fn single_slot(xa_entry: u64, located_types: u32) -> Result<u64, RecordError> {
    if xa_entry & 1 == 0 {
        return if xa_entry != 0 && xa_entry & 2 == 0 {
            Ok(RESIDENT)
        } else {
            Err(RecordError::Entry)
        };
    }
    let value = xa_entry >> 1;
    // At most SWAP_TYPES - 1: the type is the top SWAP_TYPE_BITS bits.
    let swap_type = (value >> SWP_TYPE_SHIFT) as u32;
    let offset = value & SWP_OFFSET_MASK;
    if swap_type < located_types && offset <= MAX_SWAP_OFFSET {
        // The type fits SWAP_TYPE_BITS and the offset a frame: the
        // frame of swap_frame(), with no check left to fail.
        Ok(SWAP | FILE | offset << SWAP_TYPE_BITS | swap_type as u64)
    } else {
        Ok(SWAPPED_NOWHERE)
    }
}

/// What a PTE of a shared shmem mapping held, as 6.12's pagemap entry
/// for it says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PteState {
    /// `pte_none()`, or no page table at all (a hole of the walk).
    None,
    /// A present PTE ([`PRESENT`]).
    Present,
    /// A swap or migration entry, or a PTE marker (uffd-wp, poison,
    /// guard): 6.12 gives every non-present, non-none PTE [`SWAP`].
    Swap,
}

/// The bits of a pagemap entry 6.12 sets for every PTE that is not
/// `pte_none()` (`pte_to_pagemap_entry()`: [`PRESENT`] for a present PTE,
/// [`SWAP`] for any other); the entry of a `pte_none` PTE, or of a hole
/// without a page table, is 0 or [`SOFT_DIRTY`]. C's walk skips the
/// offsets whose entry has one of these bits: their PTE decides.
pub const PTE_DECIDED: u64 = PRESENT | SWAP;

impl PteState {
    /// What the PTE behind 6.12's pagemap entry `pme` held.
    pub const fn of_entry(pme: u64) -> Self {
        if pme & PRESENT != 0 {
            Self::Present
        } else if pme & SWAP != 0 {
            Self::Swap
        } else {
            Self::None
        }
    }
}

/// Whether the entry of a PTE whose 6.12 entry is `pme` comes from the
/// file (only a `pte_none` PTE's: [`report`]); exactly the entries without
/// a [`PTE_DECIDED`] bit.
pub const fn takes_file(pme: u64) -> bool {
    matches!(PteState::of_entry(pme), PteState::None)
}

/// What kind of mapping a vma is, for this decision.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VmaKind {
    /// Private anonymous memory: its swap entries are in its PTEs.
    PrivateAnon = 0,
    /// A shared mapping of a shmem file: shmem, memfd, or
    /// `MAP_SHARED|MAP_ANONYMOUS` (backed by a shmem file).
    SharedShmem = 1,
    /// A private mapping of a shmem file: its own pages are anonymous
    /// (their swap entries are in its PTEs); the rest is the file's.
    PrivateShmem = 2,
    /// Any other file, hugetlb, or special mapping.
    Other = 3,
}

/// Whether a read of a vma's entries walks the file's XArray: only for an
/// opted-in reader, and only over shared shmem mappings -- the one kind
/// whose swapped-out pages have no PTE. A private mapping of a shmem file
/// is left as 6.12 reports it: the pages it wrote are its own anonymous
/// pages (swap entries in its PTEs, reported already), and the file's
/// pages behind its `pte_none` entries are not its memory, but what it
/// would read on a fault.
pub const fn walks_file(opted_in: bool, vma: VmaKind) -> bool {
    opted_in && matches!(vma, VmaKind::SharedShmem)
}

/// Whether `slot` is an entry [`FileRange::record`] can produce.
const fn is_file_slot(slot: u64) -> bool {
    let flags = slot & !PFRAME_MASK;
    slot == 0 || slot == RESIDENT || flags == SWAP | FILE
}

/// `PAGEMAP_SCAN`'s category of a file-backed page (`PAGE_IS_FILE` of
/// `include/uapi/linux/fs.h`).
pub const SCAN_FILE: u64 = 1 << 2;
/// `PAGEMAP_SCAN`'s category of a swapped-out page (`PAGE_IS_SWAPPED`).
pub const SCAN_SWAPPED: u64 = 1 << 4;

/// The `PAGEMAP_SCAN` categories an opted-in scan adds to a `pte_none`
/// page of a shared shmem mapping, from the entry an opted-in read gives
/// that page (`pme`: [`Run::merge_all`] over entries that were 0), so
/// that a scan and a read of the same file agree: a swapped-out page
/// ([`SWAP`] | [`FILE`] and its location, or frame 0) is
/// [`SCAN_SWAPPED`] | [`SCAN_FILE`], as a read's bits 62 and 61; a page in
/// the page cache that the process does not map ([`RESIDENT`]) is
/// [`SCAN_FILE`] only; a hole adds nothing. [`SOFT_DIRTY`] is the vma's,
/// not the file's, and is ignored. Any other entry -- one a merge over
/// `pte_none` entries cannot give, such as a [`PRESENT`] one -- adds
/// nothing: the scan's own category of that PTE stands.
pub const fn scan_categories(pme: u64) -> u64 {
    let slot = pme & !SOFT_DIRTY;
    if slot == 0 || !is_file_slot(slot) {
        0
    } else if slot == RESIDENT {
        SCAN_FILE
    } else {
        SCAN_SWAPPED | SCAN_FILE
    }
}

/// [`scan_categories`] of every entry of `pmes`, in place: the entries of
/// one page-table range an opted-in scan has the file's view of, which C
/// then adds to the categories of the pages whose PTE is none.
pub fn scan_categories_in_place(pmes: &mut [u64]) {
    for pme in pmes.iter_mut() {
        *pme = scan_categories(*pme);
    }
}

/// The pagemap entry of a PTE of a vma whose file was walked
/// ([`walks_file`]): `current` is what 6.12 computed for it and `slot` the
/// file's entry at its offset ([`FileRange`]). A `pte_none` PTE gets the
/// file's entry, keeping 6.12's [`SOFT_DIRTY`] (a `VM_SOFTDIRTY` vma); a
/// hole in the file (slot 0) leaves 6.12's entry as it is; every other
/// PTE -- present, a swap or migration entry, a uffd-wp or poison marker
/// -- keeps 6.12's entry: what the page table says wins. A `slot` no walk
/// can produce gives 6.12's entry too.
pub const fn report(pte: PteState, current: u64, slot: u64) -> u64 {
    match pte {
        PteState::None if slot != 0 && is_file_slot(slot) => slot | (current & SOFT_DIRTY),
        _ => current,
    }
}
