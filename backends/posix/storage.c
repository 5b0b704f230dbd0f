/*
 * storage.c - the disk tier's block file on a real filesystem: an unlinked file
 * (O_TMPFILE, or open+unlink where the filesystem lacks it), O_DIRECT with 4 KiB
 * alignment where the filesystem allows it, buffered I/O with one log line where not.
 *
 * A batch is cut into runs of transfers that follow each other in the file; each run
 * is one vectored I/O. With O_DIRECT all runs of a batch are in flight at once
 * (Linux native AIO), so that blocks scattered over the file are read at the
 * device's queue depth, not one at a time. A read_landed or write_prepared batch goes
 * that way even when it is one run (cut into pieces of at most RUN_MAX transfers and
 * RUN_BYTES), so that the caller's work on one piece (a checksum, a copy) overlaps
 * the I/O of the others: each piece read is landed as it comes back; each piece
 * written is prepared, then submitted on its own, while the earlier ones are in flight.
 */
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <peercache/pc_storage.h>

#include "base/log.h"

#define DIRECT_ALIGN 4096
#define AIO_DEPTH 128		/* runs in flight per batch */
#define RUN_MAX 8		/* transfers per AIO run */
#define RUN_BYTES (1u << 20)	/* bytes per AIO run, past its first transfer */

/* An AIO context and room for one batch's requests; each call takes one. */
struct aio_slot {
	aio_context_t ctx;
	struct iocb cb[AIO_DEPTH];
	struct iocb *cbp[AIO_DEPTH];
	struct io_event ev[AIO_DEPTH];
	bool done[AIO_DEPTH];
	struct iovec v[AIO_DEPTH][RUN_MAX];
	struct aio_slot *next;
};

struct posix_storage {
	struct pc_storage base;
	int fd;
	pthread_mutex_t lock;		/* the idle AIO slots */
	struct aio_slot *idle;
	bool no_aio;			/* io_setup refused: synchronous I/O */
};

/* One call's transfers and what runs around them. */
struct batch {
	struct pc_io *ios;
	size_t n;
	bool write;
	pc_io_landed_fn landed;		/* read_landed: each transfer as it lands */
	pc_io_prepare_fn prepare;	/* write_prepared: each transfer before it goes out */
	void *arg;
};

static struct posix_storage *to_posix(struct pc_storage *s)
{
	return (struct posix_storage *)s;
}

/* An unlinked file in dir: nobody else can open it and it vanishes with us. */
static int open_unlinked(const char *dir, int flags)
{
	char path[PATH_MAX];
	int fd;

	fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC | flags, 0600);
	if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR && errno != ENOENT))
		return fd >= 0 ? fd : -errno;
	if (snprintf(path, sizeof(path), "%s/.peercache-XXXXXX", dir) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	/* Created without O_DIRECT and unlinked at once, O_DIRECT set after: a file
	 * system that refuses O_DIRECT creates the file and then fails the open, which
	 * would leave it behind under a name nobody removes. */
	fd = mkostemp(path, O_CLOEXEC);
	if (fd < 0)
		return -errno;
	unlink(path);
	if (flags && fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | flags)) {
		int err = errno;

		close(fd);
		return -err;
	}
	return fd;
}

static int posix_open(struct pc_storage *s, const struct pc_storage_params *p)
{
	struct posix_storage *ps = to_posix(s);
	struct stat st;
	int fd = -EINVAL;

	if (!p->dir || stat(p->dir, &st))
		return -ENOENT;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	if (access(p->dir, W_OK | X_OK))
		return -errno;	/* EROFS on a read-only file system, EACCES, ENOENT */
	if (p->direct) {
		fd = open_unlinked(p->dir, O_DIRECT);
		if (fd >= 0) {
			s->direct = true;
			s->align = DIRECT_ALIGN;
		} else {
			pc_warn("disk %s: O_DIRECT not available (%s); using buffered I/O",
				p->dir, strerror(-fd));
		}
	}
	if (fd < 0)
		fd = open_unlinked(p->dir, 0);
	if (fd < 0)
		return fd;
	/* Reserve the blocks now so a full disk is an error at start, not a spill
	 * failure later. */
	if (fallocate(fd, 0, 0, (off_t)p->bytes)) {
		int err = errno;

		if (err != EOPNOTSUPP || ftruncate(fd, (off_t)p->bytes)) {
			close(fd);
			return -(err == EOPNOTSUPP ? errno : err);
		}
	}
	ps->fd = fd;
	pthread_mutex_init(&ps->lock, NULL);
	s->bytes = p->bytes;
	return 0;
}

static void posix_close(struct pc_storage *s)
{
	struct posix_storage *ps = to_posix(s);

	while (ps->idle) {
		struct aio_slot *a = ps->idle;

		ps->idle = a->next;
		syscall(SYS_io_destroy, a->ctx);
		free(a);
	}
	pthread_mutex_destroy(&ps->lock);
	close(ps->fd);
}

