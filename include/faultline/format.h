/* SPDX-License-Identifier: MIT */
/*
 * faultline format layer: validating parsers for LLVM's .llvm_faultmaps and
 * .llvm_stackmaps sections.
 *
 * Two APIs over the same validation:
 *
 *  - Cursors (fl_faultmap_cursor, fl_stackmap_cursor) walk a section as a
 *    stream of events (a table starts, a function, a fault entry, a record,
 *    a location, ...).  They never allocate, never make a syscall and keep all
 *    their state in the cursor, so they are safe in any context, including a
 *    signal handler, and any number may run at once on different cursors.
 *    Every count, offset and index is checked against the section size before
 *    it is used; the first problem stops the walk with a negative errno and a
 *    diagnostic that names the section, table, function or record and field.
 *
 *  - Tables (struct fl_faultmap, struct fl_stackmap) are built from a cursor
 *    walk into sorted, indexed arrays for lookups.  They allocate with
 *    malloc(); building is thread-safe, a built table is immutable and may be
 *    read from any number of threads.
 *
 * A section may hold several tables back to back (one per object file in a
 * linked file); both APIs walk them all.  A section that ends inside a table
 * is an error.  An empty section is an error too (it holds no header).
 *
 * Errors are negative errno values:
 *   -EINVAL     malformed content (bad kind, bad index, bad padding size, ...)
 *   -EMSGSIZE   a count or size reaches past the end of the section
 *               (truncation)
 *   -EPROTONOSUPPORT  a version this library does not know
 *   -ENOMEM     (table builders only) out of memory
 * The library never prints.
 *
 * Every function states its thread-safety and async-signal-safety.
 * "Thread-safe" means any number of threads may call it at once on
 * different cursors or diags (a cursor is one walker's state), or on the
 * same built table, which is immutable; nothing here has global state.
 * "Async-signal-safe": it may be called from a signal handler (no
 * allocation, no lock, no syscall).
 */
#ifndef FAULTLINE_FORMAT_H
#define FAULTLINE_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FL_FAULTMAP_SECTION ".llvm_faultmaps"
#define FL_STACKMAP_SECTION ".llvm_stackmaps"

/* Parse flags. */
enum {
	/* Reject non-zero reserved fields and padding (default: accept). */
	FL_PARSE_STRICT = 1u << 0,
	/*
	 * The section is big-endian: set this for an ELFDATA2MSB object.
	 * LLVM writes both sections in the target's byte order (its fault map
	 * reader assumes little-endian, its writer does not: llc-14 for
	 * aarch64_be writes a big-endian .llvm_faultmaps).
	 */
	FL_PARSE_BIG_ENDIAN = 1u << 1,
};

#define FL_DIAG_MAX 256

/*
 * A diagnostic: filled in by any call that fails on malformed input, e.g.
 * ".llvm_stackmaps: table 0: record 3: location 2: ConstantIndex 7 >= NumConstants 2".
 * err is the negative errno the call returned.
 */
struct fl_diag {
	int err;
	char msg[FL_DIAG_MAX];
};

/* Fault kinds of fault map v1. */
enum fl_fault_kind {
	FL_FAULT_LOAD = 1,		/* FaultMaps::FaultingLoad */
	FL_FAULT_LOAD_STORE = 2,	/* FaultMaps::FaultingLoadStore */
	FL_FAULT_STORE = 3,		/* FaultMaps::FaultingStore */
};

/*
 * Returns LLVM's name of a fault kind ("FaultingLoad", ...), or NULL for a
 * kind that does not exist (a static string).  Thread-safe;
 * async-signal-safe.
 */
const char *fl_fault_kind_name(uint32_t kind);

/*
 * Returns faultline's short name of a fault kind, the one its command-line
 * tool, JSON and daemon print ("load", "load-store", "store"), or NULL for a
 * kind that does not exist (a static string).  Thread-safe;
 * async-signal-safe.
 */
const char *fl_fault_kind_label(uint32_t kind);

