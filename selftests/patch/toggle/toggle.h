/* SPDX-License-Identifier: MIT */
/* libtoggle.so (toggle.c). */
#ifndef FL_TEST_PATCH_TOGGLE_H
#define FL_TEST_PATCH_TOGGLE_H

/* Blocks (on) or unblocks SIGTRAP; returns pthread_sigmask's result. */
int toggle_sigtrap(int on);

#endif
