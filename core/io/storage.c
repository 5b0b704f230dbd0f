/*
 * storage.c - opening a storage object from an ops table (stubs for the slots it
 * leaves empty), and the wrappers every storage call goes through (argument checks;
 * fault injection is a wrapping ops table: tests/fault).
 *
 * Not for: which backends exist (backends/builtin.c).
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <peercache/pc_storage.h>

static void stub_close(struct pc_storage *s)
{
	(void)s;
}

static int stub_io(struct pc_storage *s, struct pc_io *ios, size_t n)
{
	(void)s;
	(void)ios;
	(void)n;
	return -EOPNOTSUPP;
}

/* A backend without read_landed: the whole batch, then every transfer landed. */
static int stub_read_landed(struct pc_storage *s, struct pc_io *ios, size_t n,
			    pc_io_landed_fn landed, void *arg)
{
	int ret = s->ops->read(s, ios, n);

	for (size_t i = 0; !ret && i < n; i++)
		landed(arg, ios, i);
	return ret;
}

/* A backend without write_prepared: every transfer prepared, then the whole batch. */
static int stub_write_prepared(struct pc_storage *s, struct pc_io *ios, size_t n,
			       pc_io_prepare_fn prepare, void *arg)
{
	for (size_t i = 0; i < n; i++)
		prepare(arg, ios, i);
	return s->ops->write(s, ios, n);
}

/* The backend's table over the stubs, as fabric.c does: no slot is ever NULL. */
static void fill_ops(struct pc_storage_ops *to, const struct pc_storage_ops *from)
{
	*to = (struct pc_storage_ops){ .size = sizeof(*to), .name = from->name,
				       .obj_size = from->obj_size, .open = from->open,
				       .close = stub_close, .read = stub_io, .write = stub_io,
				       .read_landed = stub_read_landed,
				       .write_prepared = stub_write_prepared };
#define TAKE(slot)                                                                        \
	do {                                                                              \
		if (from->size >= offsetof(struct pc_storage_ops, slot) + sizeof(from->slot) && \
		    from->slot)                                                           \
			to->slot = from->slot;                                            \
	} while (0)
	TAKE(close);
	TAKE(read);
	TAKE(write);
	TAKE(read_landed);
	TAKE(write_prepared);
#undef TAKE
}

int pc_storage_open_ops(const struct pc_storage_ops *ops, const struct pc_storage_params *p,
			struct pc_storage **out)
{
	struct pc_storage *s;
	int ret;

	if (!ops || !ops->open || ops->obj_size < sizeof(*s) || !p || p->size < sizeof(*p) || !p->env)
		return -EINVAL;
	s = calloc(1, ops->obj_size);
	if (!s)
		return -ENOMEM;
	fill_ops(&s->full_ops, ops);
	s->ops = &s->full_ops;
	s->env = p->env;
	s->align = 1;
	ret = ops->open(s, p);
	if (ret) {
		free(s);
		return ret;
	}
	*out = s;
	return 0;
}

void pc_storage_close(struct pc_storage *s)
{
	if (!s)
		return;
	s->ops->close(s);
	free(s);
}

static int check(const struct pc_storage *s, const struct pc_io *ios, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (ios[i].off > s->bytes || ios[i].len > s->bytes - ios[i].off)
			return -EINVAL;
		if (s->align > 1 && (ios[i].off % s->align || ios[i].len % s->align ||
				     (uintptr_t)ios[i].buf % s->align))
			return -EINVAL;
	}
	return 0;
}

/* The checks every call makes, the statuses cleared, then the backend's op: read or
 * write, landed or prepared when given. */
static int run(struct pc_storage *s, bool write, struct pc_io *ios, size_t n,
	       pc_io_landed_fn landed, pc_io_prepare_fn prepare, void *arg)
{
	int ret = check(s, ios, n);

	if (ret)
		return ret;
	for (size_t i = 0; i < n; i++)
		ios[i].status = 0;
	if (landed)
		return s->ops->read_landed(s, ios, n, landed, arg);
	if (prepare)
		return s->ops->write_prepared(s, ios, n, prepare, arg);
	return write ? s->ops->write(s, ios, n) : s->ops->read(s, ios, n);
}

int pc_storage_read(struct pc_storage *s, struct pc_io *ios, size_t n)
{
	return run(s, false, ios, n, NULL, NULL, NULL);
}

int pc_storage_write(struct pc_storage *s, struct pc_io *ios, size_t n)
{
	return run(s, true, ios, n, NULL, NULL, NULL);
}

int pc_storage_read_landed(struct pc_storage *s, struct pc_io *ios, size_t n,
			   pc_io_landed_fn landed, void *arg)
{
	if (!landed)
		return -EINVAL;
	return run(s, false, ios, n, landed, NULL, arg);
}

int pc_storage_write_prepared(struct pc_storage *s, struct pc_io *ios, size_t n,
			      pc_io_prepare_fn prepare, void *arg)
{
	if (!prepare)
		return -EINVAL;
	return run(s, true, ios, n, NULL, prepare, arg);
}
