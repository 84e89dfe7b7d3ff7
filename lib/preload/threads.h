/* SPDX-License-Identifier: MIT */
/* The program's threads as the shim counts them (threads.c).  Hidden. */
#ifndef FL_PRELOAD_THREADS_H
#define FL_PRELOAD_THREADS_H

/* The constructor: the main thread is the program's, counted from the start. */
__attribute__((visibility("hidden"))) void fl_preload_threads_start(void);

/*
 * pthread_create for the program: counted before the thread exists
 * (fl_preload_thread_created), uncounted if it could not be created
 * (fl_preload_thread_not_created); the new thread calls
 * fl_preload_thread_begins first, which has its end counted.
 */
__attribute__((visibility("hidden"))) void fl_preload_thread_created(void);
__attribute__((visibility("hidden"))) void fl_preload_thread_not_created(void);
__attribute__((visibility("hidden"))) void fl_preload_thread_begins(void);

#endif /* FL_PRELOAD_THREADS_H */
