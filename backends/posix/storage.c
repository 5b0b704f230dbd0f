/*
 * storage.c - the disk tier's block file on a real filesystem: an unlinked file
 * (O_TMPFILE, or open+unlink where the filesystem lacks it), O_DIRECT with 4 KiB
 * alignment where the filesystem allows it, buffered I/O with one log line where not.
 */
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>


#include <peercache/pc_storage.h>

#include "log.h"

#define DIRECT_ALIGN 4096

struct posix_storage {
	struct pc_storage base;
	int fd;
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
	fd = mkostemp(path, O_CLOEXEC | flags);
	if (fd < 0)
		return -errno;
	unlink(path);
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
		return -EACCES;
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
	s->bytes = p->bytes;
	return 0;
}

static void posix_close(struct pc_storage *s)
{
	close(to_posix(s)->fd);
}

static int posix_rw(struct pc_storage *s, struct pc_io *ios, size_t n, bool write)
{
	int fd = to_posix(s)->fd;

	for (size_t i = 0; i < n; i++) {
		size_t done = 0;

		while (done < ios[i].len) {
			ssize_t r = write ? pwrite(fd, (char *)ios[i].buf + done, ios[i].len - done,
						   (off_t)(ios[i].off + done)) :
					    pread(fd, (char *)ios[i].buf + done, ios[i].len - done,
						  (off_t)(ios[i].off + done));

			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0) {
				ios[i].status = r < 0 ? -errno : -EIO;
				break;
			}
			done += (size_t)r;
		}
	}
	return 0;
}

static int posix_read(struct pc_storage *s, struct pc_io *ios, size_t n)
{
	return posix_rw(s, ios, n, false);
}

static int posix_write(struct pc_storage *s, struct pc_io *ios, size_t n)
{
	return posix_rw(s, ios, n, true);
}

const struct pc_storage_ops posix_storage_ops = {
	.size = sizeof(struct pc_storage_ops),
	.name = "posix",
	.obj_size = sizeof(struct posix_storage),
	.open = posix_open,
	.close = posix_close,
	.read = posix_read,
	.write = posix_write,
};
