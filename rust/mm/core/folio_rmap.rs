// SPDX-License-Identifier: GPL-2.0

//! The rmap state of one large folio: its mapcount and rmap values, updated
//! under its atomic seqcount, and the readers built on them.
//!
//! Writers ([`FolioRmap::add`], [`FolioRmap::set_new`]) change the mapcount
//! and every rmap value in one write section: one sub-ID update per batch of
//! pages, whatever the batch size. Readers ([`FolioRmap::sharing`],
//! [`FolioRmap::sole_mapper`], [`FolioRmap::may_reuse`]) take a consistent
//! snapshot or give up, and give up towards "shared": a reader never answers
//! "exclusive" from a snapshot a writer was changing.
//!
//! Where the fields live is the kernel's business (`rust/mm/folio_rmap.rs`
//! maps a `struct folio` onto a [`FolioRmap`]); this module only fixes which
//! words there are. [`Layout`] describes the placement and checks at compile
//! time that every value of every class lies inside the smallest folio of
//! that class.

use super::atomic_seqcount::{AtomicSeqcount, Mode, Preempt, WriteGuard};
use super::rmap_id::subid::{self, Class, DUMMY_ID, MAX_ORDER, MAX_VALUES, NR_ORDERS, NR_SUBIDS};
use super::sync::{Atomic32, Atomic64, AtomicI32};

// `FolioRmap::add` has one arm per value count up to six.
const _: () = assert!(
    MAX_VALUES == 6,
    "FolioRmap::add dispatches on 0..=6 live values"
);

/// Smallest folio order the sub-ID classes serve. Which orders a kernel
/// tracks also depends on where its folios have room for the words:
/// [`Layout::track_min_order`] (6.12: 2, as an order-1 folio has no page 2
/// for the first value; 7.3: 1, in the words of its mm IDs).
pub const TRACK_MIN_ORDER: u32 = subid::MIN_ORDER;

/// How often a reader retries a snapshot spoiled by a writer before it gives
/// up and answers "shared".
pub const READ_TRIES: u32 = 8;

/// Whether folios of `order` can keep rmap values (the class table's
/// orders); [`Layout::tracks`] says whether a kernel's do.
pub const fn is_tracked_order(order: u32) -> bool {
    order >= TRACK_MIN_ORDER && order <= MAX_ORDER
}

/// Where a tracked folio keeps its seqcount and rmap values, in bytes from
/// the start of the folio (its head `struct page`).
///
/// The folio's words are counted in pairs, one pair per struct page at
/// `pair_offset`: word `w` is word `w % 2` of the pair in page `w / 2`.
/// Value `k` is word `first_value_word + k`. In the kernel the pair is a
/// page's `index` and `private`: on 6.12 values start at page 2's `index`
/// (word 4), which no user of a non-hugetlb folio's tail pages 2, 3, 4
/// touches while it is a folio (`_deferred_list` sits before them in page
/// 2, the hugetlb fields in page 3 are hugetlb-only); on 7.3 at page 1's
/// `private` (word 3), the words of the mm IDs our tracking replaces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// `sizeof(struct page)`.
    pub page_size: usize,
    /// Offset of the seqcount in the folio.
    pub seq_offset: usize,
    /// Offset of the value pair inside a page.
    pub pair_offset: usize,
    /// The word of value 0.
    pub first_value_word: usize,
    /// Smallest folio order whose folios keep the words (at least
    /// [`TRACK_MIN_ORDER`]).
    pub track_min_order: u32,
}

impl Layout {
    /// Offset of rmap value `k` in the folio.
    pub const fn value_offset(&self, k: usize) -> usize {
        // Wrapping arithmetic: `check()` bounds every offset a class uses
        // (k < MAX_VALUES), so nothing wraps, and the hot path carries no
        // overflow-check branch.
        let w = self.first_value_word.wrapping_add(k);
        self.page_size
            .wrapping_mul(w / 2)
            .wrapping_add(self.pair_offset)
            .wrapping_add(8 * (w % 2))
    }

    /// Page index holding the last value of a folio with `values` values.
    pub const fn last_value_page(&self, values: usize) -> usize {
        (self.first_value_word + values - 1) / 2
    }

