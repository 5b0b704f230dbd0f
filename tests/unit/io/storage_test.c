/*
 * storage_test.c - the posix storage backend (unlinked file, O_DIRECT, batched
 * I/O, errors, the fault shim over it) and the posix env.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <peercache/pc_env.h>
#include <peercache/pc_storage.h>

#include "fault.h"
#include "testutil.h"

static int count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	while (d && (e = readdir(d)))
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	if (d)
		closedir(d);
	return n;
}

static void test_unlinked_direct_roundtrip(void)
{
	struct pc_storage_params p = { .size = sizeof(p), .dir = pc_test_tmpdir(), .bytes = 1 << 20, .direct = true };
	struct pc_storage *s = NULL;
	uint8_t *wr = aligned_alloc(4096, 3 * 4096), *rd = aligned_alloc(4096, 3 * 4096);
	struct pc_io w[3], r[3];

	CU_ASSERT_EQUAL_FATAL(pc_storage_open("posix", &p, &s), 0);
	CU_ASSERT_EQUAL(count_entries(p.dir), 0);	/* nobody else can open it */
	CU_ASSERT_TRUE(s->direct);			/* ext4 here allows O_DIRECT */
	CU_ASSERT_EQUAL(s->align, 4096);
	for (int i = 0; i < 3 * 4096; i++)
		wr[i] = (uint8_t)(i * 7 + 1);
	for (int i = 0; i < 3; i++) {
		w[i] = (struct pc_io){ .off = (uint64_t)(i * 2 + 1) * 4096, .buf = wr + i * 4096, .len = 4096 };
		r[i] = (struct pc_io){ .off = w[i].off, .buf = rd + i * 4096, .len = 4096 };
	}
	CU_ASSERT_EQUAL(pc_storage_write(s, w, 3), 0);
	CU_ASSERT_EQUAL(pc_storage_read(s, r, 3), 0);
	for (int i = 0; i < 3; i++)
		CU_ASSERT_EQUAL(r[i].status, 0);
	CU_ASSERT_EQUAL(memcmp(wr, rd, 3 * 4096), 0);
	/* out of range, misaligned */
	r[0].off = (1 << 20) - 2048;
	CU_ASSERT_EQUAL(pc_storage_read(s, r, 1), -EINVAL);
	r[0].off = 100;
	CU_ASSERT_EQUAL(pc_storage_read(s, r, 1), -EINVAL);
	pc_storage_close(s);
	free(wr);
	free(rd);
}

static void test_buffered(void)
{
	struct pc_storage_params p = { .size = sizeof(p), .dir = pc_test_tmpdir(), .bytes = 10000 };
	struct pc_storage *s = NULL;
	char buf[100] = "hello", out[100];
	struct pc_io io = { .off = 9900, .buf = buf, .len = 100 };

	CU_ASSERT_EQUAL_FATAL(pc_storage_open("posix", &p, &s), 0);
	CU_ASSERT_FALSE(s->direct);
	CU_ASSERT_EQUAL(s->align, 1);
	CU_ASSERT_EQUAL(pc_storage_write(s, &io, 1), 0);
	io.buf = out;
	CU_ASSERT_EQUAL(pc_storage_read(s, &io, 1), 0);
	CU_ASSERT_STRING_EQUAL(out, "hello");
	pc_storage_close(s);
}

static void test_open_errors(void)
{
	struct pc_storage_params p = { .size = sizeof(p), .dir = "/nonexistent-dir", .bytes = 4096 };
	struct pc_storage *s = NULL;
	char file[256];
	FILE *f;

	CU_ASSERT_EQUAL(pc_storage_open("posix", &p, &s), -ENOENT);
	snprintf(file, sizeof(file), "%s/plainfile", pc_test_tmpdir());
	f = fopen(file, "w");
	fclose(f);
	p.dir = file;
	CU_ASSERT_EQUAL(pc_storage_open("posix", &p, &s), -ENOTDIR);
	CU_ASSERT_EQUAL(pc_storage_open("nosuch", &p, &s), -ENOENT);
	remove(file);
}