/* Stack map location kinds. */
enum fl_location_kind {
	FL_LOC_REGISTER = 1,		/* value in DwarfReg */
	FL_LOC_DIRECT = 2,		/* value is DwarfReg + Offset */
	FL_LOC_INDIRECT = 3,		/* value is at [DwarfReg + Offset] */
	FL_LOC_CONSTANT = 4,		/* value is Offset (sign-extended) */
	FL_LOC_CONSTANT_INDEX = 5,	/* value is Constants[Offset] */
};

/*
 * Returns "Register", "Direct", ... or NULL (a static string).
 * Thread-safe; async-signal-safe.
 */
const char *fl_location_kind_name(uint32_t kind);

/* ------------------------------------------------------------------------
 * Fault map cursor
 */

enum fl_faultmap_event_type {
	FL_FM_TABLE = 1,	/* a table header: .header */
	FL_FM_FUNCTION,		/* a FunctionInfo */
	FL_FM_FAULT,		/* a FunctionFaultInfo */
	FL_FM_TABLE_END,	/* the end of the current table */
};

struct fl_faultmap_event {
	enum fl_faultmap_event_type type;
	uint32_t table;		/* index of the table in the section */
	size_t offset;		/* section offset of the item */
	union {
		struct {
			uint8_t version;
			uint8_t reserved0;
			uint16_t reserved1;
			uint32_t num_functions;
		} header;
		struct {
			uint32_t index;		/* within the table */
			uint64_t address;	/* as stored in the section */
			size_t address_offset;	/* section offset of address */
			uint32_t num_faulting_pcs;
			uint32_t reserved;
		} function;
		struct {
			uint32_t index;		/* within the function */
			uint32_t function;	/* index of the function */
			uint64_t function_address;
			uint32_t kind;		/* enum fl_fault_kind, checked */
			uint32_t faulting_pc_offset;
			uint32_t handler_pc_offset;
		} fault;
	};
};

/* Cursor state: treat as opaque. */
struct fl_faultmap_cursor {
	const unsigned char *data;
	size_t size;
	size_t pos;
	uint32_t flags;
	uint32_t table;
	uint32_t num_functions;
	uint32_t function;
	uint64_t function_address;
	uint32_t num_pcs;
	uint32_t pc;
	int state;
	int err;
	struct fl_diag *diag;
};

/*
 * Starts a walk of a fault map section of size bytes at data.  diag may be
 * NULL.  The cursor keeps pointers to data and diag.  Never fails.
 * Thread-safe (on different cursors); async-signal-safe.
 */
void fl_faultmap_cursor_init(struct fl_faultmap_cursor *c, const void *data,
			     size_t size, uint32_t flags, struct fl_diag *diag);

/*
 * Returns 1 with *ev filled in, 0 at the end of the section, -errno on
 * malformed input (with *diag filled in; every later call returns the same
 * error).  Thread-safe (on different cursors; one cursor is one thread's at
 * a time); async-signal-safe.
 */
int fl_faultmap_next(struct fl_faultmap_cursor *c, struct fl_faultmap_event *ev);

/*
 * Walks a whole fault map section.  Returns the number of fault entries
 * (>= 0) on success, -errno on malformed input (with *diag filled in; diag
 * may be NULL).  Thread-safe (on different diags); async-signal-safe.
 */
long fl_faultmap_validate(const void *data, size_t size, uint32_t flags,
			  struct fl_diag *diag);

/* ------------------------------------------------------------------------
 * Stack map cursor
 */

enum fl_stackmap_event_type {
	FL_SM_TABLE = 1,	/* a table header: .header */
	FL_SM_FUNCTION,		/* a StkSizeRecord */
	FL_SM_CONSTANT,		/* a LargeConstant */
	FL_SM_RECORD,		/* a StkMapRecord header */
	FL_SM_LOCATION,		/* a Location of the current record */
	FL_SM_LIVE_OUT,		/* a LiveOut of the current record */
	FL_SM_RECORD_END,	/* the end of the current record */
	FL_SM_TABLE_END,	/* the end of the current table */
};

#define FL_STACK_SIZE_DYNAMIC UINT64_MAX	/* StackSize of a dynamic frame */
#define FL_NO_FUNCTION UINT32_MAX		/* v1: records name no function */

