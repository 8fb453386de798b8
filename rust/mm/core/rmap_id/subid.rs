// SPDX-License-Identifier: GPL-2.0

//! Sub-IDs: the numbers an mm adds to a large folio's rmap values.
//!
//! Every mm has an rmap ID of [`ID_BITS`] bits. A large folio of order `o`
//! keeps `V` 64-bit rmap values, `V` depending on `o` (its [`Class`]). The
//! ID's bits are split into `V` chunks; chunk `j` of ID `m` becomes the
//! sub-ID `subid_j(m)`: the number whose base-`(P + 1)` digits are the bits
//! of the chunk, where `P` is the number of pages of the largest order the
//! class serves. Mapping `k` pages of the folio into mm `m` adds
//! `k * subid_j(m)` to value `j`.
//!
//! If at most `P` mappings contribute (the folio's mapcount `n <= P`), digit
//! `i` of value `j` is the number of mappings whose chunk `j` has bit `i`
//! set: no digit reaches `P + 1`, so no digit carries. Hence value `j`
//! equals `n * subid_j(m)` iff every mapping's chunk `j` equals chunk `j` of
//! `m`, and all values match iff every mapping belongs to `m`. The argument
//! needs every sum to stay below `2^64`; the largest sum is
//! `P * max_subid = (P + 1)^w - 1`, so a class is only accepted when
//! `(P + 1)^w <= 2^64` for its widest chunk. [`CLASSES`] is computed by
//! `const fn`s and that bound is asserted at compile time: a table that
//! could overflow does not build.

use core::num::NonZeroU64;

/// Number of bits of an rmap ID.
pub const ID_BITS: u32 = 24;

/// Largest valid rmap ID (`2^24 - 1`).
pub const MAX_ID: u32 = (1 << ID_BITS) - 1;

/// The rmap ID of `init_mm` and of any mm that could not get an ID.
///
/// All its sub-IDs are 0. A folio mapped by it never looks exclusive to an
/// mm with a real ID, and readers treat it as "always shared".
pub const DUMMY_ID: u32 = 0;

/// Smallest folio order that has rmap values (order 0 is a small folio).
pub const MIN_ORDER: u32 = 1;

/// Largest folio order the classes serve.
///
/// Covers every THP order on x86_64 (PMD order 9) and arm64 with 4K (9),
/// 16K (11) and 64K (13) pages.
pub const MAX_ORDER: u32 = 15;

/// Largest number of 64-bit rmap values a folio can need.
pub const MAX_VALUES: usize = 6;

/// Chunks of at most this many bits use compile-time lookup tables; wider
/// chunks are computed once per mm (see [`SubIds`]).
pub const NARROW_BITS: u32 = 12;

/// One chunk of the rmap ID: the bits `shift .. shift + bits`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Chunk {
    /// First ID bit of the chunk.
    pub shift: u32,
    /// Number of ID bits in the chunk.
    pub bits: u32,
    /// Sub-ID of the all-ones chunk: the largest sub-ID of this chunk.
    pub max_subid: u64,
}

impl Chunk {
    const EMPTY: Chunk = Chunk {
        shift: 0,
        bits: 0,
        max_subid: 0,
    };

    /// The chunk's value within `id`.
    #[inline]
    pub const fn value_of(&self, id: u32) -> u32 {
        (id >> self.shift) & ((1u32 << self.bits) - 1)
    }
}

/// A value-count class: the folio orders that keep [`Class::values`] rmap
/// values and the chunking they use.
#[derive(Clone, Copy, Debug)]
pub struct Class {
    /// Number of 64-bit rmap values (and ID chunks).
    pub values: usize,
    /// Smallest folio order in this class.
    pub min_order: u32,
    /// Largest folio order in this class.
    pub max_order: u32,
    /// Pages of a `max_order` folio: the largest mapcount the digit argument
    /// must handle, and `P + 1` is the digit base.
    pub p: u64,
    /// Width of the widest chunk.
    pub max_bits: u32,
    /// The chunks; entries at `values..` are unused (zero).
    pub chunks: [Chunk; MAX_VALUES],
    /// The largest value a sum can take: `P * max_subid` of the widest chunk,
    /// which is `(P + 1)^max_bits - 1`.
    pub max_sum: u64,
}

impl Class {
    /// The used chunks.
    pub fn chunks(&self) -> &[Chunk] {
        &self.chunks[..self.values]
    }

    /// Whether the class uses a compile-time table (all chunks narrow).
    pub const fn is_narrow(&self) -> bool {
        self.max_bits <= NARROW_BITS
    }
}