/* A directory on a read-only file system says so (EROFS), not "Permission denied":
 * a tmpfs mounted read-only in a mount namespace of a child's own (root only). */
static void test_read_only(void)
{
	struct pc_storage_params p = { .size = sizeof(p), .bytes = 4096 };
	char dir[256];
	int status;
	pid_t pid;

	if (geteuid()) {
		printf("\n  (not root: no mount namespace to make a read-only directory in)");
		return;
	}
	snprintf(dir, sizeof(dir), "%s/readonly", pc_test_tmpdir());
	CU_ASSERT_EQUAL_FATAL(mkdir(dir, 0755), 0);
	pid = fork();
	CU_ASSERT_FATAL(pid >= 0);
	if (pid == 0) {
		struct pc_storage *s = NULL;

		if (unshare(CLONE_NEWNS) || mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) ||
		    mount("none", dir, "tmpfs", MS_RDONLY, NULL))
			_exit(2);
		p.dir = dir;
		_exit(pc_storage_open("posix", &p, &s) == -EROFS ? 0 : 1);
	}
	CU_ASSERT_EQUAL(waitpid(pid, &status, 0), pid);
	CU_ASSERT_TRUE(WIFEXITED(status));
	CU_ASSERT_EQUAL(WEXITSTATUS(status), 0);	/* 2: no namespace; 1: not EROFS */
	rmdir(dir);
}

static void test_fault_hook(void)
{
	struct pc_storage_params p = { .size = sizeof(p), .dir = pc_test_tmpdir(), .bytes = 8192 };
	struct pc_storage *s = NULL;
	char buf[16] = "x";
	struct pc_io io[2] = { { .off = 0, .buf = buf, .len = 16 }, { .off = 16, .buf = buf, .len = 16 } };
	struct fault *ft = fault_new();
	char back[16];
	struct pc_io rd = { .off = 16, .buf = back, .len = 16 };

	CU_ASSERT_EQUAL_FATAL(pc_storage_open("posix", &p, &s), 0);
	CU_ASSERT_EQUAL_FATAL(fault_wrap_storage(ft, s), 0);
	CU_ASSERT_EQUAL(fault_wrap_storage(ft, s), -EBUSY);
	/* the third and fourth write transfers fail, each with its own error */
	fault_add(ft, (struct fault_rule){ .site = FAULT_IO_WRITE, .nth = 3, .count = 1, .err = -EIO });
	fault_add(ft, (struct fault_rule){ .site = FAULT_IO_WRITE, .nth = 4, .count = 1, .err = -ENOSPC });
	CU_ASSERT_EQUAL(pc_storage_write(s, io, 2), 0);
	CU_ASSERT_EQUAL(io[0].status, 0);
	CU_ASSERT_EQUAL(pc_storage_write(s, io, 2), 0);
	CU_ASSERT_EQUAL(io[0].status, -EIO);
	CU_ASSERT_EQUAL(io[1].status, -ENOSPC);
	CU_ASSERT_EQUAL(fault_hits(ft, 0) + fault_hits(ft, 1), 2);
	/* a corrupt read flips the bit asked for, in the caller's buffer only */
	fault_clear(ft);
	fault_add(ft, (struct fault_rule){ .site = FAULT_IO_READ, .kind = FAULT_CORRUPT, .bit = 9 });
	CU_ASSERT_EQUAL(pc_storage_read(s, &rd, 1), 0);
	CU_ASSERT_EQUAL(rd.status, 0);
	CU_ASSERT_EQUAL(back[1], buf[1] ^ 2);
	fault_unwrap_storage(s);
	CU_ASSERT_EQUAL(pc_storage_read(s, &rd, 1), 0);
	CU_ASSERT_EQUAL(back[1], buf[1]);
	fault_free(ft);
	pc_storage_close(s);
}