    /// Whether folios of `order` keep rmap values in this layout.
    pub const fn tracks(&self, order: u32) -> bool {
        order >= self.track_min_order && is_tracked_order(order)
    }

    /// Whether the layout fits: 8-byte aligned words, a pair inside one
    /// page, no value before page 1 (page 0 is the head's own), the
    /// seqcount in the smallest tracked folio and on no value's word, and
    /// every class's last value in a page that the smallest tracked folio
    /// of the class has. Evaluated at compile time by the kernel build (and
    /// by a host test).
    pub const fn check(&self) -> bool {
        // Bit tests, not `is_multiple_of`: that is const only since Rust
        // 1.87, above the kernel's minimum (1.78).
        if self.page_size & 7 != 0
            || self.seq_offset & 7 != 0
            || self.pair_offset & 7 != 0
            || self.pair_offset + 16 > self.page_size
            || self.track_min_order < TRACK_MIN_ORDER
            || self.track_min_order > subid::MAX_ORDER
            || self.first_value_word < 2
            || self.first_value_word > 2 * self.page_size
            || self.seq_offset + 8 > self.page_size << self.track_min_order
        {
            return false;
        }
        let mut k = 0;
        while k < MAX_VALUES {
            if self.value_offset(k) == self.seq_offset {
                return false;
            }
            k += 1;
        }
        let mut i = 0;
        while i < subid::NR_CLASSES {
            let c: &Class = &subid::CLASSES[i];
            let min = if c.min_order > self.track_min_order {
                c.min_order
            } else {
                self.track_min_order
            };
            if min <= c.max_order && self.last_value_page(c.values) >= (1usize << min) {
                return false;
            }
            i += 1;
        }
        true
    }
}

/// The answer of [`FolioRmap::sharing`] and [`FolioRmap::sole_mapper`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sharing {
    /// No page of the folio is mapped.
    Unmapped,
    /// Every mapping belongs to the asking mm ([`FolioRmap::sharing`]), or
    /// to one mm with a real ID, whichever ([`FolioRmap::sole_mapper`]).
    Exclusive,
    /// Another mm maps (part of) the folio, or it is mapped more often than
    /// it has pages, or the asking mm has the dummy ID
    /// ([`FolioRmap::sharing`]); or more than one mm, or only mms with the
    /// dummy ID, map it ([`FolioRmap::sole_mapper`]).
    Shared,
    /// Writers kept changing the folio; callers treat this as shared.
    GaveUp,
}

impl Sharing {
    /// The conservative boolean: anything but a proven exclusive or
    /// unmapped folio counts as shared.
    pub fn maybe_shared(self) -> bool {
        matches!(self, Sharing::Shared | Sharing::GaveUp)
    }
}

/// A consistent snapshot of a folio's mapcount and values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Snapshot {
    /// Total mapcount (PTE mappings plus PMD mappings).
    pub mapcount: i64,
    /// The rmap values; entries past the class's count are 0.
    pub values: [u64; MAX_VALUES],
}

/// Where a tracked folio's words are. The kernel implements it with offsets
/// into the folio's struct pages (`rust/mm/folio_rmap.rs`), the tests with
/// plain fields. [`FolioRmap`] asks for value `k` only for `k` below the
/// class's value count, which every implementation must be able to serve.
pub trait FolioWords {
    /// The atomic type of the 64-bit words (seqcount and values).
    type U64: Atomic64;
    /// The atomic type of the 32-bit counters (the mapcount).
    type I32: Atomic32;
    /// The atomic seqcount.
    fn seqcount(&self) -> &AtomicSeqcount<Self::U64>;
    /// Mapcount minus one, as C keeps `_large_mapcount` (-1: unmapped).
    fn mapcount(&self) -> &Self::I32;
    /// Rmap value `k`.
    fn value(&self, k: usize) -> &Self::U64;
}

