// SPDX-License-Identifier: MIT
/*
 * Names for instruction addresses of other processes (symbolize.h).
 *
 * An address in a file mapping becomes a file offset (address - start +
 * the mapping's offset), then an ELF address through the PT_LOAD segment
 * that holds that file offset, then a function through .symtab (or .dynsym
 * for a stripped file): fl_elf_file_address and fl_elf_function_containing
 * of the discovery layer.  This is what perf does too; it is independent of
 * the load bias, so it works for PIE, shared libraries and ET_EXEC alike.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <faultline/discovery.h>

#include "symbolize.h"

/* Bounds on what is read from files other processes control. */
#define MAX_MAPS_TEXT (64u << 20)
#define MAX_PERFMAP (256u << 20)
#define MAX_ELF (1u << 30)

struct mapping {
	uint64_t start, end;	/* [start, end) */
	uint64_t pgoff;		/* file offset of start */
	uint64_t inode;
	char *path;		/* "" for anonymous memory, "[vdso]", a path */
	uint64_t seen;		/* snapshot sequence number when last seen */
};

struct jit_entry {
	uint64_t start, size;
	char *name;
};

struct proc {
	uint32_t pid;
	char comm[32];
	struct mapping *maps;
	size_t nmaps, capmaps;
	uint64_t maps_hash;	/* of the last /proc/PID/maps text read */
	uid_t uid;		/* owner of /proc/PID (its euid); 0 when unknown */
	bool perfmap_read;
	char *perfmap_path;
	struct jit_entry *jit;	/* in file order: later lines win */
	size_t njit, capjit;
};

struct elf_file {
	char *path;
	struct fl_elf *elf;	/* NULL: not an ELF file we could read */
};

struct cli_sym {
	struct proc *procs;
	size_t nprocs, capprocs;
	struct elf_file *files;
	size_t nfiles, capfiles;
	uint64_t seq;
};

/* Grows *arr (of *cap elements of size sz) to hold n + 1.  Returns 0 or -ENOMEM. */
static int grow(void *arr, size_t *cap, size_t n, size_t sz)
{
	void **p = arr;
	size_t c = *cap ? *cap * 2 : 16;
	void *q;

	if (n < *cap)
		return 0;
	q = realloc(*p, c * sz);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = c;
	return 0;
}

struct cli_sym *cli_sym_new(void)
{
	return calloc(1, sizeof(struct cli_sym));
}

void cli_sym_free(struct cli_sym *s)
{
	size_t i, j;

	if (!s)
		return;
	for (i = 0; i < s->nprocs; i++) {
		struct proc *p = &s->procs[i];

		for (j = 0; j < p->nmaps; j++)
			free(p->maps[j].path);
		for (j = 0; j < p->njit; j++)
			free(p->jit[j].name);
		free(p->maps);
		free(p->jit);
		free(p->perfmap_path);
	}
	for (i = 0; i < s->nfiles; i++) {
		free(s->files[i].path);
		fl_elf_close(s->files[i].elf);
	}
	free(s->procs);
	free(s->files);
	free(s);
}

static struct proc *find_proc(const struct cli_sym *s, uint32_t pid)
{
	for (size_t i = 0; i < s->nprocs; i++)
		if (s->procs[i].pid == pid)
			return &s->procs[i];
	return NULL;
}

bool cli_sym_known(const struct cli_sym *s, uint32_t pid)
{
	return find_proc(s, pid) != NULL;
}

const char *cli_sym_comm(const struct cli_sym *s, uint32_t pid)
{
	struct proc *p = find_proc(s, pid);

	return p && p->comm[0] ? p->comm : NULL;
}

/*
 * Opens a file another user may control (a perf map in /tmp, a path from
 * someone's maps) as root: no symlink (flags), nothing but a regular file
 * (a FIFO would block, a device never end), owned by owner or root unless
 * owner is (uid_t)-1.  Returns the fd, or -1 with errno set.
 */
static int open_regular(const char *path, int flags, uid_t owner)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | flags);
	struct stat st;

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) ||
	    (owner != (uid_t)-1 && st.st_uid != owner && st.st_uid != 0)) {
		close(fd);
		errno = EPERM;
		return -1;
	}
	return fd;
}

/*
 * Reads all of fd (at most max bytes) into a NUL-terminated buffer and
 * closes fd.  Returns it, or NULL with errno set (EFBIG: longer than max).
 */