/// Errors of the runtime lookups.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SubIdError {
    /// The folio order is outside `MIN_ORDER..=MAX_ORDER`.
    OrderOutOfRange,
    /// The rmap ID is larger than [`MAX_ID`].
    IdOutOfRange,
    /// The value index is not below the class's value count.
    ValueOutOfRange,
}

/// The sub-ID of chunk value `chunk` with digit base `p + 1`: the sum of
/// `(p + 1)^i` over the set bits `i` of `chunk`, or `None` if it does not fit
/// in 64 bits.
pub const fn subid_of(chunk: u64, p: u64) -> Option<u64> {
    let base = match p.checked_add(1) {
        Some(b) => b,
        None => return None,
    };
    let mut sum: u64 = 0;
    let mut digit: u64 = 1;
    let mut c = chunk;
    while c != 0 {
        if c & 1 == 1 {
            sum = match sum.checked_add(digit) {
                Some(s) => s,
                None => return None,
            };
        }
        c >>= 1;
        if c != 0 {
            digit = match digit.checked_mul(base) {
                Some(d) => d,
                None => return None,
            };
        }
    }
    Some(sum)
}

/// The largest sum `p` mappings of a `bits`-wide chunk can produce,
/// `p * subid_of(all ones)`, or `None` if that reaches `2^64` (then the
/// digit argument fails modulo `2^64`).
pub const fn max_sum(bits: u32, p: u64) -> Option<u64> {
    if bits >= 64 {
        return None;
    }
    match subid_of((1u64 << bits) - 1, p) {
        Some(m) => p.checked_mul(m),
        None => None,
    }
}

/// Width of the widest chunk when [`ID_BITS`] are split into `values` chunks.
const fn widest_chunk(values: usize) -> u32 {
    let v = values as u32;
    ID_BITS.div_ceil(v)
}

/// Largest order `o` (up to [`MAX_ORDER`]) for which `2^o` pages keep every
/// sum of a `bits`-wide chunk below `2^64`; `None` if not even [`MIN_ORDER`]
/// does.
const fn largest_safe_order(bits: u32) -> Option<u32> {
    let mut best = None;
    let mut o = MIN_ORDER;
    while o <= MAX_ORDER {
        if max_sum(bits, 1u64 << o).is_some() {
            best = Some(o);
        }
        o += 1;
    }
    best
}

/// Split [`ID_BITS`] into `values` chunks of near-equal width (the wider
/// ones first), for digit base `p + 1`.
const fn make_chunks(values: usize, p: u64) -> [Chunk; MAX_VALUES] {
    let mut chunks = [Chunk::EMPTY; MAX_VALUES];
    let v = values as u32;
    let narrow = ID_BITS / v;
    let wide_count = ID_BITS % v;
    let mut shift = 0;
    let mut j = 0;
    while j < values {
        let bits = if (j as u32) < wide_count {
            narrow + 1
        } else {
            narrow
        };
        let max_subid = match subid_of((1u64 << bits) - 1, p) {
            Some(m) => m,
            None => panic!("sub-ID of a full chunk overflows 64 bits"),
        };
        chunks[j] = Chunk {
            shift,
            bits,
            max_subid,
        };
        shift += bits;
        j += 1;
    }
    assert!(shift == ID_BITS);
    chunks
}

/// Number of classes [`build_classes`] produces.
const fn count_classes() -> usize {
    let mut n = 0;
    let mut covered = MIN_ORDER - 1;
    let mut values = 1;
    while values <= MAX_VALUES {
        if let Some(o) = largest_safe_order(widest_chunk(values)) {
            if o > covered {
                n += 1;
                covered = o;
            }
        }
        values += 1;
    }
    n
}

/// Number of value-count classes.
pub const NR_CLASSES: usize = count_classes();

