/*
 * storage.c - the simulator's block file: bytes kept in memory (or, payload-free,
 * not at all), each batch's transfers timed by the node's NVMe model.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "world.h"

struct sim_storage {
	struct pc_storage base;
	struct sim_world *w;
	uint32_t node;
	uint8_t *bytes;			/* NULL when payload-free */
};

static struct sim_storage *to_ss(struct pc_storage *s)
{
	return (struct sim_storage *)s;
}

static int ss_open(struct pc_storage *s, const struct pc_storage_params *p)
{
	struct sim_storage *ss = to_ss(s);
	const struct sim_env *c = (const struct sim_env *)p->env;

	ss->w = p->backend_arg;
	if (!ss->w || !c || c->node == PC_PEER_NONE || !ss->w->nvme[c->node])
		return -ENODEV;
	ss->node = c->node;
	if (ss->w->keep_data) {
		ss->bytes = calloc(1, p->bytes);
		if (!ss->bytes)
			return -ENOMEM;
	}
	s->bytes = p->bytes;
	s->direct = p->direct;
	return 0;
}

static void ss_close(struct pc_storage *s)
{
	free(to_ss(s)->bytes);
}

struct io_wait {
	struct sim_proc *proc;
	int pending;
};

static void io_done(struct sim *s, void *arg)
{
	struct io_wait *iw = arg;

	if (!--iw->pending)
		sim_wake(s, iw->proc);
}

static int ss_rw(struct pc_storage *s, struct pc_io *ios, size_t n, bool write)
{
	struct sim_storage *ss = to_ss(s);
	struct sim_world *w = ss->w;
	struct io_wait iw = { .proc = sim_self(w->s) };
	struct sim_env *e = sim_world_senv(w, ss->node);

	if (w->timing && iw.proc) {
		sim_env_busy(e);
		for (size_t i = 0; i < n; i++) {
			iw.pending++;
			nvme_io(w->nvme[ss->node], write, (double)ios[i].len, io_done, &iw);
		}
		if (iw.pending)
			sim_block(w->s);
		sim_env_busy(e);
	}
	for (size_t i = 0; i < n && ss->bytes; i++) {
		if (write)
			memcpy(ss->bytes + ios[i].off, ios[i].buf, ios[i].len);
		else
			memcpy(ios[i].buf, ss->bytes + ios[i].off, ios[i].len);
	}
	return 0;
}

static int ss_read(struct pc_storage *s, struct pc_io *ios, size_t n)
{
	return ss_rw(s, ios, n, false);
}

static int ss_write(struct pc_storage *s, struct pc_io *ios, size_t n)
{
	return ss_rw(s, ios, n, true);
}

const struct pc_storage_ops sim_storage_ops = {
	.size = sizeof(struct pc_storage_ops),
	.name = "sim",
	.obj_size = sizeof(struct sim_storage),
	.open = ss_open,
	.close = ss_close,
	.read = ss_read,
	.write = ss_write,
};
