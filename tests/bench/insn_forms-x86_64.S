/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The x86_64 instruction forms the profiling plugin must count as atomic
 * read-modify-writes (counted) and must not (not_counted), checked by
 * tests/tools/test_profile_plugin.py through tests/bench/insn_class.h.
 * Never executed.
 */
	.text
	.globl counted
counted:
	lock addl $1, (%rdi)
	lock addq %rax, 8(%rdi,%rcx,8)
	lock incl (%rdi)
	lock decq -16(%rsp)
	lock xaddl %eax, (%rdi)
	lock xaddq %rax, (%r12)
	lock cmpxchgl %ecx, (%rdi)
	lock cmpxchgq %rcx, (%r15)
	lock cmpxchg8b (%rdi)
	lock cmpxchg16b (%rdi)
	lock btsq $3, (%rdi)
	lock orb $1, (%rdi)
	lock andw $1, (%rdi)
	lock negl (%rdi)
	lock notq (%rdi)
	lock subl %eax, %fs:0x10
	xchgl %eax, (%rdi)
	xchgq %rax, (%rdi)
	xchgb %al, (%rdi)
	xchgq %r9, 8(%rsp)
	xchgw %ax, (%rdi)
	.globl not_counted
not_counted:
	xchgq %rax, %rcx
	xchgl %eax, %edx
	xchgq %r8, %r9
	xchgb %al, %bl
	cmpxchgl %ecx, (%rdi)
	xaddq %rax, (%rdi)
	addl $1, (%rdi)
	movq (%rdi), %rax
	movq %rax, (%rdi)
	rep movsb
	mfence
	nopl 0x524d4231(%rax,%rax,1)
	jbe 1f
1:	movb $0xf0, %al
	movl $0x87, (%rdi)
	ret
