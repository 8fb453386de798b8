// SPDX-License-Identifier: GPL-2.0

//! The rmap-ID space: which IDs in `1..=max_id` are live.
//!
//! A two-level bitmap. The top level ([`IdSpace`]) is a fixed array of
//! [`NR_LEAVES`] optional leaves plus per-leaf counters; a [`Leaf`] is a
//! 4 KiB bitmap of [`LEAF_BITS`] IDs, allocated only when the IDs below it
//! are all taken and released again when its last ID is freed (leaf 0
//! stays). So memory is about 6 KiB plus 4 KiB per 32768 live IDs.
//!
//! The space itself never allocates or frees memory and never sleeps: the
//! caller supplies leaves and drops the ones handed back, outside its lock
//! (see [`SpaceLock`], [`alloc`] and [`free`]). That keeps `free` usable
//! from atomic context and keeps all of this testable on the host.
//!
//! Allocation takes the lowest free ID of the lowest leaf that has one, so
//! live IDs stay small and dense (small IDs also have many zero chunks).

use core::ops::DerefMut;

use super::subid::{DUMMY_ID, MAX_ID};

/// IDs per leaf.
pub const LEAF_BITS: usize = 1 << 15;

/// 64-bit words per leaf.
pub const LEAF_WORDS: usize = LEAF_BITS / 64;

/// Number of leaves needed to cover every ID up to [`MAX_ID`].
pub const NR_LEAVES: usize = (MAX_ID as usize + 1).div_ceil(LEAF_BITS);

const SUMMARY_WORDS: usize = NR_LEAVES.div_ceil(64);

// A leaf is exactly one 4 KiB page of bits; the per-leaf counters are u16.
const _: () = assert!(core::mem::size_of::<Leaf>() == 4096);
const _: () = assert!(LEAF_BITS <= u16::MAX as usize);
const _: () = assert!(NR_LEAVES * LEAF_BITS == MAX_ID as usize + 1);

/// A 4 KiB bitmap of [`LEAF_BITS`] IDs; bit set means "in use or reserved".
#[repr(C)]
pub struct Leaf {
    words: [u64; LEAF_WORDS],
}

impl Leaf {
    /// An empty leaf.
    pub const fn new() -> Self {
        Leaf {
            words: [0; LEAF_WORDS],
        }
    }
}

impl Default for Leaf {
    fn default() -> Self {
        Self::new()
    }
}

/// Outcome of one allocation attempt under the lock.
#[derive(Debug, PartialEq, Eq)]
pub enum Attempt {
    /// This ID is now live.
    Id(u32),
    /// Every present leaf is full; a new leaf is needed at this index.
    NeedLeaf(usize),
    /// Every ID in `1..=max_id` is live.
    Exhausted,
}

/// Why an allocation failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AllocError {
    /// All IDs are live.
    NoSpace,
    /// A leaf could not be allocated.
    NoMemory,
}

/// Why a free was refused. The space is left unchanged in every case.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FreeError {
    /// The dummy ID 0 is never allocated and cannot be freed.
    Dummy,
    /// Larger than this space's `max_id`: not one of ours.
    OutOfRange,
    /// Not live: a double free, or an ID never handed out.
    NotAllocated,
}

/// The set of live IDs in `1..=max_id`, with leaves of type `B` (a `Box` on
/// the host, a `KBox` in the kernel).
pub struct IdSpace<B> {
    max_id: u32,
    // INVARIANT: `leaves[l]` is `None` for every `l >= nr_leaves`.
    leaves: [Option<B>; NR_LEAVES],
    // INVARIANT: `used[l]` is the number of set bits of `leaves[l]`
    // (reserved bits included), 0 when absent.
    used: [u16; NR_LEAVES],
    // INVARIANT: no word of `leaves[l]` below `hint[l]` has a clear bit.
    hint: [u16; NR_LEAVES],
    // INVARIANT: bit `l` set iff `leaves[l]` is present and not full.
    nonfull: [u64; SUMMARY_WORDS],
    live: u32,
}

