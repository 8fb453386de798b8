// SPDX-License-Identifier: GPL-2.0
/*
 * insn_class_test: the classifier of tests/bench/insn_class.h on
 * instructions given as hex bytes, one per line on stdin ("x86 0f1f84..."
 * or "a64 d288463f", the arm64 word as objdump prints it), printing
 * "plain", "atomic" or "excl_load" per line; and a self-test of
 * tests/bench/cache_model.h ("cache_model_test" as argv[1]): LRU order and
 * geometry refusals. Driven by tests/tools/test_profile_plugin.py.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache_model.h"
#include "insn_class.h"

static const char *const names[] = { "plain", "atomic", "excl_load" };

static int cache_selftest(void)
{
	struct cache c;
	int bad = 0;

#define CHECK(cond) do { if (!(cond)) { printf("FAIL %s:%d %s\n", __FILE__, __LINE__, #cond); bad++; } } while (0)
	/* 2 sets of 2 ways, 64-byte lines: lines 0, 2, 4 share set 0. */
	CHECK(!cache_init(&c, 256, 2, 64));
	CHECK(!cache_access(&c, 0));		/* miss */
	CHECK(!cache_access(&c, 128));	/* miss */
	CHECK(cache_access(&c, 0 + 8));	/* hit: 0 now most recent */
	CHECK(!cache_access(&c, 256));	/* miss, evicts 128 (least recent) */
	CHECK(cache_access(&c, 0));		/* hit */
	CHECK(!cache_access(&c, 128));	/* miss: was evicted */
	CHECK(!cache_access(&c, 64));	/* set 1: miss */
	CHECK(cache_access(&c, 64 + 63));	/* same line: hit */
	/* Coherence: another CPU's store invalidates 64's line here. */
	CHECK(cache_invalidate(&c, 64));
	CHECK(!cache_invalidate(&c, 64));	/* already invalid */
	CHECK(!cache_invalidate(&c, 192));	/* not here */
	CHECK(cache_access_result(&c, 64) == CACHE_COHERENCE_MISS);
	CHECK(cache_access_result(&c, 64) == CACHE_HIT);	/* valid again */
	CHECK(cache_invalidate(&c, 64));
	CHECK(!cache_access_result(&c, 192));	/* set 1: 64 still there, invalid */
	CHECK(!cache_access_result(&c, 320));	/* evicts 64, the least recent */
	CHECK(cache_access_result(&c, 64) == CACHE_MISS);	/* evicted: a plain miss */
	cache_free(&c);
	CHECK(cache_init(&c, 48 << 10, 12, 48) != NULL);	/* line not 2^n */
	CHECK(cache_init(&c, 48 << 10, 0, 64) != NULL);	/* no ways */
	CHECK(cache_init(&c, 40 << 10, 12, 64) != NULL);	/* not a multiple */
	CHECK(cache_init(&c, 36 << 10, 12, 64) != NULL);	/* 48 sets */
	CHECK(!cache_init(&c, 48 << 10, 12, 64));		/* 64 sets */
	CHECK(c.sets == 64);
	cache_free(&c);
	printf("cache_model: %s\n", bad ? "FAILED" : "ok");
	return bad != 0;
}

int main(int argc, char **argv)
{
	char arch[8], hex[64];

	if (argc > 1 && !strcmp(argv[1], "cache_model_test"))
		return cache_selftest();
	while (scanf("%7s %63s", arch, hex) == 2) {
		unsigned char bytes[16];
		size_t n = strlen(hex) / 2;
		enum insn_class k;

		if (n > sizeof(bytes) || strlen(hex) % 2)
			return 2;
		for (size_t i = 0; i < n; i++)
			sscanf(hex + 2 * i, "%2hhx", &bytes[i]);
		if (!strcmp(arch, "a64")) {
			k = a64_insn_class((uint32_t)strtoul(hex, NULL, 16));
		} else {
			k = x86_insn_class(bytes, n);
		}
		printf("%s\n", names[k]);
	}
	return 0;
}
