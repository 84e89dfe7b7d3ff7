/* SPDX-License-Identifier: MIT */
/* Persistence in the state directory (state.c), a record file per process. */
#ifndef FLD_STATE_H
#define FLD_STATE_H

#include "procs.h"

/*
 * Restores what the records in dir_fd (dir names it in messages) hold, and
 * a state.json of version 1, and keeps dir_fd for saving.  A file that
 * cannot be read is kept aside as NAME.corrupt-TIME.  Returns 0, or
 * -ENAMETOOLONG (then nothing is persisted).
 */
int fld_state_load(int dir_fd, const char *dir);
/* Something of p other than its counts changed (p NULL: nothing in particular). */
void fld_state_changed(struct fld_proc *p);
/* p disconnected (fld_proc_exit): its record is written by a job (work.h). */
void fld_state_exited(struct fld_proc *p);
/* Every tick: writes the records that changed. */
void fld_state_tick(void);
/*
 * Writes every record that is not up to date, at once (the daemon is
 * exiting).  Returns 0 (also with nothing to save to); the processes whose
 * records were committed have their slots acknowledged (fld_proc_saved).
 */
int fld_state_save(void);

#endif /* FLD_STATE_H */
