/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Forced include (-include) for 6.12's selftests/mm/ksm_functional_tests.c:
 * test_prctl_fork_exec() calls execv("./ksm_functional_tests", argv) with
 * an argv that is not NULL-terminated and a path relative to the working
 * directory. The exec fails (EFAULT) and the forked child returns into
 * main() and runs the remaining tests a second time. Later kernels
 * terminate the argv. This re-executes the running binary with a
 * terminated argv instead, without touching the tree.
 */
#include <unistd.h>

static inline int rustmm_ksm_execv(const char *path, char *const argv[])
{
	char *const fixed[] = { argv[0], argv[1], (char *)0 };

	(void)path;
	return execv("/proc/self/exe", fixed);
}
#define execv rustmm_ksm_execv
