// SPDX-License-Identifier: GPL-2.0
/*
 * insn_profile: a QEMU TCG plugin that counts the guest instructions
 * executed inside the benchmark's measured windows, per translation block,
 * for scripts/bench/profile.sh. A window opens when any vCPU executes the marker
 * "nopl 0x524d4231(%rax,%rax,1)" (x86_64) or "movz xzr, #0x4231" (arm64)
 * and closes at "nopl 0x524d4230(...)" or "movz xzr, #0x4230"
 * (tests/bench/rmap_bench.c emits them around the action of the case
 * named by RUSTMM_BENCH_PROFILE); while it is open, every vCPU's blocks
 * count, as under -icount, where the guest clock counts every vCPU.
 *
 * Written against the plugin ABI of QEMU 7.2 (API version 1, Debian 12).
 * Only the handful of entry points used here are declared, with the
 * signatures of that version: no QEMU header is needed to build it.
 *
 * Output (file given as out=PATH): "windows N", then one line
 * "VADDR NR_INSNS EXECUTIONS" per block that ran inside a window.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef uint64_t qemu_plugin_id_t;
struct qemu_plugin_tb;
struct qemu_plugin_insn;
typedef struct {
	const char *target_name;
	struct {
		int min;
		int cur;
	} version;
	bool system_emulation;
} qemu_info_t;
typedef void (*tb_trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
typedef void (*vcpu_udata_cb_t)(unsigned int vcpu_index, void *userdata);
typedef void (*udata_cb_t)(qemu_plugin_id_t id, void *userdata);
enum { QEMU_PLUGIN_CB_NO_REGS };

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, tb_trans_cb_t cb);
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *tb, vcpu_udata_cb_t cb,
					  int flags, void *userdata);
void qemu_plugin_register_vcpu_insn_exec_cb(struct qemu_plugin_insn *insn,
					    vcpu_udata_cb_t cb, int flags, void *userdata);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, udata_cb_t cb, void *userdata);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb, size_t idx);
const void *qemu_plugin_insn_data(const struct qemu_plugin_insn *insn);
size_t qemu_plugin_insn_size(const struct qemu_plugin_insn *insn);

__attribute__((visibility("default"))) int qemu_plugin_version = 1;

/* One translation of a block; a block translated again gets another. */
struct block {
	uint64_t vaddr;
	uint64_t executions;	/* inside windows */
	uint32_t insns;
	struct block *next;
};

static struct block *blocks;
static pthread_mutex_t blocks_lock = PTHREAD_MUTEX_INITIALIZER;
static int open_window;
static uint64_t windows;
static const char *out_path;
static bool arm64;	/* the guest's instruction set: which marker */

/* x86_64: nopl disp32(%rax,%rax,1), the displacement says which. */
static const unsigned char marker[4] = { 0x0f, 0x1f, 0x84, 0x00 };
/* arm64: movz xzr, #0x4231 / #0x4230 (little-endian words). */
#define A64_BEGIN 0xd288463fu
#define A64_END 0xd288461fu

static void block_exec(unsigned int vcpu, void *udata)
{
	struct block *b = udata;

	(void)vcpu;
	if (__atomic_load_n(&open_window, __ATOMIC_RELAXED))
		__atomic_fetch_add(&b->executions, 1, __ATOMIC_RELAXED);
}

static void window_begin(unsigned int vcpu, void *udata)
{
	(void)vcpu;
	(void)udata;
	__atomic_fetch_add(&windows, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&open_window, 1, __ATOMIC_RELAXED);
}

static void window_end(unsigned int vcpu, void *udata)
{
	(void)vcpu;
	(void)udata;
	__atomic_store_n(&open_window, 0, __ATOMIC_RELAXED);
}

static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	size_t n = qemu_plugin_tb_n_insns(tb);
	struct block *b = calloc(1, sizeof(*b));

	(void)id;
	if (!b)
		abort();
	b->vaddr = qemu_plugin_tb_vaddr(tb);
	b->insns = n;
	pthread_mutex_lock(&blocks_lock);
	b->next = blocks;
	blocks = b;
	pthread_mutex_unlock(&blocks_lock);
	qemu_plugin_register_vcpu_tb_exec_cb(tb, block_exec, QEMU_PLUGIN_CB_NO_REGS, b);

	for (size_t i = 0; i < n; i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
		const unsigned char *d = qemu_plugin_insn_data(insn);
		size_t size = qemu_plugin_insn_size(insn);
		uint32_t word;
		bool begin, end;

		if (arm64 && size == 4) {
			memcpy(&word, d, 4);
			begin = word == A64_BEGIN;
			end = word == A64_END;
		} else if (!arm64 && size == 8 && !memcmp(d, marker, 4)) {
			memcpy(&word, d + 4, 4);
			begin = word == 0x524d4231;
			end = word == 0x524d4230;
		} else {
			continue;
		}
		if (begin)
			qemu_plugin_register_vcpu_insn_exec_cb(insn, window_begin,
							       QEMU_PLUGIN_CB_NO_REGS, NULL);
		else if (end)
			qemu_plugin_register_vcpu_insn_exec_cb(insn, window_end,
							       QEMU_PLUGIN_CB_NO_REGS, NULL);
	}
}

static void at_exit(qemu_plugin_id_t id, void *udata)
{
	FILE *f = fopen(out_path, "w");

	(void)id;
	(void)udata;
	if (!f) {
		perror(out_path);
		return;
	}
	fprintf(f, "windows %" PRIu64 "\n", windows);
	for (struct block *b = blocks; b; b = b->next)
		if (b->executions)
			fprintf(f, "%" PRIx64 " %u %" PRIu64 "\n", b->vaddr, b->insns,
				b->executions);
	fclose(f);
}

__attribute__((visibility("default")))
int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv)
{
	arm64 = info && info->target_name && !strcmp(info->target_name, "aarch64");
	for (int i = 0; i < argc; i++)
		if (!strncmp(argv[i], "out=", 4))
			out_path = argv[i] + 4;
	if (!out_path) {
		fprintf(stderr, "insn_profile: give out=PATH\n");
		return -1;
	}
	qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
	qemu_plugin_register_atexit_cb(id, at_exit, NULL);
	return 0;
}