struct fl_stackmap_event {
	enum fl_stackmap_event_type type;
	uint32_t table;		/* index of the table in the section */
	size_t offset;		/* section offset of the item */
	union {
		struct {
			uint8_t version;	/* 1, 2 or 3 */
			uint8_t reserved0;
			uint16_t reserved1;
			uint32_t num_functions;
			uint32_t num_constants;
			uint32_t num_records;
		} header;
		struct {
			uint32_t index;
			uint64_t address;	/* as stored in the section */
			size_t address_offset;	/* section offset of address */
			uint64_t stack_size;
			uint64_t record_count;	/* 0 in v1, which has none */
		} function;
		struct {
			uint32_t index;
			uint64_t value;
		} constant;
		struct {
			uint32_t index;		/* within the table */
			/* the function it belongs to (v2, v3), else FL_NO_FUNCTION */
			uint32_t function;
			uint64_t function_address;	/* 0 in v1 */
			uint64_t stack_size;		/* of the function; 0 in v1 */
			uint64_t id;
			uint32_t instruction_offset;
			uint16_t flags;
			uint16_t num_locations;
			uint16_t num_live_outs;
		} record;
		struct {
			uint32_t record;
			uint16_t index;		/* within the record */
			uint8_t kind;		/* enum fl_location_kind, checked */
			uint8_t reserved0;
			uint16_t size;
			uint16_t dwarf_reg;
			uint16_t reserved1;	/* v3 only */
			int32_t offset;		/* Offset, SmallConstant or index */
			/*
			 * Constant: the small constant sign-extended;
			 * ConstantIndex: the large constant (index checked);
			 * other kinds: 0.
			 */
			uint64_t constant;
		} location;
		struct {
			uint32_t record;
			uint16_t index;
			uint16_t dwarf_reg;
			uint8_t reserved;
			uint8_t size;
		} live_out;
	};
};

/* Cursor state: treat as opaque. */
struct fl_stackmap_cursor {
	const unsigned char *data;
	size_t size;
	size_t pos;
	size_t table_start;
	uint32_t flags;
	uint32_t table;
	uint8_t version;
	uint32_t num_functions;
	uint32_t num_constants;
	uint32_t num_records;
	size_t functions_pos;
	size_t constants_pos;
	uint32_t function;		/* next function / constant index */
	uint32_t constant;
	uint32_t record;		/* index of the current record */
	uint32_t record_function;	/* function of the current record */
	uint64_t records_left_in_function;
	uint16_t num_locations;
	uint16_t location;
	uint16_t num_live_outs;
	uint16_t live_out;
	int state;
	int err;
	struct fl_diag *diag;
};

/*
 * As fl_faultmap_cursor_init, for a stack map section.  Thread-safe (on
 * different cursors); async-signal-safe.
 */
void fl_stackmap_cursor_init(struct fl_stackmap_cursor *c, const void *data,
			     size_t size, uint32_t flags, struct fl_diag *diag);

/*
 * Returns 1 with *ev filled in, 0 at the end of the section, -errno on
 * malformed input (with *diag filled in; every later call returns the same
 * error).  All of a table's header-level checks (counts within the section,
 * sum of RecordCount == NumRecords) are made before its FL_SM_TABLE event.
 * Thread-safe (on different cursors; one cursor is one thread's at a
 * time); async-signal-safe.
 */
int fl_stackmap_next(struct fl_stackmap_cursor *c, struct fl_stackmap_event *ev);

/*
 * Walks a whole stack map section.  Returns the number of records (>= 0) on
 * success, -errno on malformed input (with *diag filled in; diag may be
 * NULL).  Thread-safe (on different diags); async-signal-safe.
 */
long fl_stackmap_validate(const void *data, size_t size, uint32_t flags,
			  struct fl_diag *diag);

/* ------------------------------------------------------------------------
 * Indexed tables
 */

struct fl_faultmap_entry {
	uint64_t function_address;	/* as stored in the section */
	uint64_t faulting_pc;		/* function_address + offset */
	uint64_t handler_pc;		/* function_address + offset */
	uint32_t kind;			/* enum fl_fault_kind */
	uint32_t table;
	uint32_t function;		/* index within its table */
	uint32_t index;			/* index within its function */
};