static char *read_fd(int fd, size_t *len, size_t max)
{
	size_t cap = 16384, n = 0;
	char *buf = malloc(cap), *q;
	ssize_t r;

	if (!buf) {
		close(fd);
		errno = ENOMEM;
		return NULL;
	}
	for (;;) {
		if (n > max) {
			free(buf);
			close(fd);
			errno = EFBIG;
			return NULL;
		}
		if (cap - n < 4096) {
			q = realloc(buf, cap * 2);
			if (!q) {
				free(buf);
				close(fd);
				errno = ENOMEM;
				return NULL;
			}
			buf = q;
			cap *= 2;
		}
		r = read(fd, buf + n, cap - n - 1);
		if (r < 0) {
			int e = errno;

			if (e == EINTR)
				continue;
			free(buf);
			close(fd);
			errno = e;
			return NULL;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	buf[n] = 0;
	if (len)
		*len = n;
	return buf;
}

static uint64_t fnv1a(const char *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;

	while (n--) {
		h ^= (unsigned char)*p++;
		h *= 0x100000001b3ull;
	}
	return h;
}

/* Remembers one executable mapping, or marks the one already known as seen. */
static int add_mapping(struct proc *p, const struct mapping *m, uint64_t seq)
{
	for (size_t i = 0; i < p->nmaps; i++) {
		struct mapping *o = &p->maps[i];

		if (o->start == m->start && o->end == m->end && o->pgoff == m->pgoff &&
		    o->inode == m->inode && !strcmp(o->path, m->path)) {
			o->seen = seq;
			return 0;
		}
	}
	if (grow(&p->maps, &p->capmaps, p->nmaps, sizeof(*p->maps)))
		return -ENOMEM;
	p->maps[p->nmaps] = *m;
	p->maps[p->nmaps].path = strdup(m->path);
	if (!p->maps[p->nmaps].path)
		return -ENOMEM;
	p->maps[p->nmaps].seen = seq;
	p->nmaps++;
	return 0;
}

int cli_sym_snapshot(struct cli_sym *s, uint32_t pid)
{
	char path[64], *text, *line, *next;
	struct proc *p;
	size_t len;
	uint64_t h;
	struct stat st;
	uid_t owner;
	int fd, err = 0;

	snprintf(path, sizeof(path), "/proc/%u/maps", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	/* The owner, for its perf map; taken from the open file: the same
	 * process.  Unknown: root's perf map only. */
	owner = fstat(fd, &st) ? 0 : st.st_uid;
	text = read_fd(fd, &len, MAX_MAPS_TEXT);
	if (!text)
		return errno == ENOENT ? -ESRCH : -errno;
	/* A process that has exited (a zombie) has empty maps: keep the old ones. */
	if (len == 0) {
		free(text);
		return -ESRCH;
	}

	p = find_proc(s, pid);
	if (!p) {
		if (grow(&s->procs, &s->capprocs, s->nprocs, sizeof(*s->procs))) {
			free(text);
			return -ENOMEM;
		}
		p = &s->procs[s->nprocs++];
		memset(p, 0, sizeof(*p));
		p->pid = pid;
	}
	p->uid = owner;

	snprintf(path, sizeof(path), "/proc/%u/comm", pid);
	FILE *f = fopen(path, "re");
	if (f) {
		if (fgets(p->comm, sizeof(p->comm), f))
			p->comm[strcspn(p->comm, "\n")] = 0;
		fclose(f);
	}

	/* Most snapshots find nothing new: skip the merge then. */
	h = fnv1a(text, len);
	if (h == p->maps_hash) {
		free(text);
		return 0;
	}
	p->maps_hash = h;
	s->seq++;

	for (line = text; line && *line; line = next) {
		struct mapping m = { 0 };
		char perms[8];
		unsigned long long start, end, pgoff, inode;
		unsigned int dmaj, dmin;
		int pos = 0;

		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &start, &end, perms,
			   &pgoff, &dmaj, &dmin, &inode, &pos) < 7 || pos == 0)
			continue;
		/* Only code faults at its own address: only x mappings matter. */
		if (strlen(perms) < 3 || perms[2] != 'x')
			continue;
		m.start = start;
		m.end = end;
		m.pgoff = pgoff;
		m.inode = inode;
		m.path = line + pos;
		if (add_mapping(p, &m, s->seq)) {
			err = -ENOMEM;
			break;
		}
	}
	free(text);
	return err;
}

/* ------------------------------------------------------------------------
 * ELF files
 */

/*
 * Opens the ELF file at f->path (a regular file, read whole, at most
 * MAX_ELF bytes); a file that is not one we can read is not an error: the
 * module is named, only its functions are not.
 */
static void load_elf(struct elf_file *f)
{
	struct fl_elf_opts o = { .sz = sizeof(o), .flags = FL_ELF_ANY_MACHINE };
	int fd = open_regular(f->path, 0, (uid_t)-1);
	size_t len;
	char *bytes;

	if (fd < 0)
		return;
	bytes = read_fd(fd, &len, MAX_ELF);
	if (bytes && fl_elf_open_mem(bytes, len, &o, &f->elf, NULL) != 0)
		f->elf = NULL;
	free(bytes);
}

static struct elf_file *get_elf(struct cli_sym *s, const char *path)
{
	struct elf_file *f;

	for (size_t i = 0; i < s->nfiles; i++)
		if (!strcmp(s->files[i].path, path))
			return &s->files[i];
	if (grow(&s->files, &s->capfiles, s->nfiles, sizeof(*s->files)))
		return NULL;
	f = &s->files[s->nfiles];
	memset(f, 0, sizeof(*f));
	f->path = strdup(path);
	if (!f->path)
		return NULL;
	s->nfiles++;
	/* An unreadable or odd file still names the module: only its functions are lost. */
	load_elf(f);
	return f;
}

/* ------------------------------------------------------------------------
 * Perf maps: "START SIZE name" per line, hexadecimal (HotSpot writes a 0x
 * prefix, which strtoull takes with base 16).
 */

static void read_perfmap(struct proc *p)
{
	char path[64], *text, *line, *next;
	int fd;

	p->perfmap_read = true;
	snprintf(path, sizeof(path), "/tmp/perf-%u.map", p->pid);
	/* As perf: the process's own file (or root's), not a link someone
	 * else left in /tmp. */
	fd = open_regular(path, O_NOFOLLOW, p->uid);
	if (fd < 0)
		return;
	text = read_fd(fd, NULL, MAX_PERFMAP);
	if (!text)
		return;
	p->perfmap_path = strdup(path);
	for (line = text; line && *line; line = next) {
		unsigned long long start, size;
		char *end;

		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		errno = 0;
		start = strtoull(line, &end, 16);
		if (errno || end == line || *end != ' ')
			continue;
		line = end;
		size = strtoull(line, &end, 16);
		if (errno || end == line || *end != ' ' || size == 0)
			continue;
		while (*end == ' ')
			end++;
		if (!*end)
			continue;
		if (grow(&p->jit, &p->capjit, p->njit, sizeof(*p->jit)))
			break;
		p->jit[p->njit].name = strdup(end);
		if (!p->jit[p->njit].name)
			break;
		p->jit[p->njit].start = start;
		p->jit[p->njit].size = size;
		p->njit++;
	}
	free(text);
}

/* The last perf map line whose range holds ip: code the JIT freed and
 * reused is described again further down. */
static const struct jit_entry *find_jit(const struct proc *p, uint64_t ip)
{
	for (size_t i = p->njit; i > 0; i--) {
		const struct jit_entry *j = &p->jit[i - 1];

		if (ip >= j->start && ip - j->start < j->size)
			return j;
	}
	return NULL;
}

/* ------------------------------------------------------------------------
 * Lookup
 */

static const struct mapping *find_mapping(const struct proc *p, uint64_t ip)
{
	const struct mapping *best = NULL;

	for (size_t i = 0; i < p->nmaps; i++) {
		const struct mapping *m = &p->maps[i];

		if (ip >= m->start && ip < m->end && (!best || m->seen > best->seen))
			best = m;
	}
	return best;
}

static bool is_file(const struct mapping *m)
{
	return m->path[0] == '/';
}

void cli_sym_lookup(struct cli_sym *s, uint32_t pid, uint64_t ip,
		    struct cli_sym_info *info)
{
	struct proc *p = find_proc(s, pid);
	const struct mapping *m = NULL;
	const struct jit_entry *j;
	const struct elf_file *f;
	uint64_t off;

	memset(info, 0, sizeof(*info));
	if (!p) {
		/* Never seen running, but its JIT may have left a perf map. */
		if (grow(&s->procs, &s->capprocs, s->nprocs, sizeof(*s->procs)))
			return;
		p = &s->procs[s->nprocs++];
		memset(p, 0, sizeof(*p));
		p->pid = pid;
		/* Its owner is unknown (and its PID may be someone else's by
		 * now): only a perf map root wrote is believed. */
		p->uid = 0;
	}
	m = find_mapping(p, ip);
	if (m && is_file(m)) {
		info->kind = CLI_SYM_FILE;
		info->module = m->path;
		off = ip - m->start + m->pgoff;
		info->module_offset = off;
		f = get_elf(s, m->path);
		if (!f || !f->elf || fl_elf_file_address(f->elf, off, &info->module_offset))
			return;
		info->module_offset_is_address = true;
		info->function = fl_elf_function_containing(f->elf, info->module_offset,
							    &info->function_offset);
		return;
	}
	if (!p->perfmap_read)
		read_perfmap(p);
	j = find_jit(p, ip);
	if (j) {
		info->kind = CLI_SYM_JIT;
		info->module = p->perfmap_path;
		info->function = j->name;
		info->function_offset = ip - j->start;
		info->module_offset = m ? ip - m->start : 0;
		return;
	}
	if (m) {
		info->kind = CLI_SYM_ANON;
		info->module = m->path;
		info->module_offset = ip - m->start;
	}
}

char *cli_sym_format(const struct cli_sym_info *info, char *buf, size_t len)
{
	const char *mod = info->module;
	const char *base;

	switch (info->kind) {
	case CLI_SYM_FILE:
		base = strrchr(mod, '/');
		base = base && base[1] ? base + 1 : mod;
		if (info->function)
			snprintf(buf, len, "%s+0x%" PRIx64 " (%s+0x%" PRIx64 ")", base,
				 info->module_offset, info->function, info->function_offset);
		else
			snprintf(buf, len, "%s+0x%" PRIx64, base, info->module_offset);
		break;
	case CLI_SYM_JIT:
		snprintf(buf, len, "[jit] %s+0x%" PRIx64, info->function, info->function_offset);
		break;
	case CLI_SYM_ANON:
		snprintf(buf, len, "%s+0x%" PRIx64, mod[0] ? mod : "[anon]", info->module_offset);
		break;
	default:
		snprintf(buf, len, "?");
		break;
	}
	return buf;
}
