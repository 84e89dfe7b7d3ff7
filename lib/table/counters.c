/* SPDX-License-Identifier: MIT */
/*
 * Per-site counters: one 64-bit slot per registered site, in a memfd
 * sealed against shrinking and growing (the daemon maps it read-only; see
 * the daemon issue), allocated to modules in blocks.  The handler
 * increments them; this file hands out and takes back blocks, under the
 * registry lock.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "table/table.h"

struct block {
	uint32_t base;
	uint32_t len;
};

static int counters_fd = -1;
static struct block *free_blocks;	/* sorted by base, coalesced */
static size_t num_free;

int fl_counters_init(uint32_t max_sites)
{
	size_t size = (size_t)max_sites * sizeof(uint64_t);
	void *p;
	int fd;

	fd = memfd_create("faultline-counters", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)size) != 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0)
		goto fail;
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		goto fail;
	free_blocks = malloc(sizeof(*free_blocks));
	if (!free_blocks) {
		munmap(p, size);
		errno = ENOMEM;
		goto fail;
	}
	free_blocks[0] = (struct block){ 0, max_sites };
	num_free = 1;
	counters_fd = fd;
	fl_dispatch.counters = p;
	fl_dispatch.max_sites = max_sites;
	return 0;
fail:
	{
		int err = errno;

		close(fd);
		return -err;
	}
}

int fl_counters_fd(void)
{
	return counters_fd;
}

/* Returns the first slot of a block of n, or -ENOSPC.  n > 0. */
int64_t fl_counters_alloc(uint32_t n)
{
	for (size_t i = 0; i < num_free; i++) {
		struct block *b = &free_blocks[i];

		if (b->len >= n) {
			uint32_t base = b->base;

			b->base += n;
			b->len -= n;
			if (b->len == 0) {
				memmove(b, b + 1, (num_free - i - 1) * sizeof(*b));
				num_free--;
			}
			return base;
		}
	}
	return -ENOSPC;
}

/*
 * Returns a block, zeroing its counters.  Call only after a grace period:
 * no handler may still increment them for the old sites.  Returns 0 or
 * -ENOMEM (the block is then lost, not reused).
 */
int fl_counters_free(uint32_t base, uint32_t n)
{
	size_t i = 0;
	struct block *grown;

	if (n == 0)
		return 0;
	for (uint32_t k = 0; k < n; k++)
		atomic_store_explicit(&fl_dispatch.counters[base + k], 0, memory_order_relaxed);

	while (i < num_free && free_blocks[i].base < base)
		i++;
	if (i > 0 && free_blocks[i - 1].base + free_blocks[i - 1].len == base) {
		free_blocks[i - 1].len += n;
		if (i < num_free && base + n == free_blocks[i].base) {
			free_blocks[i - 1].len += free_blocks[i].len;
			memmove(&free_blocks[i], &free_blocks[i + 1],
				(num_free - i - 1) * sizeof(*free_blocks));
			num_free--;
		}
		return 0;
	}
	if (i < num_free && base + n == free_blocks[i].base) {
		free_blocks[i].base = base;
		free_blocks[i].len += n;
		return 0;
	}
	grown = realloc(free_blocks, (num_free + 1) * sizeof(*free_blocks));
	if (!grown)
		return -ENOMEM;
	free_blocks = grown;
	memmove(&free_blocks[i + 1], &free_blocks[i], (num_free - i) * sizeof(*free_blocks));
	free_blocks[i] = (struct block){ base, n };
	num_free++;
	return 0;
}