/// The rmap state of one tracked large folio.
///
/// # Examples
///
/// A folio of order 9 (512 pages), its words in plain fields here where
/// the kernel has them in the folio's struct pages:
///
/// ```
/// use rust_mm_core::atomic_seqcount::{AtomicSeqcount, NoPreempt};
/// use rust_mm_core::folio_rmap::{FolioRmap, FolioWords, MmIds, Sharing};
/// use rust_mm_core::rmap_id::subid::{SubIds, MAX_VALUES};
/// use rust_mm_core::sync::{AtomicI32, AtomicU64};
///
/// #[derive(Default)]
/// struct Words {
///     seq: AtomicSeqcount,
///     mapcount: AtomicI32,
///     values: [AtomicU64; MAX_VALUES],
/// }
///
/// impl FolioWords for Words {
///     type U64 = AtomicU64;
///     type I32 = AtomicI32;
///     fn seqcount(&self) -> &AtomicSeqcount {
///         &self.seq
///     }
///     fn mapcount(&self) -> &AtomicI32 {
///         &self.mapcount
///     }
///     fn value(&self, k: usize) -> &AtomicU64 {
///         &self.values[k]
///     }
/// }
///
/// let folio = FolioRmap::new(9, Words::default()).expect("order 9 is tracked");
/// folio.reset();
/// let (parent, child) = (SubIds::new(1).unwrap(), SubIds::new(2).unwrap());
/// let (parent, child) = (MmIds::of(&parent), MmIds::of(&child));
///
/// // The parent maps every page: the folio is its alone.
/// folio.add::<NoPreempt>(&parent, 512);
/// assert_eq!(folio.sharing(&parent), Sharing::Exclusive);
/// // And, asking for no mm in particular, one mm maps it.
/// assert_eq!(folio.sole_mapper(), Sharing::Exclusive);
///
/// // After fork the child maps them too, and both see it shared.
/// folio.add::<NoPreempt>(&child, 512);
/// assert_eq!(folio.sharing(&parent), Sharing::Shared);
/// assert_eq!(folio.sharing(&child), Sharing::Shared);
/// assert_eq!(folio.sole_mapper(), Sharing::Shared);
///
/// // Once the child has unmapped them, the parent's again.
/// folio.add::<NoPreempt>(&child, -512);
/// assert_eq!(folio.sharing(&parent), Sharing::Exclusive);
/// assert_eq!(folio.sharing(&child), Sharing::Shared);
/// assert_eq!(folio.sole_mapper(), Sharing::Exclusive);
/// ```
pub struct FolioRmap<W: FolioWords> {
    words: W,
    /// Value count of the folio's class (1..=MAX_VALUES).
    nr_values: usize,
    /// Where the class's sub-IDs start in an mm's cached sub-IDs.
    subid_off: usize,
    order: u32,
}

/// The reference counts [`FolioRmap::may_reuse`] needs beside the rmap
/// state.
pub struct ReuseCounts<'a, I: Atomic32 = AtomicI32> {
    /// The folio's reference count.
    pub refcount: &'a I,
    /// PMD mappings minus one (C's `_entire_mapcount`).
    pub entire_mapcount: &'a I,
}

/// The sub-IDs of the asking (or mapping) mm for this folio's class.
#[derive(Clone, Copy, Debug)]
pub struct MmIds<'s> {
    /// The mm's rmap ID ([`DUMMY_ID`] if it has none).
    pub id: u32,
    /// All the mm's cached sub-IDs ([`subid::SubIds::as_slice`] layout).
    pub subids: &'s [u64; NR_SUBIDS],
    /// Per folio order, how many leading sub-IDs of its class are not all
    /// 0 ([`subid::SubIds::live`]): what [`FolioRmap::add`] adds.
    pub live: &'s [u8; NR_ORDERS],
}

impl<'s> MmIds<'s> {
    /// The IDs of an mm whose sub-IDs are `s`.
    pub fn of(s: &'s subid::SubIds) -> Self {
        MmIds {
            id: s.id(),
            subids: s.as_array(),
            live: s.live(),
        }
    }

    /// The IDs of the dummy mm ([`DUMMY_ID`]): every sub-ID 0, nothing
    /// live.
    pub const fn dummy() -> MmIds<'static> {
        MmIds {
            id: DUMMY_ID,
            subids: &DUMMY_SUBIDS,
            live: &[0; NR_ORDERS],
        }
    }
}