/* A call the shim holds (a delay rule) while the test frees its fault: the free
 * waits for it, the call ends as the rule said, and calls after go straight through. */
struct held_write {
	struct pc_storage *s;
	struct pc_io io;
	int ret;
};

static void *write_held(void *arg)
{
	struct held_write *h = arg;

	h->ret = pc_storage_write(h->s, &h->io, 1);
	return NULL;
}

static void test_fault_free_waits_for_calls(void)
{
	struct pc_storage_params p = { .size = sizeof(p), .dir = pc_test_tmpdir(), .bytes = 8192 };
	char buf[16] = "held", back[16] = "";
	struct held_write h = { .io = { .off = 32, .buf = buf, .len = 16 }, .ret = 1 };
	struct pc_io rd = { .off = 32, .buf = back, .len = 16 };
	struct fault *ft = fault_new();
	pthread_t th;

	CU_ASSERT_EQUAL_FATAL(pc_storage_open("posix", &p, &h.s), 0);
	CU_ASSERT_EQUAL_FATAL(fault_wrap_storage(ft, h.s), 0);
	fault_add(ft, (struct fault_rule){ .site = FAULT_IO_WRITE, .kind = FAULT_DELAY,
					   .delay_ns = 200000000 });
	CU_ASSERT_EQUAL_FATAL(pthread_create(&th, NULL, write_held, &h), 0);
	for (int i = 0; i < 2000 && !fault_hits(ft, 0); i++)
		usleep(1000);
	CU_ASSERT_EQUAL(fault_hits(ft, 0), 1);	/* the write is in the shim's delay */
	fault_free(ft);
	CU_ASSERT_EQUAL(pthread_join(th, NULL), 0);
	CU_ASSERT_EQUAL(h.ret, 0);
	CU_ASSERT_EQUAL(h.io.status, 0);
	CU_ASSERT_EQUAL(pc_storage_read(h.s, &rd, 1), 0);
	CU_ASSERT_STRING_EQUAL(back, "held");
	pc_storage_close(h.s);
}

static void bump(void *arg)
{
	__atomic_fetch_add((int *)arg, 1, __ATOMIC_RELAXED);
}

static void test_env(void)
{
	struct pc_env *c = pc_env_posix();
	uint64_t t0 = pc_env_now(c), t1;
	struct pc_task *task;
	int hits = 0;

	pc_env_sleep(c, 2000000);
	t1 = pc_env_now(c);
	CU_ASSERT(t1 - t0 >= 2000000);
	CU_ASSERT_NOT_EQUAL(pc_env_random(c), pc_env_random(c));
	CU_ASSERT_EQUAL_FATAL(pc_env_spawn(c, "bump", bump, &hits, &task), 0);
	pc_env_join(c, task);
	CU_ASSERT_EQUAL(hits, 1);
}

/* Transfers side by side in the file go out as one vectored I/O from scattered
 * buffers; the bytes must land exactly where each transfer says. */
