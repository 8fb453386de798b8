/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cache_model.h: a set-associative cache with LRU replacement, for the
 * profiling plugin's simulated hierarchy (tests/bench/insn_profile.c) and
 * its host test (tests/bench/cache_model_test.c). Deterministic: the same
 * sequence of line addresses gives the same hits and misses.
 *
 * A cache holds `sets * ways` lines of `1 << line_shift` bytes; the set of
 * a line is its address's low bits above the line offset. Each set keeps
 * its ways in recency order (way 0 most recent), so a hit moves the line
 * to the front and a miss evicts the last way.
 *
 * Coherence, the simplest kind: a store by one CPU invalidates the line
 * in every other CPU's private cache (cache_invalidate()); the way keeps
 * the line's tag, marked invalid, so that the next access there is told
 * apart as a coherence miss (CACHE_COHERENCE_MISS) from a line that was
 * never there or was evicted (CACHE_MISS).
 */
#ifndef RUST_MM_CACHE_MODEL_H
#define RUST_MM_CACHE_MODEL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct cache {
	uint64_t sets;
	unsigned int ways;
	unsigned int line_shift;
	/*
	 * sets * ways line numbers + 1 (0: empty), CACHE_INVALID set when
	 * another CPU's store invalidated the line.
	 */
	uint64_t *tags;
};

#define CACHE_INVALID	(1ULL << 63)

enum cache_result { CACHE_MISS, CACHE_HIT, CACHE_COHERENCE_MISS };

static inline bool cache_pow2(uint64_t x)
{
	return x && !(x & (x - 1));
}

/*
 * Sets a cache of `bytes` bytes, `ways` ways and `line` bytes per line up.
 * Returns NULL, or why the geometry is refused (the caller names it).
 */
static inline const char *cache_init(struct cache *c, uint64_t bytes, unsigned int ways,
				     unsigned int line)
{
	memset(c, 0, sizeof(*c));
	if (!cache_pow2(line) || line < 8)
		return "the line size is not a power of two of at least 8 bytes";
	if (!ways || ways > 64)
		return "the number of ways is not between 1 and 64";
	if (bytes % ((uint64_t)ways * line))
		return "the size is not a multiple of ways * line";
	c->sets = bytes / ((uint64_t)ways * line);
	if (!cache_pow2(c->sets))
		return "the number of sets (size / (ways * line)) is not a power of two";
	c->ways = ways;
	c->line_shift = __builtin_ctz(line);
	c->tags = calloc(c->sets * ways, sizeof(*c->tags));
	if (!c->tags)
		return "out of memory";
	return NULL;
}

static inline void cache_free(struct cache *c)
{
	free(c->tags);
	c->tags = NULL;
}

/*
 * Accesses the line holding byte address `addr`: a hit, a miss, or a
 * miss on a line another CPU's store invalidated (its way is reused).
 */
static inline enum cache_result cache_access_result(struct cache *c, uint64_t addr)
{
	uint64_t line = addr >> c->line_shift;
	uint64_t *set = c->tags + (line & (c->sets - 1)) * c->ways;
	enum cache_result r = CACHE_MISS;
	unsigned int i;

	for (i = 0; i < c->ways; i++) {
		if ((set[i] & ~CACHE_INVALID) == line + 1) {
			r = set[i] & CACHE_INVALID ? CACHE_COHERENCE_MISS : CACHE_HIT;
			break;
		}
	}
	if (i == c->ways)
		i = c->ways - 1;	/* miss: evict the least recent */
	memmove(set + 1, set, i * sizeof(*set));
	set[0] = line + 1;
	return r;
}

/* Accesses the line holding byte address `addr`; true on a hit. */
static inline bool cache_access(struct cache *c, uint64_t addr)
{
	return cache_access_result(c, addr) == CACHE_HIT;
}

/*
 * Another CPU stored to the line holding `addr`: invalidate it here (its
 * place in the recency order is kept). True if it was valid here.
 */
static inline bool cache_invalidate(struct cache *c, uint64_t addr)
{
	uint64_t line = addr >> c->line_shift;
	uint64_t *set = c->tags + (line & (c->sets - 1)) * c->ways;

	for (unsigned int i = 0; i < c->ways; i++) {
		if (set[i] == line + 1) {
			set[i] |= CACHE_INVALID;
			return true;
		}
	}
	return false;
}

#endif /* RUST_MM_CACHE_MODEL_H */
