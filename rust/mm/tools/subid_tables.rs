// SPDX-License-Identifier: GPL-2.0

//! Print the sub-ID classes and tables, as the kernel build computes them.
//!
//! `subid-tables` prints JSON (`make subid-tables`); `subid-tables
//! --markdown` prints the capacity table used in `docs/subid.md`. Every
//! number comes from the same `const fn`s and tables that are compiled into
//! vmlinux; sub-IDs are read through the runtime lookup `subid::subid`.

use rust_mm_core::subid::{self, Class, CLASSES, ID_BITS, NARROW_BITS};
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

fn main() {
    match std::env::args().nth(1).as_deref() {
        None | Some("--json") => print!("{}", json()),
        Some("--markdown") => print!("{}", markdown()),
        Some(other) => {
            eprintln!("subid-tables: unknown option {other} (use --json or --markdown)");
            std::process::exit(2);
        }
    }
}