impl<B: DerefMut<Target = Leaf>> IdSpace<B> {
    /// An empty space handing out IDs `1..=max_id`; `max_id` is clamped to
    /// `1..=MAX_ID`.
    pub fn new(max_id: u32) -> Self {
        IdSpace {
            max_id: max_id.clamp(1, MAX_ID),
            leaves: [const { None }; NR_LEAVES],
            used: [0; NR_LEAVES],
            hint: [0; NR_LEAVES],
            nonfull: [0; SUMMARY_WORDS],
            live: 0,
        }
    }

    /// Largest ID this space hands out.
    pub fn max_id(&self) -> u32 {
        self.max_id
    }

    /// Number of live IDs.
    pub fn live(&self) -> u32 {
        self.live
    }

    /// Number of leaves currently allocated.
    pub fn leaves(&self) -> usize {
        self.leaves.iter().filter(|l| l.is_some()).count()
    }

    /// Bytes of memory this space uses: itself plus its leaves.
    pub fn footprint(&self) -> usize {
        core::mem::size_of::<Self>() + self.leaves() * core::mem::size_of::<Leaf>()
    }

    fn nr_leaves(&self) -> usize {
        (self.max_id as usize + 1).div_ceil(LEAF_BITS)
    }

    /// Bits of leaf `l` that are never handed out: ID 0, IDs above max_id.
    fn reserved(&self, l: usize) -> usize {
        let first = l * LEAF_BITS;
        let last = first + LEAF_BITS - 1;
        let above = last.saturating_sub(self.max_id as usize).min(LEAF_BITS);
        usize::from(l == 0) + above
    }

    fn set_nonfull(&mut self, l: usize, on: bool) {
        let (w, b) = (l / 64, l % 64);
        if on {
            self.nonfull[w] |= 1 << b;
        } else {
            self.nonfull[w] &= !(1 << b);
        }
    }

    fn first_nonfull(&self) -> Option<usize> {
        self.nonfull
            .iter()
            .enumerate()
            .find(|(_, &w)| w != 0)
            .map(|(i, &w)| i * 64 + w.trailing_zeros() as usize)
    }

    /// Take the lowest free ID of the lowest non-full leaf, or say what is
    /// needed. Never allocates.
    pub fn try_alloc(&mut self) -> Attempt {
        while let Some(l) = self.first_nonfull() {
            let start = usize::from(self.hint[l]);
            let found = self.leaves[l].as_mut().and_then(|leaf| {
                let (w, word) = leaf.words[start..]
                    .iter_mut()
                    .enumerate()
                    .find(|(_, w)| **w != u64::MAX)?;
                let bit = word.trailing_ones() as usize;
                *word |= 1 << bit;
                Some((start + w, bit))
            });
            let Some((w, bit)) = found else {
                // The summary disagreed with the leaf; it is only a hint
                // here, so repair it rather than trust it.
                self.set_nonfull(l, false);
                continue;
            };
            self.used[l] += 1;
            // INVARIANT: words below `w` are full, and so may be `w` now.
            self.hint[l] = w as u16;
            if usize::from(self.used[l]) == LEAF_BITS {
                self.set_nonfull(l, false);
            }
            self.live += 1;
            return Attempt::Id((l * LEAF_BITS + w * 64 + bit) as u32);
        }
        match self.leaves[..self.nr_leaves()]
            .iter()
            .position(|l| l.is_none())
        {
            Some(l) => Attempt::NeedLeaf(l),
            None => Attempt::Exhausted,
        }
    }

    /// Install `leaf` at index `l` (its contents are overwritten). Gives the
    /// leaf back if the index is out of range or already has one.
    pub fn install_leaf(&mut self, l: usize, mut leaf: B) -> Option<B> {
        if l >= self.nr_leaves() || self.leaves[l].is_some() {
            return Some(leaf);
        }
        leaf.words = [0; LEAF_WORDS];
        let reserved = self.reserved(l);
        if l == 0 {
            leaf.words[0] |= 1 << DUMMY_ID;
        }
        // Reserve the IDs above max_id: the top `above` bits of the leaf.
        let above = reserved - usize::from(l == 0);
        for bit in LEAF_BITS - above..LEAF_BITS {
            leaf.words[bit / 64] |= 1 << (bit % 64);
        }
        self.leaves[l] = Some(leaf);
        self.used[l] = reserved as u16;
        self.hint[l] = 0;
        self.set_nonfull(l, reserved < LEAF_BITS);
        None
    }

