/* SPDX-License-Identifier: MIT */
/* A mapping whose file was truncated under it: touching it raises SIGBUS. */
#ifndef SHIM_TRUNCATED_H
#define SHIM_TRUNCATED_H

#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#define TRUNCATED_SIZE 8192

/* Returns TRUNCATED_SIZE bytes of such a mapping; exits 3 if it cannot. */
static inline char *truncated_mapping(const char *name)
{
	int fd = memfd_create(name, 0);
	char *p;

	if (fd < 0 || ftruncate(fd, TRUNCATED_SIZE) != 0) {
		perror("memfd");
		exit(3);
	}
	p = mmap(NULL, TRUNCATED_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED || ftruncate(fd, 0) != 0) {
		perror("mmap");
		exit(3);
	}
	close(fd);
	return p;
}

#endif