/// The sub-IDs of [`DUMMY_ID`]: all 0.
static DUMMY_SUBIDS: [u64; NR_SUBIDS] = [0; NR_SUBIDS];

impl<W: FolioWords> FolioRmap<W> {
    /// The rmap state of a folio of `order` whose words `words` gives.
    /// `None` if the order is not tracked.
    pub fn new(order: u32, words: W) -> Option<Self> {
        if !is_tracked_order(order) {
            return None;
        }
        let subid_off = usize::from(*subid::ORDER_SUBID_OFFSET.get(order as usize)?);
        let nr_values = usize::from(*subid::ORDER_VALUES.get(order as usize)?);
        // INVARIANT: 1 <= nr_values <= MAX_VALUES for tracked orders (the
        // class table), so `value(k)` is only asked for existing values.
        if nr_values == 0 || nr_values > MAX_VALUES {
            return None;
        }
        Some(FolioRmap {
            words,
            nr_values,
            subid_off,
            order,
        })
    }

    /// The folio order.
    pub fn order(&self) -> u32 {
        self.order
    }

    /// Number of pages of the folio.
    pub fn nr_pages(&self) -> i64 {
        // Tracked orders are at most MAX_ORDER (15): no overflow.
        1i64.checked_shl(self.order).unwrap_or(i64::MAX)
    }

