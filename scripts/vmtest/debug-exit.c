/*
 * debug-exit VALUE: writes VALUE (0..255) to I/O port 0xf4, where QEMU's
 * isa-debug-exit device (-device isa-debug-exit,iobase=0xf4,iosize=0x04)
 * ends QEMU with exit status (VALUE << 1) | 1.  Runs as PID 1's child in
 * the vmtest guest (scripts/vmtest.sh), built with gcc -static: busybox
 * has no outb.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/io.h>

int main(int argc, char **argv)
{
	unsigned long v = argc > 1 ? strtoul(argv[1], NULL, 0) : 0;

	if (ioperm(0xf4, 4, 1) != 0) {
		perror("debug-exit: ioperm");
		return 1;
	}
	outb((unsigned char)v, 0xf4);
	/* Only reached when the device is missing. */
	fprintf(stderr, "debug-exit: QEMU did not exit (no isa-debug-exit?)\n");
	return 1;
}
