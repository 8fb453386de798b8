/* SPDX-License-Identifier: GPL-2.0 */
/*
 * insn_class.h: which guest instructions are atomic read-modify-writes,
 * for the profiling plugin (tests/bench/insn_profile.c). No QEMU header:
 * it decodes the instruction's bytes, and tests/tools/test_profile_plugin.py
 * checks it on an assembled listing of the forms it must and must not
 * count (tests/bench/insn_forms-*.S).
 *
 * x86_64: every instruction with a LOCK prefix (the ISA allows it only on
 * read-modify-writes of memory), and XCHG with a memory operand (locked
 * without the prefix). Not counted: XCHG between registers, CMPXCHG or
 * XADD without LOCK (not atomic to other CPUs), plain loads and stores.
 *
 * arm64: the LSE atomics (LDADD, LDCLR, LDEOR, LDSET, LD{S,U}{MAX,MIN}
 * and their ST* aliases, SWP, CAS, CASP, every size and ordering), and
 * each store-exclusive (STXR, STLXR, STXP, STLXP): a load/store-exclusive
 * pair is one RMW attempt, counted at its store. Not counted: the
 * load-exclusive itself, load-acquire/store-release (LDAR, STLR, LDAPR).
 */
#ifndef RUST_MM_INSN_CLASS_H
#define RUST_MM_INSN_CLASS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum insn_class {
	INSN_PLAIN,		/* not an atomic RMW */
	INSN_ATOMIC,		/* one atomic RMW per execution */
	INSN_EXCL_LOAD,		/* arm64 load-exclusive: half of a pair, not counted */
};

/* x86_64: the legacy prefixes, then REX, then the opcode and ModRM. */
static inline enum insn_class x86_insn_class(const uint8_t *d, size_t n)
{
	bool lock = false;
	size_t i = 0;

	for (; i < n; i++) {
		uint8_t b = d[i];

		if (b == 0xf0)
			lock = true;
		else if (!(b == 0xf2 || b == 0xf3 || b == 0x2e || b == 0x36 || b == 0x3e ||
			   b == 0x26 || b == 0x64 || b == 0x65 || b == 0x66 || b == 0x67))
			break;
	}
	if (lock)
		return INSN_ATOMIC;
	if (i < n && (d[i] & 0xf0) == 0x40)	/* REX */
		i++;
	/* XCHG r/m8, r8 (0x86) and r/m, r (0x87): atomic when r/m is memory. */
	if (i + 1 < n && (d[i] == 0x86 || d[i] == 0x87) && (d[i + 1] >> 6) != 3)
		return INSN_ATOMIC;
	return INSN_PLAIN;
}

/* arm64: one 32-bit instruction word. */
static inline enum insn_class a64_insn_class(uint32_t w)
{
	/* Load/store exclusive, ordered and compare-and-swap: bits 29..24 = 001000. */
	if ((w & 0x3f000000u) == 0x08000000u) {
		bool o2 = w & (1u << 23), load = w & (1u << 22), o1 = w & (1u << 21);

		if (o2 && o1)			/* CAS, CASA, CASL, CASAL (every size) */
			return INSN_ATOMIC;
		if (o2)				/* LDAR, STLR, LDLAR, STLLR */
			return INSN_PLAIN;
		if (o1 && !(w & (1u << 31)))	/* CASP and its orderings */
			return INSN_ATOMIC;
		/* LDXR/STXR (o1 = 0), LDXP/STXP (o1 = 1, bit 31 set). */
		return load ? INSN_EXCL_LOAD : INSN_ATOMIC;
	}
	/* Atomic memory operations: size 111 0 00 A R 1 Rs o3 opc 00 Rn Rt. */
	if ((w & 0x3f200c00u) == 0x38200000u) {
		uint32_t o3_opc = (w >> 12) & 0xf;

		if (o3_opc == 0xc)		/* LDAPR: a load-acquire */
			return INSN_PLAIN;
		if (o3_opc <= 0x8)		/* LDADD .. LDUMIN, SWP */
			return INSN_ATOMIC;
		return INSN_PLAIN;		/* unallocated */
	}
	return INSN_PLAIN;
}

#endif /* RUST_MM_INSN_CLASS_H */
