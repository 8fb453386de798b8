/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The one output format of the rust-mm test programs, read by one parser
 * (scripts/lib/results.py). Before it runs anything, a program prints its
 * plan -- every case it will report, from its own case table:
 *
 *   RUSTMM-PLAN <program> <n>
 *   RUSTMM-CASE <program>.<case>                  (n lines)
 *   RUSTMM-CASE <program>.<case> may-skip <why>   (a case that may skip
 *                                                  here, and why)
 *
 * then one result line per case, in any order:
 *
 *   RUSTMM-TEST <program>.<case> PASS|FAIL|SKIP <note><why>
 *
 * The harness fails a planned case without a result, a result nobody
 * planned, a result given twice, a program that printed no plan, and a
 * SKIP of a case that did not declare it may skip. A case declares a skip
 * only for a reason of the kernel or arch it runs on (MAY_SKIP_ON_ARM64),
 * never for a machine that was not set up: what a case needs is set up by
 * the program (or init), and failing to set it up is a FAIL.
 */
#ifndef RUSTMM_RESULT_H
#define RUSTMM_RESULT_H

#include <stdio.h>
#include <termios.h>
#include <unistd.h>

enum { PASS, FAIL, SKIP };

static const char *const result_word[] = { "PASS", "FAIL", "SKIP" };

/* Why the last case failed or skipped (and notes of a pass). */
static char why[512];

/* A skip this arch may give, with its reason; none elsewhere. */
#ifdef __aarch64__
#define MAY_SKIP_ON_ARM64(reason)	(reason)
#else
#define MAY_SKIP_ON_ARM64(reason)	NULL
#endif

/*
 * Wait until a line has left the serial port. A line written to the
 * console tty waits in the UART's transmit buffer, drained by interrupts,
 * while the kernel prints its own records synchronously: the dump_page()
 * output of a gup test landed in the middle of a result line once. Not a
 * tty (the host self-check's pipe): nothing to wait for.
 */
static inline void result_sent(void)
{
	fflush(stdout);
	(void)tcdrain(STDOUT_FILENO);
}

static inline void plan_begin(const char *program, size_t n)
{
	printf("RUSTMM-PLAN %s %zu\n", program, n);
}

static inline void plan_case(const char *program, const char *name, const char *may_skip)
{
	if (may_skip)
		printf("RUSTMM-CASE %s.%s may-skip %s\n", program, name, may_skip);
	else
		printf("RUSTMM-CASE %s.%s\n", program, name);
}

static inline void plan_end(void)
{
	result_sent();
}

/* One result line: "RUSTMM-TEST <program>.<name> <word> <note><why>". */
static inline void report(const char *program, const char *name, int r, const char *note)
{
	printf("RUSTMM-TEST %s.%s %s %s%s\n", program, name, result_word[r], note, why);
	result_sent();
}

/*
 * A program whose cases take no argument: its table, then run_cases()
 * prints the plan, runs each case and reports it. Returns the number of
 * failures.
 */
struct test_case {
	const char *name;
	int (*fn)(void);
	const char *may_skip;
};

static inline int run_cases(const char *program, const struct test_case *c, size_t n,
			    const char *note)
{
	int failed = 0;

	plan_begin(program, n);
	for (size_t i = 0; i < n; i++)
		plan_case(program, c[i].name, c[i].may_skip);
	plan_end();
	for (size_t i = 0; i < n; i++) {
		int r;

		why[0] = 0;
		r = c[i].fn();
		failed += r == FAIL;
		report(program, c[i].name, r, note);
	}
	return failed;
}

/* A case table entry named after its function; one that may skip here. */
#define CASE(fn)			{ #fn, fn, NULL }
#define CASE_MAY_SKIP(fn, may_skip)	{ #fn, fn, may_skip }

#endif /* RUSTMM_RESULT_H */