/* Transfers whose file ranges follow each other go out as one preadv/pwritev: a
 * batch of blocks the disk pool laid out side by side is one sequential I/O. */
static size_t run_of(const struct pc_io *ios, size_t n)
{
	size_t k = 1;

	while (k < n && k < IOV_MAX && ios[k].off == ios[k - 1].off + ios[k - 1].len)
		k++;
	return k;
}

static void set_status(struct pc_io *ios, size_t n, int status)
{
	for (size_t i = 0; i < n; i++)
		ios[i].status = status;
}

/* One AIO run: transfers that follow each other in the file, at most RUN_MAX of
 * them and, past the first, at most RUN_BYTES, so that a batch of large blocks is
 * landed or prepared block by block. */
static size_t piece_of(const struct pc_io *ios, size_t n)
{
	size_t k = 1, bytes = ios[0].len;

	while (k < n && k < RUN_MAX && bytes + ios[k].len <= RUN_BYTES &&
	       ios[k].off == ios[k - 1].off + ios[k - 1].len)
		bytes += ios[k++].len;
	return k;
}

/* Transfers at..at+k-1 of the batch are in (read_landed's callback). */
static void land(const struct batch *b, size_t at, size_t k)
{
	for (size_t j = 0; b->landed && j < k; j++)
		b->landed(b->arg, b->ios, at + j);
}

/* Transfers at..at+k-1 of the batch are about to go out (write_prepared's callback). */
static void prepare_run(const struct batch *b, size_t at, size_t k)
{
	for (size_t j = 0; b->prepare && j < k; j++)
		b->prepare(b->arg, b->ios, at + j);
}

/* One run, synchronously, from byte `done` on. */
static void run_sync(int fd, struct pc_io *ios, size_t k, bool write, size_t done)
{
	struct iovec v[IOV_MAX];
	size_t first = 0, total = 0;

	for (size_t j = 0; j < k; j++) {
		v[j] = (struct iovec){ .iov_base = ios[j].buf, .iov_len = ios[j].len };
		total += ios[j].len;
	}
	/* skip what already went through */
	for (size_t skip = done; skip && first < k;) {
		if (skip >= v[first].iov_len) {
			skip -= v[first].iov_len;
			first++;
		} else {
			v[first].iov_base = (char *)v[first].iov_base + skip;
			v[first].iov_len -= skip;
			skip = 0;
		}
	}
	while (done < total) {
		ssize_t r = write ? pwritev(fd, v + first, (int)(k - first), (off_t)(ios[0].off + done)) :
				    preadv(fd, v + first, (int)(k - first), (off_t)(ios[0].off + done));

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			set_status(ios, k, r < 0 ? -errno : -EIO);
			return;
		}
		done += (size_t)r;
		while (r > 0 && first < k) {
			if ((size_t)r >= v[first].iov_len) {
				r -= (ssize_t)v[first].iov_len;
				first++;
			} else {
				v[first].iov_base = (char *)v[first].iov_base + r;
				v[first].iov_len -= (size_t)r;
				r = 0;
			}
		}
	}
}

static struct aio_slot *aio_take(struct posix_storage *ps)
{
	struct aio_slot *a;

	pthread_mutex_lock(&ps->lock);
	a = ps->idle;
	if (a)
		ps->idle = a->next;
	pthread_mutex_unlock(&ps->lock);
	if (a || ps->no_aio)
		return a;
	a = calloc(1, sizeof(*a));
	if (a && syscall(SYS_io_setup, AIO_DEPTH, &a->ctx)) {
		pc_dbg("disk: io_setup: %s; synchronous I/O", strerror(errno));
		ps->no_aio = true;
		free(a);
		a = NULL;
	}
	return a;
}

static void aio_give(struct posix_storage *ps, struct aio_slot *a)
{
	pthread_mutex_lock(&ps->lock);
	a->next = ps->idle;
	ps->idle = a;
	pthread_mutex_unlock(&ps->lock);
}

/*
 * io_getevents failed with requests in flight: the context is destroyed (which waits
 * for them, so no transfer lands in a buffer the caller reuses) and never reused;
 * the runs not reaped count as failed.
 */
static void aio_abandon(struct aio_slot *a, const struct batch *b, const size_t *at, const size_t *cnt,
			long nr, long sent, long got)
{
	pc_warn("disk: io_getevents: %s; abandoning %ld transfer(s)", strerror(errno), sent - got);
	syscall(SYS_io_destroy, a->ctx);
	a->ctx = 0;
	for (long x = 0; x < nr; x++) {
		if (x < sent && a->done[x])
			continue;
		set_status(b->ios + at[x], cnt[x], -EIO);
		land(b, at[x], cnt[x]);
	}
}

/*
 * Transfers from..n-1: up to AIO_DEPTH runs (see piece_of) in flight at once, each
 * landed as it comes back. A prepared batch prepares and submits its runs one at a
 * time; any other submits them together. Runs the kernel would not take, or that
 * came back short, finish synchronously. Returns the transfer it stopped before.
 */