static void test_adjacent_transfers(void)
{
	struct pc_storage_params p = { .size = sizeof(p), .dir = pc_test_tmpdir(), .bytes = 1 << 20, .direct = true };
	struct pc_storage *s = NULL;
	uint8_t *buf[6], *rd = aligned_alloc(4096, 6 * 8192);
	struct pc_io w[6], r[6];
	static const uint64_t off[6] = { 0, 8192, 16384, 24576, 65536, 73728 };

	CU_ASSERT_EQUAL_FATAL(pc_storage_open("posix", &p, &s), 0);
	for (int i = 0; i < 6; i++) {
		buf[i] = aligned_alloc(4096, 8192);	/* separate buffers, file ranges adjacent */
		memset(buf[i], 'a' + i, 8192);
		w[i] = (struct pc_io){ .off = off[i], .buf = buf[i], .len = 8192 };
		r[5 - i] = (struct pc_io){ .off = off[i], .buf = rd + (5 - i) * 8192, .len = 8192 };
	}
	CU_ASSERT_EQUAL(pc_storage_write(s, w, 6), 0);
	CU_ASSERT_EQUAL(pc_storage_read(s, r, 6), 0);	/* reversed: no two adjacent */
	for (int i = 0; i < 6; i++) {
		CU_ASSERT_EQUAL(w[i].status, 0);
		CU_ASSERT_EQUAL(r[i].status, 0);
		CU_ASSERT_EQUAL(rd[(5 - i) * 8192], 'a' + i);
		CU_ASSERT_EQUAL(rd[(5 - i) * 8192 + 8191], 'a' + i);
		/* and in file order: two runs of adjacent reads */
		r[i] = (struct pc_io){ .off = off[i], .buf = rd + i * 8192, .len = 8192 };
	}
	memset(rd, 0, 6 * 8192);
	CU_ASSERT_EQUAL(pc_storage_read(s, r, 6), 0);
	for (int i = 0; i < 6; i++) {
		CU_ASSERT_EQUAL(r[i].status, 0);
		CU_ASSERT_EQUAL(rd[i * 8192 + 4000], 'a' + i);
		free(buf[i]);
	}
	free(rd);
	pc_storage_close(s);
}

/* s's backend as a build whose ops table ends before the slot at offset size. */
static struct pc_storage *open_predating(struct pc_storage *s, struct pc_storage_params p, size_t size)
{
	struct pc_storage_ops bare = *s->ops;
	struct pc_storage *old = NULL;

	bare.size = (uint32_t)size;
	bare.name = "old";
	p.env = pc_env_posix();
	CU_ASSERT_EQUAL_FATAL(pc_storage_open_ops(&bare, &p, &old), 0);
	return old;
}

/* read_landed: each transfer landed once, its bytes in place when it is. */
struct landed_log {
	int times[40];
	int early;			/* landed before its bytes were in */
	int errs;			/* landed with an error status */
};

static void note_landed(void *arg, struct pc_io *ios, size_t i)
{
	struct landed_log *l = arg;
	const uint8_t *b = ios[i].buf;

	l->times[i]++;
	if (ios[i].status)
		l->errs++;
	else if (b[0] != (uint8_t)(ios[i].off / 4096) || b[ios[i].len - 1] != (uint8_t)(ios[i].off / 4096))
		l->early++;
}

static void check_landed(struct pc_storage *s, const uint64_t *blk, size_t n, uint8_t *rd)
{
	struct pc_io r[40];
	struct landed_log l = { .early = 0 };

	memset(rd, 0xee, n * 4096);
	for (size_t i = 0; i < n; i++)
		r[i] = (struct pc_io){ .off = blk[i] * 4096, .buf = rd + i * 4096, .len = 4096 };
	CU_ASSERT_EQUAL(pc_storage_read_landed(s, r, n, note_landed, &l), 0);
	for (size_t i = 0; i < n; i++) {
		CU_ASSERT_EQUAL(l.times[i], 1);
		CU_ASSERT_EQUAL(r[i].status, 0);
	}
	CU_ASSERT_EQUAL(l.early, 0);
	CU_ASSERT_EQUAL(l.errs, 0);
}

