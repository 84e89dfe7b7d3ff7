// SPDX-License-Identifier: MIT
/*
 * A thread that blocks SIGBUS and touches the region past the limit: the
 * kernel's SIGBUS cannot be blocked (the process dies of it), and neither
 * can the helper thread's forward: there, the thread would wait in the
 * fault for ever, so the process dies of SIGBUS too.  A child, with an
 * alarm against a hang.
 */
#include <pthread.h>

#include "common.h"

static uint32_t mode;

static void *toucher(void *arg)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGBUS);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	(void)*(volatile uint8_t *)arg;
	return NULL;
}

static void child(void *arg)
{
	struct fl_region *r;
	pthread_t t;

	(void)arg;
	fl_set_log(NULL, NULL);		/* the helper says why it kills */
	t_init();
	r = t_region(16 * t_page, t_page, NULL, mode);
	pthread_create(&t, NULL, toucher, (uint8_t *)fl_region_base(r) + 5 * t_page);
	pthread_join(t, NULL);
}

int main(int argc, char **argv)
{
	int status;

	mode = t_start(argc, argv);
	status = t_child(child, NULL);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 77)
		t_skip("no userfaultfd region (see the child's message)");
	t_check(WIFSIGNALED(status) && WTERMSIG(status) == SIGBUS, "the child was %s",
		t_status(status));
	printf("PASS %s (%s)\n", t_name, mode ? "helper" : "sigbus");
	return 0;
}