struct fl_faultmap;

/*
 * Builds an indexed table from a fault map section.  Returns 0 with *out set
 * on success (free with fl_faultmap_free), -errno on malformed input (with
 * *diag filled in) or -ENOMEM.  Thread-safe; not async-signal-safe (it
 * allocates with malloc).
 */
int fl_faultmap_parse(const void *data, size_t size, uint32_t flags,
		      struct fl_faultmap **out, struct fl_diag *diag);
/*
 * Frees fm (NULL: nothing).  No other thread may use fm during the call or
 * after; not async-signal-safe (free).
 */
void fl_faultmap_free(struct fl_faultmap *fm);

/* Returns the number of entries.  Thread-safe; async-signal-safe. */
size_t fl_faultmap_count(const struct fl_faultmap *fm);
/*
 * Returns entry i in section order, or NULL if i is out of range (valid
 * until fl_faultmap_free).  Thread-safe; async-signal-safe.
 */
const struct fl_faultmap_entry *fl_faultmap_entry(const struct fl_faultmap *fm,
						  size_t i);
/*
 * Returns the entry whose faulting_pc is pc (the first in section order if
 * several), or NULL.  O(log n).  Thread-safe; async-signal-safe (a search
 * of the built table's index, nothing allocated).
 */
const struct fl_faultmap_entry *fl_faultmap_lookup(const struct fl_faultmap *fm,
						   uint64_t pc);

struct fl_stackmap_location {
	uint8_t kind;		/* enum fl_location_kind */
	uint16_t size;
	uint16_t dwarf_reg;
	int32_t offset;
	uint64_t constant;	/* see struct fl_stackmap_event */
};

struct fl_stackmap_live_out {
	uint16_t dwarf_reg;
	uint8_t size;
};

struct fl_stackmap_record {
	uint64_t id;
	uint64_t function_address;	/* 0 in v1 */
	uint64_t pc;			/* function_address + instruction_offset */
	uint64_t stack_size;		/* of the function; 0 in v1 */
	uint32_t instruction_offset;
	uint32_t table;
	uint32_t function;		/* FL_NO_FUNCTION in v1 */
	uint32_t index;			/* within its table */
	uint16_t flags;
	uint16_t num_locations;
	uint16_t num_live_outs;
	uint8_t version;
	const struct fl_stackmap_location *locations;
	const struct fl_stackmap_live_out *live_outs;
};

struct fl_stackmap;

/*
 * As fl_faultmap_parse, for a stack map section.  Thread-safe; not
 * async-signal-safe (it allocates with malloc).
 */
int fl_stackmap_parse(const void *data, size_t size, uint32_t flags,
		      struct fl_stackmap **out, struct fl_diag *diag);
/*
 * Frees sm (NULL: nothing).  No other thread may use sm during the call or
 * after; not async-signal-safe (free).
 */
void fl_stackmap_free(struct fl_stackmap *sm);

/* Returns the number of records.  Thread-safe; async-signal-safe. */
size_t fl_stackmap_count(const struct fl_stackmap *sm);
/*
 * Returns record i in section order, or NULL (valid until
 * fl_stackmap_free).  Thread-safe; async-signal-safe.
 */
const struct fl_stackmap_record *fl_stackmap_record(const struct fl_stackmap *sm,
						    size_t i);
/*
 * Returns the number of records with this ID (IDs need not be unique) and,
 * when it is not 0 and records is not NULL, sets *records to an array of
 * them in section order (valid until fl_stackmap_free).  O(log n).
 * Thread-safe; async-signal-safe.
 */
size_t fl_stackmap_find_id(const struct fl_stackmap *sm, uint64_t id,
			   const struct fl_stackmap_record *const **records);
/*
 * Returns a record whose pc is pc (the first in section order), or NULL.
 * O(log n).  Thread-safe; async-signal-safe.
 */
const struct fl_stackmap_record *fl_stackmap_find_pc(const struct fl_stackmap *sm,
						     uint64_t pc);

#ifdef __cplusplus
}
#endif

#endif /* FAULTLINE_FORMAT_H */