/// Build the classes: for each value count, the orders not served by fewer
/// values whose sums stay below `2^64`. Fails the build if the orders
/// `MIN_ORDER..=MAX_ORDER` are not all covered, or if any class could
/// overflow.
const fn build_classes() -> [Class; NR_CLASSES] {
    let empty = Class {
        values: 0,
        min_order: 0,
        max_order: 0,
        p: 0,
        max_bits: 0,
        chunks: [Chunk::EMPTY; MAX_VALUES],
        max_sum: 0,
    };
    let mut classes = [empty; NR_CLASSES];
    let mut n = 0;
    let mut covered = MIN_ORDER - 1;
    let mut values = 1;
    while values <= MAX_VALUES {
        let bits = widest_chunk(values);
        if let Some(o) = largest_safe_order(bits) {
            if o > covered {
                let p = 1u64 << o;
                let max_sum = match max_sum(bits, p) {
                    Some(s) => s,
                    None => panic!("class overflows 64 bits"),
                };
                classes[n] = Class {
                    values,
                    min_order: covered + 1,
                    max_order: o,
                    p,
                    max_bits: bits,
                    chunks: make_chunks(values, p),
                    max_sum,
                };
                n += 1;
                covered = o;
            }
        }
        values += 1;
    }
    assert!(
        covered == MAX_ORDER,
        "MAX_VALUES values cannot serve MAX_ORDER"
    );
    classes
}

/// All classes, ordered by value count; together they serve exactly the
/// orders `MIN_ORDER..=MAX_ORDER`.
pub const CLASSES: [Class; NR_CLASSES] = build_classes();

/// Total number of sub-IDs an mm caches: the sum of all classes' values.
pub const NR_SUBIDS: usize = {
    let mut n = 0;
    let mut i = 0;
    while i < NR_CLASSES {
        n += CLASSES[i].values;
        i += 1;
    }
    n
};

// The proof's precondition, checked for every class and every chunk at
// compile time: the largest possible sum, P * max_subid, is below 2^64.
const _: () = {
    let mut i = 0;
    while i < NR_CLASSES {
        let c = &CLASSES[i];
        assert!(c.p == 1u64 << c.max_order);
        let mut j = 0;
        while j < c.values {
            let ch = &c.chunks[j];
            assert!(c.p.checked_mul(ch.max_subid).is_some());
            assert!(ch.bits <= c.max_bits);
            j += 1;
        }
        assert!(c.values <= MAX_VALUES);
        i += 1;
    }
};

/// Index into [`CLASSES`] for each order (unused for orders below
/// [`MIN_ORDER`]).
const ORDER_CLASS: [u8; MAX_ORDER as usize + 1] = {
    let mut t = [0u8; MAX_ORDER as usize + 1];
    let mut i = 0;
    while i < NR_CLASSES {
        let mut o = CLASSES[i].min_order;
        while o <= CLASSES[i].max_order {
            t[o as usize] = i as u8;
            o += 1;
        }
        i += 1;
    }
    t
};

/// Offset of each class's first sub-ID within [`SubIds`].
const CLASS_OFFSET: [usize; NR_CLASSES] = {
    let mut t = [0usize; NR_CLASSES];
    let mut i = 1;
    while i < NR_CLASSES {
        t[i] = t[i - 1] + CLASSES[i - 1].values;
        i += 1;
    }
    t
};

/// For each order: where its sub-IDs start in [`SubIds::as_slice`] and how
/// many there are (`(0, 0)` below [`MIN_ORDER`]). Computed at compile time
/// so the map/unmap paths find both with one lookup.
pub const ORDER_SUBIDS: [(usize, usize); MAX_ORDER as usize + 1] = {
    let mut t = [(0usize, 0usize); MAX_ORDER as usize + 1];
    let mut o = MIN_ORDER as usize;
    while o <= MAX_ORDER as usize {
        let c = ORDER_CLASS[o] as usize;
        t[o] = (CLASS_OFFSET[c], CLASSES[c].values);
        assert!(CLASS_OFFSET[c] + CLASSES[c].values <= NR_SUBIDS);
        o += 1;
    }
    t
};

/// [`ORDER_SUBIDS`] in two byte tables, the form the map/unmap paths read
/// (`FolioRmap::new`): per order the offset of its first sub-ID and the
/// number of values. Bytes index without a scaled multiply, and both fit:
/// checked here.
pub const ORDER_SUBID_OFFSET: [u8; MAX_ORDER as usize + 1] = order_bytes(0);
/// See [`ORDER_SUBID_OFFSET`].
pub const ORDER_VALUES: [u8; MAX_ORDER as usize + 1] = order_bytes(1);

const fn order_bytes(which: usize) -> [u8; MAX_ORDER as usize + 1] {
    let mut t = [0u8; MAX_ORDER as usize + 1];
    let mut o = 0;
    while o <= MAX_ORDER as usize {
        let v = if which == 0 {
            ORDER_SUBIDS[o].0
        } else {
            ORDER_SUBIDS[o].1
        };
        assert!(v <= u8::MAX as usize);
        t[o] = v as u8;
        o += 1;
    }
    t
}