static void test_read_landed(void)
{
	struct pc_storage_params p = { .size = sizeof(p), .dir = pc_test_tmpdir(), .bytes = 1 << 20, .direct = true };
	struct pc_storage *s = NULL, *old = NULL;
	uint8_t *wr = aligned_alloc(4096, 64 * 4096), *rd = aligned_alloc(4096, 40 * 4096);
	struct pc_io w = { .off = 0, .buf = wr, .len = 64 * 4096 }, one = { .buf = rd, .len = 4096 };
	uint64_t run[40], scattered[12], single[1] = { 7 };
	struct landed_log l = { .early = 0 };
	struct fault *ft = fault_new();

	CU_ASSERT_EQUAL_FATAL(pc_storage_open("posix", &p, &s), 0);
	for (int i = 0; i < 64; i++)
		memset(wr + i * 4096, i, 4096);		/* block i holds byte i */
	CU_ASSERT_EQUAL_FATAL(pc_storage_write(s, &w, 1), 0);
	for (int i = 0; i < 40; i++)
		run[i] = (uint64_t)i + 3;		/* one run, longer than an AIO run */
	for (int i = 0; i < 12; i++)
		scattered[i] = (uint64_t)(i * 5 + 1);	/* no two adjacent */
	check_landed(s, run, 40, rd);
	check_landed(s, scattered, 12, rd);
	check_landed(s, single, 1, rd);
	CU_ASSERT_EQUAL(pc_storage_read_landed(s, &one, 1, NULL, NULL), -EINVAL);
	/* through the fault shim: its faults, then every transfer landed */
	CU_ASSERT_EQUAL_FATAL(fault_wrap_storage(ft, s), 0);
	fault_add(ft, (struct fault_rule){ .site = FAULT_IO_READ, .nth = 2, .count = 1, .err = -EIO });
	{
		struct pc_io r[3];

		for (int i = 0; i < 3; i++)
			r[i] = (struct pc_io){ .off = (uint64_t)(i + 1) * 4096, .buf = rd + i * 4096, .len = 4096 };
		CU_ASSERT_EQUAL(pc_storage_read_landed(s, r, 3, note_landed, &l), 0);
		CU_ASSERT_EQUAL(l.times[0] + l.times[1] + l.times[2], 3);
		CU_ASSERT_EQUAL(r[1].status, -EIO);
		CU_ASSERT_EQUAL(l.errs, 1);
		CU_ASSERT_EQUAL(l.early, 0);
	}
	fault_unwrap_storage(s);
	fault_free(ft);
	/* a backend whose table predates read_landed: read, then each landed */
	old = open_predating(s, p, offsetof(struct pc_storage_ops, read_landed));
	CU_ASSERT_EQUAL_FATAL(pc_storage_write(old, &w, 1), 0);
	check_landed(old, run, 40, rd);
	check_landed(old, scattered, 12, rd);
	pc_storage_close(old);
	pc_storage_close(s);
	free(wr);
	free(rd);
}

/* write_prepared: each transfer prepared once, in order, before its bytes go out. */
struct prepared_log {
	int times[40];
	size_t next;			/* the transfer expected next */
	int out_of_order;
};

/* Fills the transfer with the byte its file offset names (its 4 KiB block number). */
static void note_prepared(void *arg, struct pc_io *ios, size_t i)
{
	struct prepared_log *l = arg;

	l->times[i]++;
	l->out_of_order += i != l->next++;
	memset(ios[i].buf, (uint8_t)(ios[i].off / 4096), ios[i].len);
}

/* n transfers of len bytes at the 4 KiB blocks blk[], prepared from garbage; then read
 * back: every byte is the one its prepare wrote. */
static void check_prepared(struct pc_storage *s, const uint64_t *blk, size_t n, size_t len, uint8_t *buf)
{
	struct pc_io w[40], r = { .len = len };
	struct prepared_log l = { .next = 0 };
	uint8_t *back = aligned_alloc(4096, len);

	memset(buf, 0xee, n * len);
	for (size_t i = 0; i < n; i++)
		w[i] = (struct pc_io){ .off = blk[i] * 4096, .buf = buf + i * len, .len = len };
	CU_ASSERT_EQUAL(pc_storage_write_prepared(s, w, n, note_prepared, &l), 0);
	CU_ASSERT_EQUAL(l.out_of_order, 0);
	for (size_t i = 0; i < n; i++) {
		CU_ASSERT_EQUAL(l.times[i], 1);
		CU_ASSERT_EQUAL(w[i].status, 0);
		r.off = w[i].off;
		r.buf = back;
		memset(back, 0, len);
		CU_ASSERT_EQUAL(pc_storage_read(s, &r, 1), 0);
		CU_ASSERT_EQUAL(back[0], (uint8_t)blk[i]);
		CU_ASSERT_EQUAL(back[len - 1], (uint8_t)blk[i]);
	}
	free(back);
}

