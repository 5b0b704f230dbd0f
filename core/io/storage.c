/*
 * storage.c - opening storage objects from the built-in list, and the wrappers every
 * storage call goes through (fault injection, argument checks).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "backends.h"

int pc_storage_open_ops(const struct pc_storage_ops *ops, const struct pc_storage_params *p,
			struct pc_storage **out)
{
	struct pc_storage *s;
	int ret;

	if (ops->size < sizeof(*ops) || ops->obj_size < sizeof(*s))
		return -EINVAL;
	s = calloc(1, ops->obj_size);
	if (!s)
		return -ENOMEM;
	s->ops = ops;
	s->env = p->env ? p->env : pc_env_posix();
	s->align = 1;
	ret = ops->open(s, p);
	if (ret) {
		free(s);
		return ret;
	}
	*out = s;
	return 0;
}

int pc_storage_open(const char *name, const struct pc_storage_params *p,
		    struct pc_storage **out)
{
	for (size_t i = 0; pc_builtin_storages[i]; i++)
		if (!strcmp(pc_builtin_storages[i]->name, name))
			return pc_storage_open_ops(pc_builtin_storages[i], p, out);
	return -ENOENT;
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

static int run(struct pc_storage *s, bool write, struct pc_io *ios, size_t n)
{
	int ret = check(s, ios, n);

	if (ret)
		return ret;
	for (size_t i = 0; i < n; i++)
		ios[i].status = 0;
	if (s->fault && s->fault(s->fault_arg, write, ios, n))
		return 0;	/* the shim failed some transfers and ran none */
	return write ? s->ops->write(s, ios, n) : s->ops->read(s, ios, n);
}

int pc_storage_read(struct pc_storage *s, struct pc_io *ios, size_t n)
{
	return run(s, false, ios, n);
}

int pc_storage_write(struct pc_storage *s, struct pc_io *ios, size_t n)
{
	return run(s, true, ios, n);
}
