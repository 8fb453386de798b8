// SPDX-License-Identifier: GPL-2.0

//! The multiset of rmap IDs on which the original series' 3-value class
//! collides (shared by the sub-ID and folio tests).

/// The collision of the original series' 3-value class (orders 6..9, P =
/// 512, 8 ID bits per value): with digit base 513, eight digits reach
/// 513^8 > 2^64. The digit offsets d_i = 2 * (-1)^i * C(7, i) give
/// sum(d_i * 513^i) = 2 * (1 - 513)^7 = -2^64 == 0 (mod 2^64). So 70
/// mappings, most of them by other mms, produce exactly the values of 70
/// mappings by one mm.
pub struct Collision {
    /// The mm that believes it maps the folio exclusively.
    pub owner: u32,
    /// Every mapping's rmap ID (70 of them).
    pub mappings: Vec<u32>,
}

pub fn original_collision() -> Collision {
    const N: i64 = 70;
    const BINOM7: [i64; 8] = [1, 7, 21, 35, 35, 21, 7, 1];
    let d: Vec<i64> = (0..8)
        .map(|i| 2 * BINOM7[i] * if i % 2 == 0 { 1 } else { -1 })
        .collect();
    // The owner's top chunk has bit i set where d_i < 0; the number of
    // mappings with bit i set is then d_i + N * bit_i, within 0..=N.
    let owner_chunk: u32 = (0..8).filter(|&i| d[i] < 0).map(|i| 1 << i).sum();
    let counts: Vec<i64> = (0..8)
        .map(|i| d[i] + N * i64::from((owner_chunk >> i) & 1))
        .collect();
    assert!(counts.iter().all(|&c| (0..=N).contains(&c)));
    let low = 0x0001; // bits 0..16 equal in every mapping
    let mappings = (0..N)
        .map(|k| {
            let chunk: u32 = (0..8).filter(|&i| k < counts[i]).map(|i| 1 << i).sum();
            (chunk << 16) | low
        })
        .collect();
    Collision {
        owner: (owner_chunk << 16) | low,
        mappings,
    }
}