/// The class serving folios of `order`.
pub fn class_for_order(order: u32) -> Result<&'static Class, SubIdError> {
    if !(MIN_ORDER..=MAX_ORDER).contains(&order) {
        return Err(SubIdError::OrderOutOfRange);
    }
    Ok(&CLASSES[ORDER_CLASS[order as usize] as usize])
}

/// Compile-time table of all sub-IDs of a chunk up to `N` values wide.
const fn build_table<const N: usize>(p: u64) -> [u64; N] {
    let mut t = [0u64; N];
    let mut c = 0;
    while c < N {
        t[c] = match subid_of(c as u64, p) {
            Some(s) => s,
            None => panic!("table entry overflows"),
        };
        c += 1;
    }
    t
}

/// Index of the `values`-value class; fails the build if there is none.
const fn class_index(values: usize) -> usize {
    let mut i = 0;
    while i < NR_CLASSES {
        if CLASSES[i].values == values {
            return i;
        }
        i += 1;
    }
    panic!("no class with that many values")
}

/// The compile-time table of the class with `values` values: one entry per
/// chunk value, `2^max_bits` entries (the size is computed, not written).
macro_rules! narrow_table {
    ($values:expr) => {{
        const I: usize = class_index($values);
        const _: () = assert!(CLASSES[I].is_narrow());
        static T: [u64; 1 << CLASSES[I].max_bits] =
            build_table::<{ 1 << CLASSES[I].max_bits }>(CLASSES[I].p);
        &T
    }};
}

/// The compile-time table of each class, indexed by chunk value; empty for
/// the class with a wide chunk (its sub-IDs are computed per mm).
static TABLES: [&[u64]; NR_CLASSES] = {
    const _: () = assert!(NR_CLASSES == 6 && !CLASSES[0].is_narrow());
    [
        &[],
        narrow_table!(2),
        narrow_table!(3),
        narrow_table!(4),
        narrow_table!(5),
        narrow_table!(6),
    ]
};

/// Sub-ID of `chunk` of `id` in `class`, from the table where there is one,
/// computed by a loop over the chunk's bits otherwise. The map/unmap paths
/// never get here: they read the per-mm [`SubIds`] cache, built once.
fn chunk_subid(class: &Class, table: &[u64], chunk: &Chunk, id: u32) -> u64 {
    let c = chunk.value_of(id);
    match table.get(c as usize) {
        Some(&s) => s,
        // The class constants guarantee this fits (checked at compile time),
        // so the fallback of 0 is unreachable.
        None => subid_of(u64::from(c), class.p).unwrap_or(0),
    }
}

/// Number of folio orders an mm's live counts cover: `0..=MAX_ORDER`.
pub const NR_ORDERS: usize = MAX_ORDER as usize + 1;

/// All sub-IDs of one mm, for every class, computed once when the mm gets
/// its rmap ID; the map/unmap paths only index into it.
///
/// Beside them, per folio order, the *live count*: how many of the class's
/// sub-IDs an update has to add, i.e. up to and including the last one that
/// is not 0. A sub-ID is 0 exactly when its chunk of the ID is 0, and the
/// chunks go from the low ID bits to the high ones, so the small IDs the
/// lowest-free allocator hands out leave the high values of every class
/// alone: adding `k * 0` changes nothing, and a writer skips those values
/// (`FolioRmap::add`). Readers still compare every value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SubIds {
    id: u32,
    vals: [u64; NR_SUBIDS],
    live: [u8; NR_ORDERS],
}

impl SubIds {
    /// Sub-IDs of rmap ID `id`.
    pub fn new(id: u32) -> Result<Self, SubIdError> {
        if id > MAX_ID {
            return Err(SubIdError::IdOutOfRange);
        }
        let mut vals = [0u64; NR_SUBIDS];
        for (i, class) in CLASSES.iter().enumerate() {
            let table = TABLES[i];
            for (j, chunk) in class.chunks().iter().enumerate() {
                vals[CLASS_OFFSET[i] + j] = chunk_subid(class, table, chunk, id);
            }
        }
        let mut live = [0u8; NR_ORDERS];
        for (order, out) in live.iter_mut().enumerate() {
            let (off, n) = ORDER_SUBIDS[order];
            // At most MAX_VALUES (6): the cast cannot truncate.
            *out = vals[off..off + n]
                .iter()
                .rposition(|&s| s != 0)
                .map_or(0, |last| last + 1) as u8;
        }
        Ok(SubIds { id, vals, live })
    }

