// SPDX-License-Identifier: GPL-2.0
/*
 * A device-dax pgmap whose compound heads are not naturally aligned
 * (docs/upstream-findings.md, finding c). memremap_pages() checks only
 * that vmemmap_shift is at most MAX_FOLIO_ORDER, and a static pmem
 * namespace needs only a 2 MiB-aligned start: with align=1G the pgmap of
 * a namespace at 4 GiB + 2 MiB has 1 GiB compounds whose heads sit 2 MiB
 * past each 1 GiB boundary. On 7.3 that breaks three ways
 * (docs/notes/compound-pagemaps-7.3-inventory.md, sections 1.4-1.5):
 *
 *   - a tail's compound_info is a mask where HVO is built in, so
 *     compound_head() of a tail is its address rounded down to 1 GiB of
 *     struct pages: not its head;
 *   - device-dax maps a PUD from folio_pfn(), which pfn_pud() rounds down;
 *   - the vmemmap population maps the second compound's head into the
 *     first compound's tails-only page (the chunk holding it "continues"
 *     the previous compound), and nr_memmap_pages counts pages it did not
 *     allocate (section_nr_vmemmap_pages() warns under DEBUG_VM).
 *
 * The guest (scripts/test/run-repro.sh, x86_64) reserves [4G, 4G + 2M)
 * (memmap=2M$4G: the section at 4 GiB holds no boot RAM) and makes
 * [4G + 2M, 7G) legacy pmem (memmap=3070M!4098M). This program makes a
 * device-dax of it with align=1G by sysfs writes
 * (tests/bench/devdax_setup.h) and says what the kernel did:
 *
 *   devdax-misaligned-heads: namespace <start>+<size>, align 1G:
 *   bind <ok|refused (why)>, nr_memmap_pages <delta>; touch <ok|SIGBUS|...>
 *   => PRESENT|FIXED|ERROR
 *
 * PRESENT: the kernel made the device (its pgmap has misaligned heads);
 * FIXED: the bind was refused and the kernel said why (a memremap message
 * naming the range: CONFIG_COMPOUND_PAGEMAPS_RUST); ERROR: the namespace
 * is not where the guest should have put it, or the bind failed for
 * another reason. The touch (a write to the device's first byte, in a
 * child) shows what a user of such a device meets; kernel warnings are
 * on the console (run-repro.sh lists them). Exits 0 unless it could not
 * set up.
 */
#include "../bench/devdax_setup.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>

#define SZ_1G	(1UL << 30)
#define SZ_2M	(1UL << 21)

/* Whether the kernel log holds a line with @needle; @line gets it. */
static __attribute__((unused)) int kmsg_has(const char *needle, char *line, size_t len)
{
	char buf[1024];
	int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK);
	ssize_t n;
	int found = 0;

	if (fd < 0)
		return 0;
	while (!found) {
		char *msg;

		n = read(fd, buf, sizeof(buf) - 1);
		if (n < 0 && errno == EPIPE)
			continue;	/* a record overwritten: go on */
		if (n < 0)
			break;		/* EAGAIN: the end of the log */
		buf[n] = 0;
		msg = strchr(buf, ';');
		if (msg && strstr(msg, needle)) {
			snprintf(line, len, "%s", msg + 1);
			line[strcspn(line, "\n")] = 0;
			found = 1;
		}
	}
	close(fd);
	return found;
}

/* Write the device's first byte in a child: "ok", or how it died. */
static __attribute__((unused)) void touch(const char *path, unsigned long size, char *out, size_t len)
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		int fd = open(path, O_RDWR);
		char *p;

		if (fd < 0)
			_exit(2);
		p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (p == MAP_FAILED)
			_exit(3);
		p[0] = 0x5a;
		_exit(p[0] == 0x5a ? 0 : 4);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid) {
		snprintf(out, len, "no child");
		return;
	}
	if (WIFSIGNALED(status))
		snprintf(out, len, "%s", strsignal(WTERMSIG(status)));
	else if (WEXITSTATUS(status))
		snprintf(out, len, "child exit %d (2 open, 3 mmap, 4 readback)",
			 WEXITSTATUS(status));
	else
		snprintf(out, len, "ok");
}

int main(void)
{
#ifndef __x86_64__
	/* Legacy pmem (memmap=nn!ss) and 1 GiB compounds: x86_64's guest. */
	printf("devdax-misaligned-heads: x86_64 only (legacy pmem) => NOT RUN\n");
	return 0;
#else
	unsigned long ns_start = 0, ns_size = 0;
	char res[64], why[512], msg[600], touched[128] = "not tried";
	struct devdax d;
	int made;

	setvbuf(stdout, NULL, _IONBF, 0);
	devdax_settle();
	if (devdax_wait(DEVDAX_ND DEVDAX_NS, NULL) ||
	    devdax_read(DEVDAX_ND DEVDAX_NS "/resource", res, sizeof(res)) ||
	    sscanf(res, "%lx", &ns_start) != 1 ||
	    devdax_read_ul(DEVDAX_ND DEVDAX_NS "/size", &ns_size)) {
		printf("devdax-misaligned-heads: no %s (booted with memmap=3070M!4098M?) => ERROR\n",
		       DEVDAX_NS);
		return 1;
	}
	if (ns_start % SZ_2M || !(ns_start % SZ_1G) || ns_size < 2 * SZ_1G) {
		printf("devdax-misaligned-heads: namespace %#lx+%#lx is not 2M- but not 1G-aligned and at least 2 GiB => ERROR\n",
		       ns_start, ns_size);
		return 1;
	}
	made = !devdax_create(SZ_1G, &d);
	snprintf(why, sizeof(why), "%s", made ? "" : d.why);
	if (made)
		touch(d.path, d.size, touched, sizeof(touched));
	printf("devdax-misaligned-heads: namespace %#lx+%#lx, align 1G: bind %s%s%s, nr_memmap_pages %+lld; touch %s\n",
	       ns_start, ns_size, made ? "ok" : "refused (", why, made ? "" : ")",
	       d.memmap_bind, touched);
	if (made) {
		printf("devdax-misaligned-heads: /dev/dax0.0 at %#lx+%#lx in a pgmap from %#lx: compound heads %#lx + k GiB => PRESENT\n",
		       d.start, d.size, ns_start, ns_start);
		return 0;
	}
	if (kmsg_has("not a whole number of aligned", msg, sizeof(msg))) {
		printf("devdax-misaligned-heads: kernel: \"%s\" => FIXED\n", msg);
		return 0;
	}
	printf("devdax-misaligned-heads: the bind failed for another reason => ERROR\n");
	return 0;
#endif
}
