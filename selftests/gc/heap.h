/* SPDX-License-Identifier: MIT */
/*
 * The heap of the statepoint example (selftests/gc/): objects that the
 * collector (collector.h) moves at every collection.
 *
 * An object is a header and its words; a reference is the address of its
 * first word, as workload.ll's i64 addrspace(1)* values hold it.  Its
 * first nptrs words are references (or null), the rest plain words.
 *
 * Each collection copies the live objects to a space of its own, at an
 * address no earlier space of the last GC_SPACES had, and makes the space
 * it leaves inaccessible (PROT_NONE): a reference the collector missed
 * faults at its first use, and a value read through a stale reference
 * never passes for a right one.
 */
#ifndef FL_TEST_GC_HEAP_H
#define FL_TEST_GC_HEAP_H

#include <stdbool.h>
#include <stdint.h>

struct gc_header {
	uint32_t nptrs;		/* its first nptrs words are references */
	uint32_t nwords;
	uint64_t forward;	/* during a collection: its copy, once copied */
};

/* Bytes of one space, and the spaces the heap's address range holds. */
#define GC_SPACE (1u << 20)
#define GC_SPACES 4096u

/* The heap's numbers, since gc_heap_init or the last gc_stats_reset. */
struct gc_stats {
	unsigned long collections;
	unsigned long frames;		/* yielded by fl_stack_walk */
	unsigned long roots;		/* locations of references written in frames */
	/*
	 * ...of them, registers stored below the innermost frame yielded: in
	 * the walk's context (a register no frame saved), or in the save slot
	 * of a C frame between that frame and the collector.
	 */
	unsigned long roots_below;
	unsigned long moved;		/* objects copied */
	unsigned last_frames;		/* yielded by the last collection's walk */
};

extern struct gc_stats gc_stats;

/* Whether every allocation collects first (as well as every poll). */
extern bool gc_collect_on_alloc;

/* Reserves the heap's address range and makes its first space.  Dies on failure. */
void gc_heap_init(void);

/* workload.ll's: a new zeroed object (collects first if gc_collect_on_alloc). */
uint64_t *gc_alloc(uint64_t nptrs, uint64_t nwords);

/* workload.ll's: sets the plain words of obj to 100 + their index. */
void gc_fill(uint64_t *obj);

/* Whether ref is the reference of an object of the current space. */
bool gc_is_object(uint64_t ref);

/*
 * A collection's steps (collector.c drives them): a new space; each root
 * forwarded (the reference of its copy; dies when it is not the reference
 * of an object of the space left); the copies' own references forwarded,
 * and the old space made inaccessible.
 */
void gc_flip(void);
uint64_t gc_forward(uint64_t ref);
void gc_finish(void);

/* The test's name, for gc_die (the test sets it). */
extern const char *gc_test_name;

/* t_fail (selftests/common/t.h) for the files the tests share: "FAIL <test>: ...", exit 1. */
void gc_die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
#define gc_check(cond, ...) do { if (!(cond)) gc_die(__VA_ARGS__); } while (0)

#endif /* FL_TEST_GC_HEAP_H */
