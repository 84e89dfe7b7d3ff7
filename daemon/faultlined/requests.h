/* SPDX-License-Identifier: MIT */
/*
 * REQUEST and POINT (requests.c): a client's request to a registered
 * process (heal threshold, ping; a patch point write or reset, a stack map
 * invalidation), pushed into the process's request ring, and its answer
 * when the process's completion comes back (or the timeout, or the process
 * is gone).  The process says when: DONE (fld_requests_done).  Loop thread
 * only.
 */
#ifndef FLD_REQUESTS_H
#define FLD_REQUESTS_H

#include "loop.h"
#include "procs.h"
#include "proto/proto.h"

/*
 * A decoded REQUEST from c: pushed into the process's ring (the doorbell
 * rung), or answered at once with an ERROR (no such process visible to c,
 * too many in flight, ring full).  Its answer waits at most timeout_ms.
 */
void fld_request(struct fld_client *c, const struct fl_msg *m, unsigned timeout_ms);
/*
 * A decoded POINT from c (a patch point write or reset, a stack map
 * invalidation): refused at once with an ERROR when c may not ask it of the
 * process (docs/protocol.md), else pushed with its slot as fld_request
 * does.  Its answer is a REPLY with the record before and now
 * (docs/json.md), also when the process refused it.
 */
void fld_request_point(struct fld_client *c, const struct fl_msg *m, unsigned timeout_ms);
/*
 * Starts looking at the rings every millisecond while requests are in
 * flight to a process that sends no DONE (an older agent: a timerfd
 * watched by loop); without it, such a process's completions wait for the
 * loop's tick.  Returns 0 or -errno.
 */
int fld_requests_start(struct fld_loop *loop);
void fld_requests_stop(void);

/*
 * The heal policy every process is given when it registers (--heal-after:
 * FL_REQ_HEAL_THRESHOLD's arg with FL_HEAL_DEFAULT, 0: none; --unheal-after:
 * seconds, 0: none); fld_request_policy gives it to p.
 */
void fld_requests_policy(uint64_t heal_arg, uint32_t unheal_after_s);
void fld_request_policy(struct fld_proc *p);
/* Matches the completions in the processes' rings to their requests, and times them out. */
void fld_requests_poll(void);
/*
 * p sent DONE (its HELLO set FL_HELLO_DONE; the caller checked): its
 * completions are answered, and its bell set again while requests to it
 * are still in flight.  Returns how many requests were answered, or
 * -EBADMSG when p's completion ring is broken (p's client is dropped).
 */
int fld_requests_done(struct fld_proc *p);
/* c is gone: its requests' answers are not sent (the requests stay in flight). */
void fld_requests_forget(struct fld_client *c);

#endif /* FLD_REQUESTS_H */
