/* SPDX-License-Identifier: MIT */
/*
 * faultline healable's stand-in for a running process (heal_env.c): a
 * file's implicit-check sites, found through the discovery layer, and the
 * environment the healing planner (lib/patch/heal_plan.h) asks where
 * stubs may go and which bytes are taken.
 */
#ifndef FL_CLI_HEAL_ENV_H
#define FL_CLI_HEAL_ENV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <faultline/discovery.h>

#include "patch/heal_plan.h"

struct heal_site {
	uint64_t addr;		/* link-time (ET_REL: an address in its section) */
	uint64_t fn;		/* its function's */
	uint64_t handler;	/* the handler PC, link-time */
	int64_t bias;		/* the runtime address is addr + bias */
	uint32_t section;	/* ET_REL: the code section's index; else 0 */
	uint32_t kind;		/* FL_FAULT_* */
	const char *function;	/* NULL: unknown */
	const char *lost;	/* why its code was not found, or NULL */
};

struct heal_file {
	struct fl_elf *elf;
	uint16_t type;		/* ET_REL, ET_EXEC, ET_DYN */
	bool found;		/* it has a fault map */
	bool assumed;		/* its load address is assumed (ET_DYN, ET_REL) */
	uint64_t load;
	struct fl_range image;	/* linked files: link-time */
	struct heal_site *sites;	/* in the fault map's order */
	size_t nsites;
	struct heal_key *keys;	/* the sites by (section, addr), for busy() */
	unsigned tactics;	/* fl_heal_env.tactics: 0, all */
};

/*
 * Opens path and finds its sites; a position-independent file is placed at
 * load.  Returns 0, or -errno with a message naming the file in err.
 * heal_file_close(hf) is safe after either.
 */
int heal_file_open(struct heal_file *hf, const char *path, uint64_t load, char *err,
		   size_t errlen);
void heal_file_close(struct heal_file *hf);

/* "relocatable", "executable" or "shared" (ET_DYN: a PIE or a library). */
const char *heal_file_type(const struct heal_file *hf);

/* Where link-time address addr of s's code is at run time. */
static inline uint64_t heal_runtime(const struct heal_site *s, uint64_t addr)
{
	return addr + (uint64_t)s->bias;
}

/*
 * Plans s's healing into *p (p->tactic FL_HEAL_NONE with p->why when it
 * cannot be healed in place) and copies its instruction's bytes into
 * bytes.  Returns the instruction's length (0 when none decodes there).
 */
size_t heal_plan_site(const struct heal_file *hf, const struct heal_site *s,
		      struct fl_heal_plan *p, uint8_t bytes[15]);

#endif /* FL_CLI_HEAL_ENV_H */