    /// The rmap ID these sub-IDs belong to.
    pub fn id(&self) -> u32 {
        self.id
    }

    /// Per folio order, how many leading sub-IDs of its class an update
    /// adds (the rest are 0); 0 for orders without values and for
    /// [`DUMMY_ID`].
    pub fn live(&self) -> &[u8; NR_ORDERS] {
        &self.live
    }

    /// The sub-IDs for a folio of `order`, one per rmap value.
    pub fn for_order(&self, order: u32) -> Result<&[u64], SubIdError> {
        let class = class_for_order(order)?;
        let i = ORDER_CLASS[order as usize] as usize;
        Ok(&self.vals[CLASS_OFFSET[i]..CLASS_OFFSET[i] + class.values])
    }

    /// All cached sub-IDs, class after class (the layout C caches in the mm).
    pub fn as_slice(&self) -> &[u64] {
        &self.vals
    }

    /// [`Self::as_slice`] as the array it is.
    pub fn as_array(&self) -> &[u64; NR_SUBIDS] {
        &self.vals
    }
}

/// A table entry or class property that [`verify_tables`] found wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TableError {
    /// Index of the class in [`CLASSES`].
    pub class: usize,
    /// Chunk value whose table entry is wrong, or `None` for a class
    /// property (`max_sum`, chunk layout).
    pub entry: Option<usize>,
}

/// Re-derive every compile-time table entry and class property at run time
/// (the kernel's boot-time verification): each entry must be the chunk's
/// digits in base `P + 1`, each class's `max_sum` must be `P` times its
/// largest sub-ID without overflow, and the chunks must cover the ID bits
/// exactly once. Returns the number of table entries checked.
pub fn verify_tables() -> Result<usize, TableError> {
    let mut checked = 0;
    for (i, class) in CLASSES.iter().enumerate() {
        let bad = TableError {
            class: i,
            entry: None,
        };
        let mut covered = 0u32;
        for chunk in class.chunks() {
            let mask = ((1u32 << chunk.bits) - 1) << chunk.shift;
            if covered & mask != 0
                || subid_of((1 << chunk.bits) - 1, class.p) != Some(chunk.max_subid)
            {
                return Err(bad);
            }
            covered |= mask;
        }
        let widest = class
            .chunks()
            .iter()
            .map(|c| c.max_subid)
            .max()
            .unwrap_or(0);
        if covered != MAX_ID || class.p.checked_mul(widest) != Some(class.max_sum) {
            return Err(bad);
        }
        for (c, &entry) in TABLES[i].iter().enumerate() {
            if subid_of(c as u64, class.p) != Some(entry) {
                return Err(TableError {
                    class: i,
                    entry: Some(c),
                });
            }
            checked += 1;
        }
    }
    Ok(checked)
}

/// Offset of the sub-IDs for folios of `order` within [`SubIds::as_slice`].
pub fn subid_offset(order: u32) -> Result<usize, SubIdError> {
    class_for_order(order)?;
    Ok(CLASS_OFFSET[ORDER_CLASS[order as usize] as usize])
}

/// Sub-ID `value` of rmap ID `id` for a folio of `order`.
pub fn subid(id: u32, order: u32, value: usize) -> Result<u64, SubIdError> {
    if id > MAX_ID {
        return Err(SubIdError::IdOutOfRange);
    }
    let class = class_for_order(order)?;
    let chunk = class
        .chunks()
        .get(value)
        .ok_or(SubIdError::ValueOutOfRange)?;
    let table = TABLES[ORDER_CLASS[order as usize] as usize];
    Ok(chunk_subid(class, table, chunk, id))
}

/// The reader's test: do `values` say that all `mapcount` mappings belong to
/// the mm with sub-IDs `subids`?
///
/// Exact (iff) when `mapcount <= P` of the class and the values were built
/// from that class's sub-IDs. Wrapping arithmetic is what the kernel does;
/// the class bounds make wrapping impossible. A `mapcount` of 0 or a length
/// mismatch answers `false` ("maybe shared").
pub fn values_match(mapcount: u64, values: &[u64], subids: &[u64]) -> bool {
    mapcount != 0
        && values.len() == subids.len()
        && values
            .iter()
            .zip(subids)
            .all(|(&v, &s)| v == s.wrapping_mul(mapcount))
}

