/*
 * semihost-exit VALUE: ends QEMU with exit status (VALUE << 1) | 1, as
 * debug-exit does on x86-64, for the arm64 guest of scripts/vmtest.sh,
 * which has no isa-debug-exit: an Arm semihosting SYS_EXIT_EXTENDED call
 * (HLT #0xF000 with x0 = 0x20 and x1 pointing at {ADP_Stopped_ApplicationExit,
 * status}), which QEMU takes from EL0 with -semihosting-config
 * enable=on,target=native,userspace=on.  Without that option the HLT
 * raises SIGILL and the guest's init goes on to poweroff -f.  Runs as PID
 * 1's child in the guest, built with aarch64-linux-gnu-gcc -static.
 */
#include <stdint.h>
#include <stdlib.h>
#include <termios.h>
#include <unistd.h>

#define SYS_EXIT_EXTENDED 0x20
#define ADP_Stopped_ApplicationExit 0x20026

int main(int argc, char **argv)
{
	unsigned long v = argc > 1 ? strtoul(argv[1], NULL, 0) : 0;
	uint64_t block[2] = { ADP_Stopped_ApplicationExit, ((v & 0x7f) << 1) | 1 };

	/* QEMU exits at once: the console's last lines go out first. */
	tcdrain(STDOUT_FILENO);
	{
		/* Set after the call, which may clobber x0 and x1. */
		register uint64_t op __asm__("x0") = SYS_EXIT_EXTENDED;
		register uint64_t *arg __asm__("x1") = block;

		__asm__ volatile("hlt #0xf000" : "+r"(op) : "r"(arg) : "memory");
	}
	/* Only reached when QEMU did not take the call. */
	return 1;
}
