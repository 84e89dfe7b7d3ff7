/* SPDX-License-Identifier: MIT */
/* Internal interfaces of lib/agent/. */
#ifndef FL_AGENT_INTERNAL_H
#define FL_AGENT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/workers.h"

struct fl_table_source;
struct fl_shm_entry;
struct fl_shm_point_req;
struct fl_shm_point_done;

/*
 * The daemon-only data of a module (sections.c), made by the agent's
 * module_prepare observer and taken over by its module_added.
 */
struct fl_agent_extra {
	/*
	 * The fault map, the stack map, then sm_functions u64 runtime
	 * addresses, or NULL (malloc'd): it goes to the daemon in a sealed
	 * memfd made for each sending, so that no descriptor is held per
	 * module.
	 */
	void *sections;
	size_t sections_size;
	uint32_t faultmap_size;
	uint32_t stackmap_size;
	uint32_t sm_functions;	/* u64 runtime addresses after the stack map */
	/* Per site (num_names of them), its function's name, or NULL (then dladdr is asked). */
	char **names;
	/*
	 * Per named site, its faulting PC's offset from its function's start
	 * (FL_SYMBOL_NO_OFFSET: not known); or NULL, none known.
	 */
	uint32_t *offsets;
	uint32_t num_names;
	/*
	 * A loaded module's file, for naming its sites later
	 * (fl_agent_name_sites), off the path that registers the module; or
	 * NULL (JIT code: no file).
	 */
	char *path;
	/*
	 * The main program's file, which names its module for the daemon (the
	 * loader gives it no name), or NULL.
	 */
	char *exe;
	/*
	 * Where the module's offsets start (MODULE_ADD's base): a loaded
	 * module's load bias, JIT code's start.
	 */
	uint64_t bias;
};

/*
 * The table's module_prepare and module_discard for the agent: returns a
 * struct fl_agent_extra for src (its sections copied; for a loaded module,
 * its file, whose symbols name its sites when they are first sent), or
 * NULL for a module without sites (nothing for the daemon) or without
 * memory.  Without the table's locks; thread-safe.
 */
void *fl_agent_module_prepare(const struct fl_table_source *src);
void fl_agent_module_discard(void *data);

/*
 * The names of the functions of a loaded module's file (path, loaded at
 * bias) that hold each of its n sites (pcs: runtime faulting PCs), from
 * the file's symbol table (the dynamic one alone, which dladdr reads,
 * lacks most functions of an executable): n malloc'd names, NULL for a
 * site without one, or NULL for none at all.  Best effort (a file that
 * cannot be read names nothing); the fl-agent thread's work, off the
 * module's registration (a million sites' names take longer than their
 * registration).  *offsets: per named site, its PC's offset in the
 * function (malloc'd), or NULL.
 */
char **fl_agent_name_sites(const char *path, uint64_t bias, const uint64_t *pcs, uint32_t n,
			   uint32_t **offsets);

/*
 * Sends SYMBOLS messages naming the sites at pcs (names[i] when names and
 * it are not NULL, at offsets[i] in it when offsets is not NULL; else
 * dladdr; sites without a name are left out), as many messages as the
 * size limit needs.  Returns 0 or -errno.
 */
int fl_agent_send_symbols(int fd, uint32_t module, const uint64_t *pcs,
			  const char *const *names, const uint32_t *offsets, uint32_t n,
			  uint32_t *seq);

/*
 * Where faultlined is looked for (paths.c): given (fl_init's socket_path)
 * alone, else $FAULTLINE_SOCKET alone, else the user's own daemon (not
 * root, with XDG_RUNTIME_DIR set), then the system daemon.  Called once,
 * before any agent thread starts.  Not thread-safe.
 */
void fl_agent_paths_resolve(const char *given);

/* Whether there is any path to look at (a path too long is left out).  Thread-safe. */
bool fl_agent_paths_any(void);

/*
 * Connects to the first of the paths where a daemon of root or of this
 * process's uid answers (another uid's is warned about once, and passed
 * over).  Returns the socket (non-blocking, as fl_proto_connect makes it),
 * or -errno: a path's reason other than -ENOENT or -ECONNREFUSED when
 * there is one, else the last path's.  Thread-safe.
 */
int fl_agent_connect(void);

/*
 * The path of the last connection fl_agent_connect made (the first path
 * before any), and whose daemon it is ("system daemon", "user daemon",
 * "FAULTLINE_SOCKET", "fl_init's socket_path"), for messages.  Thread-safe.
 */
const char *fl_agent_path(void);
const char *fl_agent_path_what(void);

/* Logs, at info level, that no daemon answered, and at which paths.  Thread-safe. */
void fl_agent_paths_say_none(void);

/*
 * Starts worker w (core/workers.h): a thread that takes no signals (the
 * application's signals are its own), outside the patcher's handshake,
 * stopped and started again with faultline's other threads.  Returns 0 or
 * -errno (a thread that runs inside the handshake is warned about).
 */
int fl_agent_thread_start(struct fl_worker *w);

/*
 * Runs a healing request (FL_REQ_HEAL_THRESHOLD, FL_REQ_HEAL, ...: the
 * agent's copy of its entry) and fills done's status and value.
 */
struct fl_shm_entry;
struct fl_shm_header;
void fl_agent_heal_run(const struct fl_shm_entry *req, struct fl_shm_header *h,
		       struct fl_shm_entry *done);

/*
 * The fl-requests thread pushed the completion of request completion_seq
 * and took the bell (fl_shm_bell_take): sends DONE on the connection to
 * the daemon (its seq completion_seq), without waiting; when it cannot now
 * (no connection: the fl-agent thread is connecting again; no room: the
 * daemon is behind), sets the bell again, for the next connection or the
 * next completion.  Thread-safe; not async-signal-safe.
 */
void fl_agent_ring_done(uint32_t completion_seq);

/*
 * Tells the daemon (DUMPABLE, docs/protocol.md) that the process's
 * dumpability changed since it was last told, when it did, without
 * waiting: called before each request runs, each time the fl-agent thread
 * wakes, and at exit.  Thread-safe; not async-signal-safe.
 */
void fl_agent_dumpable_check(void);

/* Starts the fl-requests thread.  Returns 0 or -errno. */
int fl_agent_requests_start(void);

/* Whether the process opted in to raw code bytes (fl_agent_allow_patch).  Thread-safe. */
bool fl_agent_patch_allowed(void);

/*
 * Runs a point request (point_requests.c): req and r are the process's
 * copies of the request entry and its slot, allowed whether the process
 * opted in to raw code bytes.  Fills in the completion (*done: status 0
 * or -errno) and its slot (*out: the record before and now, the reason of
 * a refusal).  Changes nothing unless every check passed.  Not
 * async-signal-safe; serialized with the points API.
 */
void fl_agent_point_run(const struct fl_shm_entry *req, const struct fl_shm_point_req *r,
			bool allowed, struct fl_shm_entry *done, struct fl_shm_point_done *out);

#endif /* FL_AGENT_INTERNAL_H */
