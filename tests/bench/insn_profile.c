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
 * With cache=1 it also counts, per block and inside windows, the guest's
 * memory accesses (loads, stores), its atomic read-modify-writes
 * (tests/bench/insn_class.h) and the misses of a simulated hierarchy
 * (tests/bench/cache_model.h): a private L1d per vCPU and one LLC shared
 * by all, LRU, indexed by physical address (virtual under user-mode
 * QEMU). The caches run from the first instruction on, so a window
 * starts with them warm; only what happens inside windows is counted.
 * Geometry: l1d=KIB:WAYS (default 48:12, the L1d of an Intel Golden Cove
 * core, as in Sapphire Rapids), llc=KIB:WAYS (default 4096:16: about two
 * such cores' share of the shared L3, rounded to a power of two of sets),
 * line=BYTES (64). A geometry that is not a power of two of sets, or an
 * argument it does not know, refuses the run (QEMU exits, naming it).
 * A store (an atomic RMW's too) invalidates the line in every other
 * vCPU's L1d, so a later access there is a coherence miss, counted
 * apart (also as an L1d miss): the line transfers of sharing, true or
 * false, as far as the vCPUs' interleaving shows them (under -icount
 * they take turns in slices, so this is a lower bound).
 *
 * Output (file given as out=PATH): "windows N" ("windows N open" if a
 * window never closed), with cache=1 a line "# cache ...", then one line
 * per block that ran inside a window: "VADDR NR_INSNS EXECUTIONS", with
 * cache=1 followed by "ATOMICS LOADS STORES L1D_MISSES LLC_MISSES
 * COHERENCE_MISSES". The
 * instructions count whole blocks (a block counts from its entry, as
 * before); the other columns count each instruction as it executes, so a
 * window that opens inside a block misses none of them.
 *
 * The totals of each window, in the order the windows closed, come
 * before the blocks, one line each: "# window I INSNS", with cache=1
 * followed by the same five columns (make bench's counted boots pair them
 * with the console's runs: scripts/bench/bench.sh).
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache_model.h"
#include "insn_class.h"

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
typedef uint32_t qemu_plugin_meminfo_t;
struct qemu_plugin_hwaddr;
enum { QEMU_PLUGIN_MEM_R = 1, QEMU_PLUGIN_MEM_W, QEMU_PLUGIN_MEM_RW };
typedef void (*vcpu_mem_cb_t)(unsigned int vcpu_index, qemu_plugin_meminfo_t info,
			      uint64_t vaddr, void *userdata);

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
void qemu_plugin_register_vcpu_mem_cb(struct qemu_plugin_insn *insn, vcpu_mem_cb_t cb,
				      int flags, int rw, void *userdata);
unsigned int qemu_plugin_mem_size_shift(qemu_plugin_meminfo_t info);
bool qemu_plugin_mem_is_store(qemu_plugin_meminfo_t info);
struct qemu_plugin_hwaddr *qemu_plugin_get_hwaddr(qemu_plugin_meminfo_t info, uint64_t vaddr);
bool qemu_plugin_hwaddr_is_io(const struct qemu_plugin_hwaddr *haddr);
uint64_t qemu_plugin_hwaddr_phys_addr(const struct qemu_plugin_hwaddr *haddr);

__attribute__((visibility("default"))) int qemu_plugin_version = 1;

/* One translation of a block; a block translated again gets another. */
struct block {
	uint64_t vaddr;
	uint64_t executions;	/* inside windows */
	uint32_t insns;
	/* With cache=1, inside windows, counted as they execute: */
	uint64_t atomics, loads, stores, l1d_misses, llc_misses, coherence_misses;
	struct block *next;
};

static struct block *blocks;
static pthread_mutex_t blocks_lock = PTHREAD_MUTEX_INITIALIZER;
static int open_window;
static uint64_t windows;
static const char *out_path;
static bool arm64;	/* the guest's instruction set: which marker */
static bool system_mode;	/* physical addresses (else virtual: user mode) */

/* The simulated hierarchy (cache=1). */
#define MAX_VCPUS 64
static bool cache_on;
static unsigned int l1d_kib = 48, l1d_ways = 12, llc_kib = 4096, llc_ways = 16, line = 64;
static struct cache l1d[MAX_VCPUS], llc;
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static bool vcpu_over;	/* a vCPU beyond MAX_VCPUS: refused at exit */
static unsigned int nr_vcpus;	/* the highest vCPU index seen, plus one */

/*
 * The running totals of what windows count (the blocks' columns summed as
 * they are counted) and each closed window's share of them.
 */
enum { T_INSNS, T_ATOMICS, T_LOADS, T_STORES, T_L1D, T_LLC, T_COH, T_N };
static uint64_t totals[T_N], at_begin[T_N];
static uint64_t (*per_window)[T_N];
static size_t nr_closed, per_window_cap;

/* x86_64: nopl disp32(%rax,%rax,1), the displacement says which. */
static const unsigned char marker[4] = { 0x0f, 0x1f, 0x84, 0x00 };
/* arm64: movz xzr, #0x4231 / #0x4230 (little-endian words). */
#define A64_BEGIN 0xd288463fu
#define A64_END 0xd288461fu

static void block_exec(unsigned int vcpu, void *udata)
{
	struct block *b = udata;

	(void)vcpu;
	if (__atomic_load_n(&open_window, __ATOMIC_RELAXED)) {
		__atomic_fetch_add(&b->executions, 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&totals[T_INSNS], b->insns, __ATOMIC_RELAXED);
	}
}

/*
 * One access of `size` bytes at `addr`: every line it touches; a store
 * invalidates them in the other vCPUs' L1d.
 */
static void cache_touch(struct block *b, unsigned int vcpu, uint64_t addr, unsigned int size,
			bool store, bool count)
{
	uint64_t first = addr >> llc.line_shift, last = (addr + size - 1) >> llc.line_shift;

	for (uint64_t l = first; l <= last; l++) {
		uint64_t a = l << llc.line_shift;
		enum cache_result r = cache_access_result(&l1d[vcpu], a);

		if (store)
			for (unsigned int v = 0; v < nr_vcpus; v++)
				if (v != vcpu)
					cache_invalidate(&l1d[v], a);
		if (r == CACHE_HIT)
			continue;
		if (count) {
			b->l1d_misses++;
			totals[T_L1D]++;
			if (r == CACHE_COHERENCE_MISS) {
				b->coherence_misses++;
				totals[T_COH]++;
			}
		}
		if (!cache_access(&llc, a) && count) {
			b->llc_misses++;
			totals[T_LLC]++;
		}
	}
}

static void mem_access(unsigned int vcpu, qemu_plugin_meminfo_t info, uint64_t vaddr,
		       void *udata)
{
	struct block *b = udata;
	bool count = __atomic_load_n(&open_window, __ATOMIC_RELAXED);
	unsigned int size = 1u << qemu_plugin_mem_size_shift(info);
	uint64_t addr = vaddr;

	if (system_mode) {
		struct qemu_plugin_hwaddr *hw = qemu_plugin_get_hwaddr(info, vaddr);

		if (!hw || qemu_plugin_hwaddr_is_io(hw))
			return;	/* device memory: not cached */
		addr = qemu_plugin_hwaddr_phys_addr(hw);
	}
	pthread_mutex_lock(&cache_lock);
	if (vcpu >= MAX_VCPUS) {
		vcpu_over = true;
	} else {
		bool store = qemu_plugin_mem_is_store(info);

		if (vcpu >= nr_vcpus)
			nr_vcpus = vcpu + 1;
		if (count) {
			if (store) {
				b->stores++;
				totals[T_STORES]++;
			} else {
				b->loads++;
				totals[T_LOADS]++;
			}
		}
		cache_touch(b, vcpu, addr, size, store, count);
	}
	pthread_mutex_unlock(&cache_lock);
}

static void atomic_exec(unsigned int vcpu, void *udata)
{
	struct block *b = udata;

	(void)vcpu;
	if (__atomic_load_n(&open_window, __ATOMIC_RELAXED)) {
		__atomic_fetch_add(&b->atomics, 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&totals[T_ATOMICS], 1, __ATOMIC_RELAXED);
	}
}

/*
 * A snapshot of the totals. Under -icount the vCPUs run one at a time in
 * one thread, so nothing counts while it is taken; cache_lock orders it
 * with the memory callbacks anyway.
 */
static void totals_read(uint64_t out[T_N])
{
	pthread_mutex_lock(&cache_lock);
	for (int i = 0; i < T_N; i++)
		out[i] = __atomic_load_n(&totals[i], __ATOMIC_RELAXED);
	pthread_mutex_unlock(&cache_lock);
}

static void window_begin(unsigned int vcpu, void *udata)
{
	(void)vcpu;
	(void)udata;
	__atomic_fetch_add(&windows, 1, __ATOMIC_RELAXED);
	totals_read(at_begin);
	__atomic_store_n(&open_window, 1, __ATOMIC_RELAXED);
}

static void window_end(unsigned int vcpu, void *udata)
{
	uint64_t now[T_N];

	(void)vcpu;
	(void)udata;
	if (!__atomic_load_n(&open_window, __ATOMIC_RELAXED))
		return;
	__atomic_store_n(&open_window, 0, __ATOMIC_RELAXED);
	totals_read(now);
	if (nr_closed == per_window_cap) {
		size_t cap = per_window_cap ? 2 * per_window_cap : 64;
		void *p = realloc(per_window, cap * sizeof(*per_window));

		if (!p)
			abort();
		per_window = p;
		per_window_cap = cap;
	}
	for (int i = 0; i < T_N; i++)
		per_window[nr_closed][i] = now[i] - at_begin[i];
	nr_closed++;
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

		if (cache_on) {
			enum insn_class k = INSN_PLAIN;

			if (arm64 && size == 4) {
				memcpy(&word, d, 4);
				k = a64_insn_class(word);
			} else if (!arm64) {
				k = x86_insn_class(d, size);
			}
			if (k == INSN_ATOMIC)
				qemu_plugin_register_vcpu_insn_exec_cb(insn, atomic_exec,
								       QEMU_PLUGIN_CB_NO_REGS, b);
			qemu_plugin_register_vcpu_mem_cb(insn, mem_access, QEMU_PLUGIN_CB_NO_REGS,
							 QEMU_PLUGIN_MEM_RW, b);
		}
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
	fprintf(f, "windows %" PRIu64 "%s\n", windows, open_window ? " open" : "");
	if (cache_on)
		fprintf(f, "# cache l1d=%uKiB/%u-way per vCPU, llc=%uKiB/%u-way shared, line=%u%s\n",
			l1d_kib, l1d_ways, llc_kib, llc_ways, line,
			vcpu_over ? ", vCPUs beyond 64 not simulated" : "");
	for (size_t w = 0; w < nr_closed; w++) {
		fprintf(f, "# window %zu %" PRIu64, w + 1, per_window[w][T_INSNS]);
		if (cache_on)
			for (int i = T_ATOMICS; i < T_N; i++)
				fprintf(f, " %" PRIu64, per_window[w][i]);
		fputc('\n', f);
	}
	for (struct block *b = blocks; b; b = b->next) {
		/*
		 * A block whose execution opened the window counts no execution
		 * (its entry came first) but its accesses after the marker.
		 */
		if (!b->executions && !b->atomics && !b->loads && !b->stores && !b->coherence_misses)
			continue;
		fprintf(f, "%" PRIx64 " %u %" PRIu64, b->vaddr, b->insns, b->executions);
		if (cache_on)
			fprintf(f, " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64,
				b->atomics, b->loads, b->stores, b->l1d_misses, b->llc_misses,
				b->coherence_misses);
		fputc('\n', f);
	}
	fclose(f);
}

/* "KIB:WAYS" into two numbers; false if malformed. */
static bool parse_geometry(const char *v, unsigned int *kib, unsigned int *ways)
{
	char *end;
	unsigned long k = strtoul(v, &end, 10), w;

	if (end == v || *end != ':')
		return false;
	v = end + 1;
	w = strtoul(v, &end, 10);
	if (end == v || *end || !k || !w || k > (1ul << 22) || w > 64)
		return false;
	*kib = k;
	*ways = w;
	return true;
}

static bool parse_number(const char *v, unsigned int *out)
{
	char *end;
	unsigned long n = strtoul(v, &end, 10);

	if (end == v || *end || !n || n > 4096)
		return false;
	*out = n;
	return true;
}

__attribute__((visibility("default")))
int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv)
{
	const char *why;

	arm64 = info && info->target_name && !strcmp(info->target_name, "aarch64");
	system_mode = info && info->system_emulation;
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		bool ok;

		if (!strncmp(a, "out=", 4)) {
			out_path = a + 4;
			ok = *out_path;
		} else if (!strncmp(a, "cache=", 6)) {
			ok = !strcmp(a + 6, "0") || !strcmp(a + 6, "1");
			cache_on = !strcmp(a + 6, "1");
		} else if (!strncmp(a, "l1d=", 4)) {
			ok = parse_geometry(a + 4, &l1d_kib, &l1d_ways);
		} else if (!strncmp(a, "llc=", 4)) {
			ok = parse_geometry(a + 4, &llc_kib, &llc_ways);
		} else if (!strncmp(a, "line=", 5)) {
			ok = parse_number(a + 5, &line);
		} else {
			ok = false;
		}
		if (!ok) {
			fprintf(stderr, "insn_profile: malformed or unknown argument '%s'\n", a);
			return -1;
		}
	}
	if (!out_path) {
		fprintf(stderr, "insn_profile: give out=PATH\n");
		return -1;
	}
	if (cache_on) {
		why = cache_init(&llc, (uint64_t)llc_kib << 10, llc_ways, line);
		if (why) {
			fprintf(stderr, "insn_profile: llc=%u:%u: %s\n", llc_kib, llc_ways, why);
			return -1;
		}
		for (int v = 0; v < MAX_VCPUS; v++) {
			why = cache_init(&l1d[v], (uint64_t)l1d_kib << 10, l1d_ways, line);
			if (why) {
				fprintf(stderr, "insn_profile: l1d=%u:%u: %s\n", l1d_kib, l1d_ways,
					why);
				return -1;
			}
		}
	}
	qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
	qemu_plugin_register_atexit_cb(id, at_exit, NULL);
	return 0;
}