static void test_write_prepared(void)
{
	struct pc_storage_params p = { .size = sizeof(p), .dir = pc_test_tmpdir(), .bytes = 8 << 20, .direct = true };
	struct pc_storage *s = NULL, *old = NULL;
	uint8_t *buf = aligned_alloc(4096, 3 << 21);
	struct pc_io one = { .buf = buf, .len = 4096 };
	uint64_t run[40], scattered[12], single[1] = { 7 }, big[3] = { 0, 512, 1024 };
	struct fault *ft = fault_new();

	CU_ASSERT_EQUAL_FATAL(pc_storage_open("posix", &p, &s), 0);
	CU_ASSERT_TRUE(s->direct);
	for (int i = 0; i < 40; i++)
		run[i] = (uint64_t)i + 3;		/* one run, longer than an AIO run */
	for (int i = 0; i < 12; i++)
		scattered[i] = (uint64_t)(i * 5 + 1);	/* no two adjacent */
	check_prepared(s, run, 40, 4096, buf);
	check_prepared(s, scattered, 12, 4096, buf);
	check_prepared(s, single, 1, 4096, buf);
	check_prepared(s, big, 3, 2 << 20, buf);		/* one run of blocks over RUN_BYTES */
	CU_ASSERT_EQUAL(pc_storage_write_prepared(s, &one, 1, NULL, NULL), -EINVAL);
	/* through the fault shim: every transfer prepared, then its faults */
	CU_ASSERT_EQUAL_FATAL(fault_wrap_storage(ft, s), 0);
	fault_add(ft, (struct fault_rule){ .site = FAULT_IO_WRITE, .nth = 2, .count = 1, .err = -EIO });
	{
		struct pc_io w[3];
		struct prepared_log l = { .next = 0 };

		for (int i = 0; i < 3; i++)
			w[i] = (struct pc_io){ .off = (uint64_t)(i + 1) * 4096, .buf = buf + i * 4096, .len = 4096 };
		CU_ASSERT_EQUAL(pc_storage_write_prepared(s, w, 3, note_prepared, &l), 0);
		CU_ASSERT_EQUAL(l.times[0] + l.times[1] + l.times[2], 3);
		CU_ASSERT_EQUAL(l.out_of_order, 0);
		CU_ASSERT_EQUAL(w[0].status, 0);
		CU_ASSERT_EQUAL(w[1].status, -EIO);
		CU_ASSERT_EQUAL(w[2].status, 0);
	}
	fault_unwrap_storage(s);
	fault_free(ft);
	/* a backend whose table predates write_prepared: each prepared, then write */
	old = open_predating(s, p, offsetof(struct pc_storage_ops, write_prepared));
	check_prepared(old, run, 40, 4096, buf);
	check_prepared(old, scattered, 12, 4096, buf);
	pc_storage_close(old);
	pc_storage_close(s);
	free(buf);
}

static CU_TestInfo tests[] = {
	{ "adjacent transfers, one vectored I/O", test_adjacent_transfers },
	{ "read_landed: each transfer once, its bytes in", test_read_landed },
	{ "write_prepared: each transfer once, in order, before it goes out", test_write_prepared },
	{ "unlinked file, O_DIRECT, batched round trip", test_unlinked_direct_roundtrip },
	{ "buffered I/O", test_buffered },
	{ "missing or bad directory", test_open_errors },
	{ "a read-only directory: EROFS", test_read_only },
	{ "fault shim: EIO, ENOSPC, a flipped bit", test_fault_hook },
	{ "fault shim: freeing the fault waits for a call it holds", test_fault_free_waits_for_calls },
	{ "posix env: time, sleep, random, tasks", test_env },
	CU_TEST_INFO_NULL,
};

PC_TEST_MAIN({ "storage", NULL, NULL, NULL, NULL, tests })
