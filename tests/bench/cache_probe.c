// SPDX-License-Identifier: GPL-2.0
/*
 * cache_probe: a guest program with known memory behaviour, run under
 * user-mode QEMU with the profiling plugin (tests/bench/insn_profile.c,
 * cache=1) by tests/tools/test_profile_plugin.py, which checks that the
 * plugin counts what this program does inside its measured window
 * (the benchmark's markers, as tests/bench/rmap_bench.c emits them):
 *
 *   cache_probe stride LINES PASSES  reads one byte of each of LINES
 *       consecutive 64-byte lines, PASSES times (after one pass outside
 *       the window that warms the caches): LINES * PASSES loads, and
 *       under LRU either no miss (the lines fit) or one per load (they
 *       do not: a cyclic walk over more lines than a set holds misses
 *       every time);
 *   cache_probe rmw COUNT            COUNT atomic increments of one word
 *       (x86_64: lock xadd; arm64: LDADD);
 *   cache_probe llsc COUNT           (arm64) COUNT increments as
 *       load/store-exclusive pairs (LDXR/STXR);
 *   cache_probe open 1               opens the window and exits (the
 *       plugin must report a window that never closed);
 *   cache_probe windows COUNT        COUNT windows, the i-th (from 1) doing
 *       i atomic increments (the plugin's per-window totals, in order);
 *   cache_probe false ROUNDS         two threads take ROUNDS turns each,
 *       strictly alternating on a turn word of its own line; in its turn a
 *       thread increments its own word, and the two words share a line
 *       (false sharing): each turn's first access to that line is a
 *       coherence miss;
 *   cache_probe apart ROUNDS         the same with the two words on lines
 *       of their own: no coherence miss on them (the turn word's are the
 *       same in both: the difference is the false sharing).
 *
 * Built static, for x86_64 with gcc and for arm64 with
 * aarch64-linux-gnu-gcc -march=armv8.1-a.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LINE 64
#define MAX_LINES (96 * 1024)	/* 6 MiB: above the default LLC */

static uint8_t buf[MAX_LINES * LINE] __attribute__((aligned(4096)));
static uint64_t word;

#if defined(__x86_64__)
#define WINDOW_BEGIN() asm volatile(".byte 0x0f,0x1f,0x84,0x00,0x31,0x42,0x4d,0x52" ::: "memory")
#define WINDOW_END() asm volatile(".byte 0x0f,0x1f,0x84,0x00,0x30,0x42,0x4d,0x52" ::: "memory")
#elif defined(__aarch64__)
#define WINDOW_BEGIN() asm volatile(".inst 0xd288463f" ::: "memory")
#define WINDOW_END() asm volatile(".inst 0xd288461f" ::: "memory")
#else
#error "x86_64 or arm64"
#endif

/* The players of "false" and "apart": a turn word, and a word each. */
static struct {
	volatile unsigned long turn __attribute__((aligned(LINE)));
	volatile unsigned long go;
} turn;
static struct {
	volatile unsigned long a __attribute__((aligned(LINE)));
	volatile unsigned long b;
	volatile unsigned long b_apart __attribute__((aligned(LINE)));
} words;
static volatile unsigned long *word_of[2];
static unsigned long rounds;

static void *player(void *arg)
{
	unsigned long me = (unsigned long)arg;

	while (!__atomic_load_n(&turn.go, __ATOMIC_ACQUIRE))
		;
	for (unsigned long i = 0; i < rounds; i++) {
		while (__atomic_load_n(&turn.turn, __ATOMIC_ACQUIRE) % 2 != me)
			;
		*word_of[me] += 1;
		__atomic_store_n(&turn.turn, turn.turn + 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

static int play(int apart, unsigned long n)
{
	pthread_t t[2];

	rounds = n;
	word_of[0] = &words.a;
	word_of[1] = apart ? &words.b_apart : &words.b;
	for (unsigned long i = 0; i < 2; i++)
		if (pthread_create(&t[i], NULL, player, (void *)i))
			return 1;
	WINDOW_BEGIN();
	__atomic_store_n(&turn.go, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	WINDOW_END();
	return 0;
}

/* One load per line: the loop keeps everything else in registers. */
static void walk(uint8_t *p, unsigned long lines, unsigned long passes, unsigned long *sum)
{
	unsigned long s = 0;

	for (unsigned long k = 0; k < passes; k++)
		for (unsigned long i = 0; i < lines; i++)
			s += *(volatile uint8_t *)(p + i * LINE);
	*sum = s;
}

static void rmw(unsigned long count)
{
	for (unsigned long i = 0; i < count; i++) {
#if defined(__x86_64__)
		uint64_t one = 1;

		asm volatile("lock xaddq %0, %1" : "+r"(one), "+m"(word) : : "memory");
#else
		uint64_t one = 1, old;

		asm volatile("ldadd %2, %0, %1" : "=r"(old), "+Q"(word) : "r"(one) : "memory");
#endif
	}
}

static void llsc(unsigned long count)
{
#if defined(__aarch64__)
	for (unsigned long i = 0; i < count; i++) {
		uint64_t v;
		uint32_t fail;

		asm volatile("1: ldxr %0, %2\n"
			     "   add %0, %0, #1\n"
			     "   stxr %w1, %0, %2\n"
			     "   cbnz %w1, 1b"
			     : "=&r"(v), "=&r"(fail), "+Q"(word) : : "memory");
	}
#else
	(void)count;
	fprintf(stderr, "cache_probe: llsc is arm64's\n");
	exit(2);
#endif
}

int main(int argc, char **argv)
{
	unsigned long a, b = 0, sum = 0;

	if (argc < 3 || (a = strtoul(argv[2], NULL, 0)) == 0) {
		fprintf(stderr, "usage: cache_probe stride LINES PASSES | rmw COUNT | llsc COUNT | open 1 | windows COUNT | false ROUNDS | apart ROUNDS\n");
		return 2;
	}
	if (!strcmp(argv[1], "stride")) {
		if (argc < 4 || a > MAX_LINES || (b = strtoul(argv[3], NULL, 0)) == 0) {
			fprintf(stderr, "cache_probe: stride LINES (at most %d) PASSES\n", MAX_LINES);
			return 2;
		}
		walk(buf, a, 1, &sum);	/* warm */
		WINDOW_BEGIN();
		walk(buf, a, b, &sum);
		WINDOW_END();
	} else if (!strcmp(argv[1], "rmw")) {
		WINDOW_BEGIN();
		rmw(a);
		WINDOW_END();
	} else if (!strcmp(argv[1], "open")) {
		WINDOW_BEGIN();
	} else if (!strcmp(argv[1], "windows")) {
		for (unsigned long i = 1; i <= a; i++) {
			WINDOW_BEGIN();
			rmw(i);
			WINDOW_END();
		}
	} else if (!strcmp(argv[1], "false") || !strcmp(argv[1], "apart")) {
		if (play(!strcmp(argv[1], "apart"), a))
			return 1;
		sum = words.a + words.b + words.b_apart;
	} else if (!strcmp(argv[1], "llsc")) {
		WINDOW_BEGIN();
		llsc(a);
		WINDOW_END();
	} else {
		fprintf(stderr, "cache_probe: unknown case %s\n", argv[1]);
		return 2;
	}
	printf("cache_probe %s %lu %lu sum=%lu word=%lu\n", argv[1], a, b, sum,
	       (unsigned long)word);
	return 0;
}