    /// This class's sub-IDs of `mm`. `None` cannot happen (the offsets
    /// come from the same class table as `NR_SUBIDS`, checked at compile
    /// time); callers still treat it conservatively.
    fn class_subids<'s>(&self, mm: &MmIds<'s>) -> Option<&'s [u64]> {
        mm.subids.get(self.subid_off..)?.get(..self.nr_values)
    }

    /// Reset to "unmapped, no writer, sequence 0": for a folio nobody else
    /// can see (being prepared, or frozen for a split).
    pub fn reset(&self) {
        self.words.seqcount().reset_unused();
        self.words.mapcount().store_relaxed(-1);
        for k in 0..self.nr_values {
            self.words.value(k).store_relaxed(0);
        }
    }

    /// Account `delta` mappings (negative: unmappings) of the folio by `mm`
    /// in one write section: the mapcount and each value change once.
    ///
    /// Only the mm's live values change ([`MmIds::live`]): a value whose
    /// sub-ID is 0, and every one after the last that is not, would only
    /// have `delta * 0` added. An mm with fewer live counts than the class
    /// has values (a small ID) does less work; the result is the same.
    ///
    /// Should the sub-IDs be unavailable (see `class_subids`), only the
    /// mapcount changes. That is still safe: the values then lack this
    /// mapping, so they cannot equal `mapcount * subid` of any mm with a
    /// real ID (its sub-IDs are not all 0) and readers answer "shared".
    ///
    /// This is the map/unmap hot path. It dispatches once on the live count
    /// to a body whose value loop has a constant length (so it is
    /// straight-line code with constant offsets) and branches once on how
    /// the section was entered.
    ///
    /// Returns the folio's mapcount after the update (what C's
    /// `folio_add_return_large_mapcount()` returns).
    #[inline]
    pub fn add<P: Preempt>(&self, mm: &MmIds<'_>, delta: i32) -> i32 {
        // INVARIANT: at most `nr_values`, so `add_n` asks only for values
        // the class has, whatever the mm's cache says.
        // In bytes, as the cache and the class table hold them (compared as
        // bytes, the count needs no widening before the dispatch); the
        // value count is at most MAX_VALUES, so the cast is lossless.
        let live = mm
            .live
            .get(self.order as usize)
            .copied()
            .unwrap_or(0)
            .min(self.nr_values as u8);
        match live {
            // None live means the class's sub-IDs of the mm are all 0 (the
            // dummy mm's): adding `delta * 0` to value 0 is as good as
            // nothing, and saves a dispatch arm. 1 is the common case.
            0 | 1 => self.add_n::<P, 1>(mm, delta),
            2 => self.add_n::<P, 2>(mm, delta),
            3 => self.add_n::<P, 3>(mm, delta),
            4 => self.add_n::<P, 4>(mm, delta),
            5 => self.add_n::<P, 5>(mm, delta),
            // INVARIANT: `new` bounds the count by MAX_VALUES (6, checked
            // at the top of this file), so this arm is exactly six values.
            _ => self.add_n::<P, MAX_VALUES>(mm, delta),
        }
    }

    /// [`Self::add`] for the first `N` values (`N <= self.nr_values`).
    #[inline(always)]
    fn add_n<P: Preempt, const N: usize>(&self, mm: &MmIds<'_>, delta: i32) -> i32 {
        let end = self.subid_off.wrapping_add(N);
        let subids: Option<&[u64; N]> = mm
            .subids
            .get(self.subid_off..end)
            .and_then(|s| s.try_into().ok());
        // Two's complement: adding `delta as u64` wraps like subtraction.
        let d = i64::from(delta) as u64;
        let guard = self.words.seqcount().write::<P>();
        let mapcount = self.words.mapcount();
        // C keeps the mapcount minus one.
        let new = match guard.mode() {
            Mode::Exclusive => {
                // The only writer: plain loads and stores (one add to
                // memory each, with the load last so the compiler folds
                // it into the add).
                let new = delta.wrapping_add(mapcount.load_relaxed());
                mapcount.store_relaxed(new);
                if let Some(subids) = subids {
                    for (k, s) in subids.iter().enumerate() {
                        let cell = self.words.value(k);
                        cell.store_relaxed(s.wrapping_mul(d).wrapping_add(cell.load_relaxed()));
                    }
                }
                new
            }
            Mode::Shared => {
                let new = mapcount.fetch_add_relaxed(delta).wrapping_add(delta);
                if let Some(subids) = subids {
                    for (k, s) in subids.iter().enumerate() {
                        self.words.value(k).fetch_add_relaxed(s.wrapping_mul(d));
                    }
                }
                new
            }
        };
        new.wrapping_add(1)
    }

    /// Set the state of a new folio mapped `mapcount` times by `mm` only
    /// (`folio_add_new_anon_rmap`), replacing whatever was there.
    pub fn set_new<P: Preempt>(&self, mm: &MmIds<'_>, mapcount: i32) {
        let subids = self.class_subids(mm);
        let guard = self.words.seqcount().write::<P>();
        set_i32(&guard, self.words.mapcount(), mapcount.wrapping_sub(1));
        for k in 0..self.nr_values {
            // Missing sub-IDs: 0, as if the mappings were not counted (see
            // `add`), which readers answer with "shared".
            let s = subids.and_then(|s| s.get(k)).copied().unwrap_or(0);
            set_u64(&guard, self.words.value(k), s.wrapping_mul(mapcount as u64));
        }
    }

    /// Read mapcount and values as one snapshot, or `None` if a writer is
    /// inside or changed them meanwhile (the caller may try again).
    pub fn snapshot(&self) -> Option<Snapshot> {
        let seq = self.words.seqcount();
        let start = seq.raw_read()?;
        let snap = self.read_words();
        if seq.read_retry(start) {
            return None;
        }
        Some(snap)
    }

    /// Mapcount and values, unprotected (callers check the seqcount).
    fn read_words(&self) -> Snapshot {
        let mapcount = i64::from(self.words.mapcount().load_relaxed()) + 1;
        let mut values = [0u64; MAX_VALUES];
        for (k, out) in values.iter_mut().enumerate().take(self.nr_values) {
            *out = self.words.value(k).load_relaxed();
        }
        Snapshot { mapcount, values }
    }

    /// Decide from a snapshot.
    fn decide(&self, snap: &Snapshot, mm: &MmIds<'_>) -> Sharing {
        if snap.mapcount <= 0 {
            return Sharing::Unmapped;
        }
        // More mappings than pages: obviously shared (and the digit
        // argument needs mapcount <= P anyway).
        if snap.mapcount > self.nr_pages() {
            return Sharing::Shared;
        }
        // The dummy ID's sub-IDs are all 0: two dummy mms would look like
        // one. Never call a dummy mm exclusive.
        if mm.id == DUMMY_ID {
            return Sharing::Shared;
        }
        let Some(subids) = self.class_subids(mm) else {
            return Sharing::Shared;
        };
        let values = snap.values.get(..self.nr_values).unwrap_or(&[]);
        if subid::values_match(snap.mapcount as u64, values, subids) {
            Sharing::Exclusive
        } else {
            Sharing::Shared
        }
    }

    /// Is the folio mapped by `mm` only? Precise while no writer
    /// interferes: retries up to [`READ_TRIES`] snapshots, then gives up.
    pub fn sharing(&self, mm: &MmIds<'_>) -> Sharing {
        // Obviously shared, without touching the seqcount.
        if i64::from(self.words.mapcount().load_relaxed()) + 1 > self.nr_pages() {
            return Sharing::Shared;
        }
        for _ in 0..READ_TRIES {
            if let Some(snap) = self.snapshot() {
                return self.decide(&snap, mm);
            }
            core::hint::spin_loop();
        }
        Sharing::GaveUp
    }

    /// Decide from a snapshot, for no mm in particular: is every mapping by
    /// one mm?
    fn decide_sole(&self, snap: &Snapshot) -> Sharing {
        if snap.mapcount <= 0 {
            return Sharing::Unmapped;
        }
        // As in `decide`: more mappings than pages is shared, and the digit
        // argument needs mapcount <= P (nr_pages <= P).
        if snap.mapcount > self.nr_pages() {
            return Sharing::Shared;
        }
        // Cannot fail for a tracked order (`new` checked it); if it did,
        // "shared" is the safe answer.
        let Ok(class) = subid::class_for_order(self.order) else {
            return Sharing::Shared;
        };
        let values = snap.values.get(..self.nr_values).unwrap_or(&[]);
        // 1 <= mapcount <= nr_pages here: the cast is lossless.
        if subid::values_single_owner(class, snap.mapcount as u64, values) {
            Sharing::Exclusive
        } else {
            Sharing::Shared
        }
    }

    /// Is the folio mapped by one mm only, whichever it is? The question of
    /// Linux 7.3's `folio_maybe_mapped_shared(folio)`, which names no mm:
    /// [`Sharing::Exclusive`] iff every mapping belongs to one mm with a
    /// real rmap ID ([`subid::values_single_owner`] has the proof);
    /// mappings by mms with the dummy ID only are [`Sharing::Shared`], as
    /// several of those cannot be told from one.
    ///
    /// Same discipline as [`Self::sharing`]: a mapcount above the folio's
    /// pages is shared without touching the seqcount, otherwise up to
    /// [`READ_TRIES`] snapshots, then [`Sharing::GaveUp`].
    pub fn sole_mapper(&self) -> Sharing {
        // Obviously shared, without touching the seqcount.
        if i64::from(self.words.mapcount().load_relaxed()) + 1 > self.nr_pages() {
            return Sharing::Shared;
        }
        for _ in 0..READ_TRIES {
            if let Some(snap) = self.snapshot() {
                return self.decide_sole(&snap);
            }
            core::hint::spin_loop();
        }
        Sharing::GaveUp
    }

    /// May a write fault of `mm` reuse (a page of) this anon folio instead
    /// of copying? Only if, in one snapshot no writer disturbed: the folio
    /// is not PMD-mapped, every reference is a page-table mapping
    /// (`refcount == mapcount`: no GUP pin, swap cache or other holder),
    /// and every mapping belongs to `mm`. A writer inside means "copy".
    pub fn may_reuse(&self, mm: &MmIds<'_>, counts: &ReuseCounts<'_, W::I32>) -> bool {
        let seq = self.words.seqcount();
        let Some(start) = seq.raw_read() else {
            return false;
        };
        let snap = self.read_words();
        let refcount = i64::from(counts.refcount.load_relaxed());
        let pmd_mapped = counts.entire_mapcount.load_relaxed() >= 0;
        if seq.read_retry(start) {
            return false;
        }
        !pmd_mapped && refcount == snap.mapcount && self.decide(&snap, mm) == Sharing::Exclusive
    }
}

