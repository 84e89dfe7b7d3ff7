// SPDX-License-Identifier: MIT
/*
 * A load from NULL raises SIGSEGV (SEGV_MAPERR, si_addr 0) whose signal
 * frame holds what faultline's arm64 dispatch reads: fault_address 0, the
 * faulting PC in uc_mcontext.pc, and in __reserved an FPSIMD record and
 * an ESR record (magic 0x45535201) saying a data abort from EL0 (EC 0x24)
 * that read (WnR, bit 6, clear).  A store to NULL gives the same with WnR
 * set.  qemu-aarch64-static gives no ESR record; a kernel does.
 */
#include <asm/sigcontext.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <ucontext.h>

#include "common.h"

#define ESR_EC(esr) (((esr) >> 26) & 0x3f)
#define ESR_EC_DABT_LOW 0x24
#define ESR_WNR (1u << 6)

/* The faulting instructions, by hand (a compiler may drop an access it
 * can see is to NULL): each function's first instruction is the access. */
__asm__(".text\n"
	".globl vma64_load\n.type vma64_load, %function\n"
	"vma64_load: ldr w0, [x0]\n\tret\n.size vma64_load, .-vma64_load\n"
	".globl vma64_store\n.type vma64_store, %function\n"
	"vma64_store: str wzr, [x0]\n\tret\n.size vma64_store, .-vma64_store\n");
int vma64_load(const int *p);
void vma64_store(int *p);

struct seen {
	int signo, code;
	uintptr_t addr, fault_addr, pc;
	int fpsimd, esr_found;
	uint64_t esr;
	unsigned records;
};

static sigjmp_buf back;
static struct seen seen;

/* Notes the frame and walks __reserved's records up to the magic 0. */
static void on_segv(int sig, siginfo_t *si, void *ctx)
{
	mcontext_t *mc = &((ucontext_t *)ctx)->uc_mcontext;
	size_t off = 0;

	seen.signo = sig;
	seen.code = si->si_code;
	seen.addr = (uintptr_t)si->si_addr;
	seen.fault_addr = mc->fault_address;
	seen.pc = mc->pc;
	while (off + sizeof(struct _aarch64_ctx) <= sizeof(mc->__reserved)) {
		struct _aarch64_ctx *h = (struct _aarch64_ctx *)(mc->__reserved + off);

		if (h->magic == 0 || h->size == 0)
			break;
		seen.records++;
		if (h->magic == FPSIMD_MAGIC)
			seen.fpsimd = 1;
		if (h->magic == ESR_MAGIC) {
			seen.esr_found = 1;
			seen.esr = ((struct esr_context *)h)->esr;
		}
		off += h->size;
	}
	siglongjmp(back, 1);
}

/* Returns 1 if the access faulted as it should, with what it saw printed. */
static int null_access(int store)
{
	uintptr_t insn = store ? (uintptr_t)vma64_store : (uintptr_t)vma64_load;
	const char *what = store ? "store" : "load";

	memset(&seen, 0, sizeof(seen));
	if (sigsetjmp(back, 1) == 0) {
		if (store)
			vma64_store(NULL);
		else
			vma64_load(NULL);
		printf("FAIL a %s from NULL did not fault\n", what);
		return 0;
	}
	printf("%s from NULL: signal %d code %d si_addr %#lx fault_address %#lx pc %s the access; "
	       "%u records, FPSIMD %s, ESR %s",
	       what, seen.signo, seen.code, (unsigned long)seen.addr,
	       (unsigned long)seen.fault_addr, seen.pc == insn ? "at" : "NOT at", seen.records,
	       seen.fpsimd ? "yes" : "no", seen.esr_found ? "yes" : "no");
	if (seen.esr_found)
		printf(" (%#llx: EC %#x, WnR %d)", (unsigned long long)seen.esr,
		       (unsigned)ESR_EC(seen.esr), !!(seen.esr & ESR_WNR));
	printf("\n");
	t_check(seen.signo == SIGSEGV && seen.code == SEGV_MAPERR, "not SIGSEGV/SEGV_MAPERR");
	t_check(seen.addr == 0 && seen.fault_addr == 0, "the fault address is not 0");
	t_check(seen.pc == insn, "pc %#lx is not the access's %#lx", (unsigned long)seen.pc,
		(unsigned long)insn);
	t_check(seen.fpsimd, "no FPSIMD record in __reserved");
	t_check(seen.esr_found, "no ESR record in __reserved");
	t_check(ESR_EC(seen.esr) == ESR_EC_DABT_LOW, "ESR's EC is %#x, not a data abort from EL0",
		(unsigned)ESR_EC(seen.esr));
	t_check(!!(seen.esr & ESR_WNR) == store, "ESR's WnR says %s", store ? "read" : "write");
	return 1;
}

int main(void)
{
	struct sigaction sa = { .sa_sigaction = on_segv, .sa_flags = SA_SIGINFO };
	struct utsname u;

	t_uname(&u);
	sigemptyset(&sa.sa_mask);
	t_check(sigaction(SIGSEGV, &sa, NULL) == 0, "sigaction: %s", strerror(errno));
	if (!null_access(0) || !null_access(1))
		return 1;
	printf("PASS null_access_signal_has_esr_record\n");
	return 0;
}
