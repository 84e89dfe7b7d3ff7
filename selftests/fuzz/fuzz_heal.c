// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: the process's side of a healing request (the agent's
 * fl_agent_heal_run, lib/agent/heal_requests.c) on a hostile daemon's
 * request entry, with the real library: fl_init (no agent, no discovery)
 * has run, so code patching is on and no site is registered.  The input is
 * the entry (32 bytes, zero-filled when shorter).  What must hold:
 *  - HEAL and UNHEAL of any address: -ENOENT (it is no site), value 0;
 *  - HEAL_OVER of any count: 0 sites healed, 0 unhealable;
 *  - HEAL_THRESHOLD: a window without a count is -EINVAL (value 0) and
 *    changes nothing; any other arg is the policy now (the process set none of
 *    its own, so FL_HEAL_DEFAULT changes nothing to that), the window
 *    kept only with a count; the completion's value is the policy before,
 *    in the arg's form;
 *  - UNHEAL_AFTER: bit 63 (FL_HEAL_DEFAULT) aside (no quiet time of the
 *    process's own), more than 32 bits is -EINVAL and changes nothing;
 *    else it is the quiet time now, the one before in the completion;
 *  - any other kind is -EOPNOTSUPP;
 *  - the completion's status is 0 or a negative errno, its seq the
 *    request's.
 */
#include <stdbool.h>

#include <faultline/dispatch.h>

#include "agent/internal.h"
#include "fuzz.h"
#include "patch/heal_policy.h"
#include "proto/proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool ready;
	static struct fl_shm_header h;
	struct fl_init_opts o = { .sz = sizeof(o),
				  .flags = FL_INIT_NO_AGENT | FL_INIT_NO_DISCOVERY };
	uint32_t after0, window0, quiet0, after, window, quiet;
	struct fl_shm_entry e, done;
	uint64_t arg;

	if (!ready) {
		CHECK(fl_init(&o) == 0);
		ready = true;
	}
	memset(&e, 0, sizeof(e));
	memcpy(&e, data, size < sizeof(e) ? size : sizeof(e));
	arg = e.value;
	fl_heal_policy_get(&after0, &window0, &quiet0);
	/* As the agent's run() hands it over (lib/agent/requests.c). */
	memset(&done, 0, sizeof(done));
	done.seq = e.seq;
	fl_agent_heal_run(&e, &h, &done);
	fl_heal_policy_get(&after, &window, &quiet);
	if (getenv("FUZZ_HEAL_SAY"))
		fprintf(stderr, "kind %d arg %#llx: status %d value %#llx\n", e.status,
			(unsigned long long)arg, done.status, (unsigned long long)done.value);
	CHECK(done.status <= 0 && done.status >= -4095);
	switch ((uint32_t)e.status) {
	case FL_REQ_HEAL:
	case FL_REQ_UNHEAL:
		CHECK(done.status == -ENOENT && done.value == 0);
		break;
	case FL_REQ_HEAL_OVER:
		CHECK(done.status == 0 && done.value == 0);
		break;
	case FL_REQ_HEAL_THRESHOLD:
		if (!(uint32_t)arg && (arg >> 32 & 0x7fffffffu)) {
			CHECK(done.status == -EINVAL && done.value == 0);
			CHECK(after == after0 && window == window0);
		} else {
			CHECK(done.status == 0);
			CHECK(done.value == (after0 | (uint64_t)window0 << 32));
			CHECK(after == (uint32_t)arg);
			CHECK(window == (after ? (uint32_t)(arg >> 32) & 0x7fffffffu : 0));
		}
		CHECK(quiet == quiet0);
		break;
	case FL_REQ_UNHEAL_AFTER:
		arg &= ~FL_HEAL_DEFAULT;
		if (arg > UINT32_MAX) {
			CHECK(done.status == -EINVAL && quiet == quiet0);
		} else {
			CHECK(done.status == 0 && done.value == quiet0 && quiet == arg);
		}
		CHECK(after == after0 && window == window0);
		break;
	default:
		CHECK(done.status == -EOPNOTSUPP);
		CHECK(after == after0 && window == window0 && quiet == quiet0);
		break;
	}
	return 0;
}