/// The virtual range `[start, end)` of a page table whose PTEs a write fault
/// may make writable after it proved a folio exclusive
/// ([`reuse_window`]). Empty (`start == end`) means none.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReuseWindow {
    /// First address, page aligned.
    pub start: u64,
    /// End (exclusive), page aligned.
    pub end: u64,
}

impl ReuseWindow {
    /// The window of no PTE at `at`.
    pub const fn empty(at: u64) -> Self {
        Self { start: at, end: at }
    }

    /// Whether the window holds the page at `addr`.
    pub const fn contains(&self, addr: u64) -> bool {
        self.start <= addr && addr < self.end
    }
}

/// Which PTEs a write fault that reused page `idx` of a folio of `nr` pages
/// at `addr` may make writable in the same fault, once the folio is proven
/// exclusive to the faulting mm with every reference accounted for
/// ([`FolioRmap::may_reuse`]).
///
/// The window is where the folio's pages would lie if the folio were mapped
/// linearly around the faulting page, clipped to the vma `[vma_start,
/// vma_end)` and to the page table of the faulting PTE (a table maps
/// `1 << table_shift` bytes; pages are `1 << page_shift`): the PTEs whose
/// lock the fault holds, of a vma whose flags it has checked. It holds the
/// faulting page. It says where the caller may *look*: each PTE in it still
/// needs the caller's test that it maps a page of this folio and may be
/// made writable (uffd-wp, soft-dirty, NUMA hinting); a folio mapped
/// non-linearly (after `mremap()` of a part) gets the rest of its pages
/// upgraded on their own faults.
///
/// Bad input -- `idx >= nr`, `addr` outside the vma, an unaligned vma,
/// shifts the arithmetic cannot hold -- gives the empty window: upgrade
/// nothing but the faulting PTE, which is always correct.
pub const fn reuse_window(
    addr: u64,
    idx: u64,
    nr: u64,
    vma_start: u64,
    vma_end: u64,
    page_shift: u32,
    table_shift: u32,
) -> ReuseWindow {
    if page_shift == 0 || page_shift >= table_shift || table_shift >= u64::BITS {
        return ReuseWindow::empty(addr);
    }
    let page_mask = (1u64 << page_shift) - 1;
    let table_mask = (1u64 << table_shift) - 1;
    let at = addr & !page_mask;
    if idx >= nr
        || vma_start & page_mask != 0
        || vma_end & page_mask != 0
        || at < vma_start
        || at >= vma_end
    {
        return ReuseWindow::empty(at);
    }
    // The folio's linear span around the faulting page; it cannot start
    // below 0 or end above the top of the address space, and neither can
    // the table's span (the last table ends at the top: `saturating_add`
    // stops at u64::MAX, above every vma end).
    let (before, after) = match (
        idx.checked_mul(1 << page_shift),
        (nr - idx).checked_mul(1 << page_shift),
    ) {
        (Some(b), Some(a)) => (b, a),
        _ => return ReuseWindow::empty(at),
    };
    let table_start = at & !table_mask;
    let lo = max3(vma_start, table_start, at.saturating_sub(before));
    let hi = min3(
        vma_end,
        table_start.saturating_add(table_mask + 1),
        at.saturating_add(after),
    );
    // INVARIANT: lo <= at < hi: `at` is inside the vma, its table and its
    // folio's span (`after >= 1 << page_shift`). `hi` is page aligned: the
    // vma end is, the table end is unless it saturated (then the vma end,
    // below it, is the minimum), and the span end is unless it saturated
    // likewise. `lo` is page aligned as a maximum of aligned values.
    ReuseWindow { start: lo, end: hi }
}

const fn max3(a: u64, b: u64, c: u64) -> u64 {
    let m = if a > b { a } else { b };
    if m > c {
        m
    } else {
        c
    }
}

const fn min3(a: u64, b: u64, c: u64) -> u64 {
    let m = if a < b { a } else { b };
    if m < c {
        m
    } else {
        c
    }
}

fn set_i32<P: Preempt, A: Atomic64, I: Atomic32>(_guard: &WriteGuard<'_, P, A>, cell: &I, v: i32) {
    cell.store_relaxed(v);
}

fn set_u64<P: Preempt, A: Atomic64>(_guard: &WriteGuard<'_, P, A>, cell: &A, v: u64) {
    cell.store_relaxed(v);
}
