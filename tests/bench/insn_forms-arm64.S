/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The arm64 instruction forms the profiling plugin must count as atomic
 * read-modify-writes (counted), must not (not_counted), and must see as
 * the load half of an exclusive pair (excl_load), checked by
 * tests/tools/test_profile_plugin.py through tests/bench/insn_class.h.
 * Never executed. Assembled with -march=armv8.1-a.
 */
	.text
	.globl counted
counted:
	ldadd x1, x2, [x0]
	ldadda w1, w2, [x0]
	ldaddal x1, x2, [x0]
	ldaddlb w1, w2, [x0]
	ldclr x1, x2, [x0]
	ldeorh w1, w2, [x0]
	ldset x1, x2, [x0]
	ldsmax x1, x2, [x0]
	ldsmin w1, w2, [x0]
	ldumax x1, x2, [x0]
	ldumin x1, x2, [x0]
	stadd x1, [x0]
	stclrl w1, [x0]
	swp x1, x2, [x0]
	swpal w1, w2, [x0]
	swpb w1, w2, [x0]
	cas x1, x2, [x0]
	casal w1, w2, [x0]
	casb w1, w2, [x0]
	cash w1, w2, [x0]
	casp x2, x3, x4, x5, [x0]
	caspal w2, w3, w4, w5, [x0]
	stxr w3, x1, [x0]
	stlxr w3, w1, [x0]
	stxrb w3, w1, [x0]
	stxp w3, x1, x2, [x0]
	stlxp w3, w1, w2, [x0]
	.globl excl_load
excl_load:
	ldxr x1, [x0]
	ldaxr w1, [x0]
	ldxrb w1, [x0]
	ldxp x1, x2, [x0]
	ldaxp w1, w2, [x0]
	.globl not_counted
not_counted:
	ldar x1, [x0]
	stlr x1, [x0]
	ldarb w1, [x0]
	stlrh w1, [x0]
	ldr x1, [x0]
	str x1, [x0]
	ldp x1, x2, [x0]
	stp x1, x2, [x0]
	add x1, x2, x3
	movz xzr, #0x4231
	clrex
	dmb ish
	prfm pldl1keep, [x0]
	ret