/// The mm-free reader's test: do `values` say that all `mapcount` mappings
/// of a folio of `class` belong to one mm with a real ID (whichever)?
///
/// This is the question of Linux 7.3's `folio_maybe_mapped_shared(folio)`,
/// which names no mm. With `n = mapcount` and `P = class.p`, it answers
/// `true` iff
///
/// - `1 <= n <= P`,
/// - `values` has the class's value count, and value `j` is a string of at
///   most `w_j` digits in base `P + 1` (`w_j` = bits of chunk `j`), i.e.
///   `value < (P + 1)^w_j`,
/// - every one of those digits is `0` or `n`, and
/// - at least one digit is `n`.
///
/// # Proof
///
/// Let the `n` mappings (a `k`-page mapping counting `k` times, as in
/// [`values_match`]) belong to mms with IDs `m_1 .. m_n`, and the values be
/// their sums `v_j = sum_k subid_j(m_k)` (a consistent snapshot). As in the
/// module's argument, with `n <= P` digit `i` of `v_j` is
/// `C_ij = #{k : bit i of chunk j of m_k is set}`, in `0 ..= n`, with no
/// carries, and the base-`(P + 1)` representation of `v_j` is unique.
///
/// (a) *One mm with a real ID owns all `n` mappings:* then every `C_ij` is
/// `n` (the bit is set in the ID) or `0` (it is not), and since a real ID is
/// not 0, some bit is set: some digit is `n`. So the answer is `true`.
///
/// (b) *Conversely,* let every digit be `0` or `n` and one be `n`. A digit
/// `C_ij = n` says all `n` mappings have bit `i` of chunk `j` set, a digit
/// `C_ij = 0` that none has: every bit of every chunk, hence every bit of
/// the ID (the chunks partition the [`ID_BITS`] bits), is the same in all
/// `n` mappings. So all mappings carry one ID `m`, and `m != 0` because some
/// digit is `n`. A real ID belongs to one mm at a time among the mms that
/// still have mappings: an mm gets its ID in `mm_init()` and keeps it for
/// life, and frees it only in `__mmdrop()`, after `exit_mmap()` has unmapped
/// everything, so a freed (and reallocated) ID no longer has mappings
/// counted in any folio. Hence exactly one mm maps the folio.
///
/// (c) *All digits 0:* every mapping has every ID bit clear, i.e. was made
/// by an mm with the [`DUMMY_ID`], whose sub-IDs are all 0. Several dummy
/// mms cannot be told from one, so the answer is `false` ("maybe shared",
/// the conservative side).
///
/// (d) *Anything else is `false`:* `n = 0` (nothing mapped: no owner);
/// `n > P` (the digits may carry, and more mappings than the largest folio
/// has pages is shared anyway; no digit, being at most `P`, could equal
/// `n` either, so the early return only saves the divisions); a digit that
/// is neither `0` nor `n` (some mappings have a bit the others lack, or a
/// corrupted or racing value: a digit above `P` is never `n`); a value
/// with anything above its top digit
/// (`value >= (P + 1)^w_j`: no `n <= P` mappings produce it); a slice of
/// the wrong length.
///
/// An mm with a small ID adds nothing to the values above its live count
/// ([`SubIds::live`]); those values, 0 in its digits, are exactly what (a)
/// expects of an ID whose high chunks are 0.
///
/// # Cost
///
/// No allocation, no panic, for any input (the values may be read while
/// another CPU writes them). The digits of all values together are the
/// [`ID_BITS`] ID bits, so at most 24 division/remainder pairs by `P + 1`
/// (not a power of two: `P` is), fewer when high digits are 0; a value of
/// 0 costs none.
pub fn values_single_owner(class: &Class, mapcount: u64, values: &[u64]) -> bool {
    let n = mapcount;
    if n == 0 || n > class.p {
        return false;
    }
    let (Some(base), Some(chunks)) = (
        class.p.checked_add(1).and_then(NonZeroU64::new),
        class.chunks.get(..class.values),
    ) else {
        return false;
    };
    if values.len() != chunks.len() {
        return false;
    }
    let mut saw_n = false;
    for (&value, chunk) in values.iter().zip(chunks) {
        let mut rest = value;
        // At most the chunk's width of digits (no counter that could
        // overflow: the loop bound is the width itself); a value of 0
        // costs none.
        for _ in 0..chunk.bits {
            if rest == 0 {
                break;
            }
            let digit = rest % base;
            rest /= base;
            if digit == n {
                saw_n = true;
            } else if digit != 0 {
                return false;
            }
        }
        if rest != 0 {
            // Something above the top digit: not a sum of n <= P sub-IDs
            // of this chunk.
            return false;
        }
    }
    saw_n
}
