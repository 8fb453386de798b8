// SPDX-License-Identifier: GPL-2.0

//! Print the sub-ID classes and tables, as the kernel build computes them.
//!
//! `subid-tables` prints JSON (`make subid-tables SUBID_FORMAT=json`);
//! `subid-tables --markdown` prints the capacity table used in
//! `docs/subid.md`; `subid-tables --targets` (the default of `make
//! subid-tables`) says, per arch and page size we build, which folio
//! orders map to which class and in which tail page their last value
//! lies. Every number comes from the same `const fn`s and tables that are
//! compiled into vmlinux; sub-IDs are read through the runtime lookup
//! `subid::subid`.

use rust_mm_core::folio_rmap::Layout;

/// Linux 6.12's placement of the words (rust/mm/folio_rmap.rs: the page
/// pair's offsets matter not here, only which page holds a value).
const LINUX_6_12: Layout = Layout {
    page_size: 64,
    seq_offset: 64 + 40,
    pair_offset: 32,
    first_value_word: 4,
    track_min_order: 2,
};
use rust_mm_core::rmap_id::subid::{self, Class, CLASSES, ID_BITS, MAX_ORDER, NARROW_BITS};
use std::fmt::Write as _;

/// Chunk values listed for a chunk: all of them for narrow chunks, else the
/// first and last 2048.
fn listed_values(bits: u32) -> Vec<u32> {
    let n = 1u32 << bits;
    if bits <= NARROW_BITS {
        (0..n).collect()
    } else {
        (0..2048).chain(n - 2048..n).collect()
    }
}

fn json() -> String {
    let mut out = String::new();
    write!(out, "{{\"id_bits\": {ID_BITS}, \"classes\": [").unwrap();
    for (ci, class) in CLASSES.iter().enumerate() {
        if ci > 0 {
            out.push_str(", ");
        }
        write!(
            out,
            "{{\"values\": {}, \"min_order\": {}, \"max_order\": {}, \"p\": {}, \"chunks\": [",
            class.values, class.min_order, class.max_order, class.p
        )
        .unwrap();
        for (j, chunk) in class.chunks().iter().enumerate() {
            if j > 0 {
                out.push_str(", ");
            }
            write!(
                out,
                "{{\"shift\": {}, \"bits\": {}, \"max_subid\": {}, \"subids\": [",
                chunk.shift, chunk.bits, chunk.max_subid
            )
            .unwrap();
            for (k, c) in listed_values(chunk.bits).into_iter().enumerate() {
                let id = c << chunk.shift;
                let s = subid::subid(id, class.max_order, j).expect("order and id are in range");
                if k > 0 {
                    out.push_str(", ");
                }
                write!(out, "[{c}, {s}]").unwrap();
            }
            out.push_str("]}");
        }
        out.push_str("]}");
    }
    out.push_str("]}\n");
    out
}

fn chunk_bits(class: &Class) -> String {
    let bits: Vec<String> = class.chunks().iter().map(|c| c.bits.to_string()).collect();
    bits.join("+")
}

fn markdown() -> String {
    let mut out = String::new();
    out.push_str(
        "| values | orders | P (pages) | bits per value | digit base | largest sum P*max_subid | < 2^64 by | table |\n",
    );
    out.push_str("|---|---|---|---|---|---|---|---|\n");
    for class in CLASSES.iter() {
        let headroom = (u64::MAX as f64 / class.max_sum as f64).log2();
        let table = if class.is_narrow() {
            format!("compile time, {} entries", 1u32 << class.max_bits)
        } else {
            "computed per mm".to_string()
        };
        writeln!(
            out,
            "| {} | {}..={} | {} | {} | {} | {} | {:.2} bits | {} |",
            class.values,
            class.min_order,
            class.max_order,
            class.p,
            chunk_bits(class),
            class.p + 1,
            class.max_sum,
            headroom,
            table
        )
        .unwrap();
    }
    out
}

/// A kernel we build: arch, base page size, PMD THP order and the buddy
/// allocator's largest order (`MAX_PAGE_ORDER`, arm64's
/// `ARCH_FORCE_MAX_ORDER` default for the granule).
struct Target {
    name: &'static str,
    page_shift: u32,
    pmd_order: u32,
    max_page_order: u32,
    /// Order of one contiguous-PTE block (arm64 contpte), if any.
    cont_order: Option<u32>,
}

const TARGETS: [Target; 4] = [
    Target {
        name: "x86_64 4K",
        page_shift: 12,
        pmd_order: 9,
        max_page_order: 10,
        cont_order: None,
    },
    Target {
        name: "arm64 4K",
        page_shift: 12,
        pmd_order: 9,
        max_page_order: 10,
        cont_order: Some(4),
    },
    Target {
        name: "arm64 16K",
        page_shift: 14,
        pmd_order: 11,
        max_page_order: 11,
        cont_order: Some(7),
    },
    Target {
        name: "arm64 64K",
        page_shift: 16,
        pmd_order: 13,
        max_page_order: 13,
        cont_order: Some(5),
    },
];

// Every folio order any target can allocate has a class: the build of this
// tool fails otherwise (the kernel build checks its own config the same
// way through `MAX_PAGE_ORDER <= RMAP_ID_MAX_ORDER`).
const _: () = {
    let mut i = 0;
    while i < TARGETS.len() {
        assert!(
            TARGETS[i].max_page_order <= MAX_ORDER,
            "a target has orders without a class"
        );
        assert!(TARGETS[i].pmd_order <= TARGETS[i].max_page_order);
        i += 1;
    }
};

fn targets() -> String {
    let mut out = String::new();
    for t in TARGETS.iter() {
        writeln!(
            out,
            "{} (PMD THP order {}, {} KiB; MAX_PAGE_ORDER {}):",
            t.name,
            t.pmd_order,
            1u64 << (t.pmd_order + t.page_shift - 10),
            t.max_page_order
        )
        .unwrap();
        for order in LINUX_6_12.track_min_order..=t.max_page_order {
            let class =
                subid::class_for_order(order).expect("the const check above covers every order");
            let last = LINUX_6_12.last_value_page(class.values);
            let what = if order == t.pmd_order {
                " (PMD)"
            } else if Some(order) == t.cont_order {
                " (contpte block)"
            } else {
                ""
            };
            writeln!(
                out,
                "  order {order:2}{what:<16} {:>9} KiB  class {} values x {} bits  last value in page {last} of {}",
                1u64 << (order + t.page_shift - 10),
                class.values,
                chunk_bits(class),
                1u64 << order
            )
            .unwrap();
        }
    }
    out
}

fn main() {
    match std::env::args().nth(1).as_deref() {
        None | Some("--json") => print!("{}", json()),
        Some("--markdown") => print!("{}", markdown()),
        Some("--targets") => print!("{}", targets()),
        Some(other) => {
            eprintln!("subid-tables: unknown option {other} (use --json, --markdown or --targets)");
            std::process::exit(2);
        }
    }
}