static size_t aio_wave(struct posix_storage *ps, struct aio_slot *a, const struct batch *b, size_t from)
{
	size_t at[AIO_DEPTH], len[AIO_DEPTH], cnt[AIO_DEPTH], i = from;
	struct pc_io *ios = b->ios;
	long nr = 0, sent = 0, got = 0;

	while (i < b->n && nr < AIO_DEPTH) {
		size_t k = piece_of(ios + i, b->n - i);

		at[nr] = i;
		cnt[nr] = k;
		len[nr] = 0;
		for (size_t j = 0; j < k; j++) {
			a->v[nr][j] = (struct iovec){ .iov_base = ios[i + j].buf, .iov_len = ios[i + j].len };
			len[nr] += ios[i + j].len;
		}
		a->cb[nr] = (struct iocb){ .aio_fildes = (uint32_t)ps->fd, .aio_data = (uint64_t)nr,
					   .aio_lio_opcode = b->write ? IOCB_CMD_PWRITEV : IOCB_CMD_PREADV,
					   .aio_buf = (uint64_t)(uintptr_t)a->v[nr], .aio_nbytes = k,
					   .aio_offset = (int64_t)ios[i].off };
		a->cbp[nr] = &a->cb[nr];
		a->done[nr] = false;
		i += k;
		if (b->prepare) {
			prepare_run(b, at[nr], k);
			/* after a refusal the rest of the wave runs synchronously, in order */
			if (sent == nr && syscall(SYS_io_submit, a->ctx, 1L, a->cbp + nr) == 1)
				sent++;
		}
		nr++;
	}
	while (!b->prepare && sent < nr) {
		long r = syscall(SYS_io_submit, a->ctx, nr - sent, a->cbp + sent);

		if (r <= 0)
			break;
		sent += r;
	}
	while (got < sent) {
		long r = syscall(SYS_io_getevents, a->ctx, 1, sent - got, a->ev, NULL);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			aio_abandon(a, b, at, cnt, nr, sent, got);
			return i;
		}
		for (long e = 0; e < r; e++) {
			size_t x = (size_t)a->ev[e].data;
			int64_t res = a->ev[e].res;

			a->done[x] = true;
			if (res < 0)
				set_status(ios + at[x], cnt[x], (int)res);
			else if ((size_t)res < len[x])
				run_sync(ps->fd, ios + at[x], cnt[x], b->write, (size_t)res);
			land(b, at[x], cnt[x]);
		}
		got += r;
	}
	/* what the kernel did not take runs here */
	for (long x = sent; x < nr; x++) {
		run_sync(ps->fd, ios + at[x], cnt[x], b->write, 0);
		land(b, at[x], cnt[x]);
	}
	return i;
}

static int posix_rw(struct pc_storage *s, const struct batch *b)
{
	struct posix_storage *ps = to_posix(s);
	struct aio_slot *a = NULL;

	/* several runs on a direct file, or one long run landed or prepared piece by
	 * piece: in flight together */
	if (s->direct && b->n > 1 &&
	    (run_of(b->ios, b->n) < b->n || ((b->landed || b->prepare) && piece_of(b->ios, b->n) < b->n)))
		a = aio_take(ps);
	for (size_t i = 0; i < b->n;) {
		size_t k;

		if (a && a->ctx) {
			i = aio_wave(ps, a, b, i);
			continue;
		}
		k = run_of(b->ios + i, b->n - i);
		prepare_run(b, i, k);
		run_sync(ps->fd, b->ios + i, k, b->write, 0);
		land(b, i, k);
		i += k;
	}
	if (a && a->ctx)
		aio_give(ps, a);
	else
		free(a);	/* abandoned: its context is gone */
	return 0;
}

static int posix_read(struct pc_storage *s, struct pc_io *ios, size_t n)
{
	return posix_rw(s, &(struct batch){ .ios = ios, .n = n });
}

static int posix_read_landed(struct pc_storage *s, struct pc_io *ios, size_t n,
			     pc_io_landed_fn landed, void *arg)
{
	return posix_rw(s, &(struct batch){ .ios = ios, .n = n, .landed = landed, .arg = arg });
}

static int posix_write(struct pc_storage *s, struct pc_io *ios, size_t n)
{
	return posix_rw(s, &(struct batch){ .ios = ios, .n = n, .write = true });
}

static int posix_write_prepared(struct pc_storage *s, struct pc_io *ios, size_t n,
				pc_io_prepare_fn prepare, void *arg)
{
	return posix_rw(s, &(struct batch){ .ios = ios, .n = n, .write = true, .prepare = prepare,
					    .arg = arg });
}

const struct pc_storage_ops posix_storage_ops = {
	.size = sizeof(struct pc_storage_ops),
	.name = "posix",
	.obj_size = sizeof(struct posix_storage),
	.open = posix_open,
	.close = posix_close,
	.read = posix_read,
	.write = posix_write,
	.read_landed = posix_read_landed,
	.write_prepared = posix_write_prepared,
};