    /// One allocation step: take an ID, installing `spare` first if a leaf
    /// is needed. Returns the outcome and the spare if it was not used.
    /// With a spare the outcome is never [`Attempt::NeedLeaf`].
    pub fn alloc_or_install(&mut self, spare: Option<B>) -> (Attempt, Option<B>) {
        match (self.try_alloc(), spare) {
            (Attempt::NeedLeaf(l), Some(leaf)) => match self.install_leaf(l, leaf) {
                None => (self.try_alloc(), None),
                // Unreachable: `try_alloc` only names an absent slot below
                // `nr_leaves`, and nothing ran in between. Answer with an
                // error rather than loop.
                back => (Attempt::Exhausted, back),
            },
            (attempt, spare) => (attempt, spare),
        }
    }

    /// Whether `id` is live.
    pub fn is_live(&self, id: u32) -> bool {
        if id == DUMMY_ID || id > self.max_id {
            return false;
        }
        let i = id as usize % LEAF_BITS;
        self.leaves[id as usize / LEAF_BITS]
            .as_ref()
            .is_some_and(|leaf| leaf.words[i / 64] & (1 << (i % 64)) != 0)
    }

    /// Free `id`. On success, returns the leaf that became empty and was
    /// detached, for the caller to drop outside its lock. On error nothing
    /// changed.
    pub fn free(&mut self, id: u32) -> Result<Option<B>, FreeError> {
        if id == DUMMY_ID {
            return Err(FreeError::Dummy);
        }
        if id > self.max_id {
            return Err(FreeError::OutOfRange);
        }
        let (l, i) = (id as usize / LEAF_BITS, id as usize % LEAF_BITS);
        let (w, mask) = (i / 64, 1u64 << (i % 64));
        let leaf = self.leaves[l].as_mut().ok_or(FreeError::NotAllocated)?;
        if leaf.words[w] & mask == 0 {
            return Err(FreeError::NotAllocated);
        }
        leaf.words[w] &= !mask;
        self.used[l] -= 1;
        self.hint[l] = self.hint[l].min(w as u16);
        self.set_nonfull(l, true);
        self.live -= 1;
        if l != 0 && usize::from(self.used[l]) == self.reserved(l) {
            self.set_nonfull(l, false);
            self.used[l] = 0;
            self.hint[l] = 0;
            return Ok(self.leaves[l].take());
        }
        Ok(None)
    }
}

/// An [`IdSpace`] behind a lock, with a way to allocate leaves. The kernel
/// implements it with an irq-safe spinlock and `KBox`, the host tests with
/// a `Mutex` and `Box`.
pub trait SpaceLock {
    /// The owning pointer type of a leaf.
    type Leaf: DerefMut<Target = Leaf>;

    /// Run `f` with the space locked. Must not allocate or sleep.
    fn with<R>(&self, f: impl FnOnce(&mut IdSpace<Self::Leaf>) -> R) -> R;

    /// Allocate a zeroed leaf; called with the lock not held. May sleep.
    fn new_leaf(&self) -> Option<Self::Leaf>;
}

/// Allocate an ID: at most two trips through the lock, one leaf allocation
/// outside it; an unused leaf is dropped outside the lock.
pub fn alloc<L: SpaceLock>(space: &L) -> Result<u32, AllocError> {
    let mut spare = None;
    loop {
        let (attempt, back) = space.with(|s| s.alloc_or_install(spare.take()));
        match attempt {
            Attempt::Id(id) => return Ok(id),
            Attempt::Exhausted => return Err(AllocError::NoSpace),
            Attempt::NeedLeaf(_) => {
                // Only reached without a spare: allocate one and retry, which
                // then cannot ask for a leaf again.
                spare = back.or_else(|| space.new_leaf());
                if spare.is_none() {
                    return Err(AllocError::NoMemory);
                }
            }
        }
    }
}

/// Free an ID; a leaf that became empty is dropped outside the lock. Never
/// sleeps.
pub fn free<L: SpaceLock>(space: &L, id: u32) -> Result<(), FreeError> {
    let emptied = space.with(|s| s.free(id))?;
    drop(emptied);
    Ok(())
}
