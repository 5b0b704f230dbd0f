/*
 * fault.c - the fault shim (fault.h): rules, and the fabric and storage ops tables
 * that apply them before handing the rest of a call to the wrapped table.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fault.h"

#define FAULT_MAX_RULES 32
#define FAULT_MAX_WRAPS 64

struct fault {
	pthread_mutex_t lock;
	pthread_cond_t idle;	/* calls reached 0; with wraps_lock */
	unsigned calls;		/* shimmed calls running on its rules; wraps_lock */
	struct fault_rule rules[FAULT_MAX_RULES];
	uint64_t seen[FAULT_MAX_RULES], hits[FAULT_MAX_RULES];
	int nr;
};

/* One wrapped object: the table it had, and the one it has now. */
struct wrap {
	void *obj;
	struct fault *ft;
	bool fabric, maps;
	const struct pc_fabric_ops *fabric_inner;
	const struct pc_storage_ops *storage_inner;
	struct pc_fabric_ops fabric_ops;
	struct pc_storage_ops storage_ops;
};

static pthread_mutex_t wraps_lock = PTHREAD_MUTEX_INITIALIZER;
static struct wrap wraps[FAULT_MAX_WRAPS];

struct fault *fault_new(void)
{
	struct fault *ft = calloc(1, sizeof(*ft));

	if (ft) {
		pthread_mutex_init(&ft->lock, NULL);
		pthread_cond_init(&ft->idle, NULL);
	}
	return ft;
}

/* Give w's object its table back and free the entry. Its shim table stays as it was:
 * a caller that loaded it before this finds no entry and goes to the object's own
 * table (shim_io, shim_post, shim_call). wraps_lock held. */
static void restore(struct wrap *w)
{
	if (w->fabric) {
		((struct pc_fabric *)w->obj)->ops = w->fabric_inner;
		((struct pc_fabric *)w->obj)->maps = w->maps;
	} else {
		((struct pc_storage *)w->obj)->ops = w->storage_inner;
	}
	w->obj = NULL;
	w->ft = NULL;
}

/* Unwrap obj, or everything ft wraps (obj NULL), then wait until no shimmed call
 * runs on the rules of a fault it unwrapped: after this none looks at them. */
static void unwrap(void *obj, struct fault *ft)
{
	struct fault *was[FAULT_MAX_WRAPS];
	int n = 0;

	pthread_mutex_lock(&wraps_lock);
	for (int i = 0; i < FAULT_MAX_WRAPS; i++)
		if (wraps[i].obj && (obj ? wraps[i].obj == obj : wraps[i].ft == ft)) {
			was[n++] = wraps[i].ft;
			restore(&wraps[i]);
		}
	for (int i = 0; i < n; i++)
		while (was[i]->calls)
			pthread_cond_wait(&was[i]->idle, &wraps_lock);
	pthread_mutex_unlock(&wraps_lock);
}

void fault_free(struct fault *ft)
{
	if (!ft)
		return;
	unwrap(NULL, ft);
	pthread_cond_destroy(&ft->idle);
	pthread_mutex_destroy(&ft->lock);
	free(ft);
}

int fault_add(struct fault *ft, struct fault_rule rule)
{
	int i;

	if (!rule.nth)
		rule.nth = 1;
	if (!rule.err)
		rule.err = -EIO;
	pthread_mutex_lock(&ft->lock);
	i = ft->nr < FAULT_MAX_RULES ? ft->nr++ : -ENOSPC;
	if (i >= 0) {
		ft->rules[i] = rule;
		ft->seen[i] = ft->hits[i] = 0;
	}
	pthread_mutex_unlock(&ft->lock);
	return i;
}

void fault_clear(struct fault *ft)
{
	pthread_mutex_lock(&ft->lock);
	ft->nr = 0;
	pthread_mutex_unlock(&ft->lock);
}

uint64_t fault_hits(struct fault *ft, int i)
{
	uint64_t v;

	if (i < 0 || i >= FAULT_MAX_RULES)
		return 0;
	pthread_mutex_lock(&ft->lock);
	v = ft->hits[i];
	pthread_mutex_unlock(&ft->lock);
	return v;
}

/* The first rule that hits one more match at site (every matching rule counts it),
 * or NULL. Called with ft->lock held. */
static const struct fault_rule *match(struct fault *ft, enum fault_site site, uint8_t kind,
				      uint32_t peer, uint16_t opcode)
{
	const struct fault_rule *hit = NULL;

	for (int i = 0; i < ft->nr; i++) {
		const struct fault_rule *r = &ft->rules[i];
		uint64_t k;

		if (r->site != site && !(r->site == FAULT_OP_ANY && site == (enum fault_site)kind))
			continue;
		if (r->only_peer && r->only_peer - 1 != peer)
			continue;
		if (site == FAULT_RPC && r->opcode && r->opcode != opcode)
			continue;
		k = ++ft->seen[i];
		if (k >= r->nth && (!r->count || k < r->nth + r->count)) {
			ft->hits[i]++;
			if (!hit)
				hit = r;
		}
	}
	return hit;
}

/* Start a shimmed call of obj: a copy of its entry, its fault held until done(). False
 * when obj was unwrapped meanwhile (the caller then goes to the object's own table). */
static bool find(void *obj, struct wrap *out)
{
	bool found = false;

	pthread_mutex_lock(&wraps_lock);
	for (int i = 0; i < FAULT_MAX_WRAPS && !found; i++) {
		if (wraps[i].obj == obj) {
			*out = wraps[i];
			out->ft->calls++;
			found = true;
		}
	}
	pthread_mutex_unlock(&wraps_lock);
	return found;
}

static void done(struct fault *ft)
{
	pthread_mutex_lock(&wraps_lock);
	if (!--ft->calls)
		pthread_cond_broadcast(&ft->idle);
	pthread_mutex_unlock(&wraps_lock);
}

/* Flip one bit of the bytes a and b hold end to end. */
static void flip(uint8_t *a, size_t alen, uint8_t *b, size_t blen, uint32_t bit)
{
	size_t bits = (alen + blen) * 8, at;

	if (!bits)
		return;
	at = bit % bits;
	if (at / 8 < alen)
		a[at / 8] ^= (uint8_t)(1u << (at % 8));
	else
		b[at / 8 - alen] ^= (uint8_t)(1u << (at % 8));
}

static void *dup_bytes(const void *p, size_t len)
{
	void *q = malloc(len ? len : 1);

	if (q && len)
		memcpy(q, p, len);
	return q;
}

/* The matches that act before anything runs: an exit now, else the longest delay. */
static void exit_or_wait(struct pc_env *env, const struct fault_rule *const *why, size_t n)
{
	uint64_t delay = 0;

	for (size_t i = 0; i < n; i++) {
		if (why[i] && why[i]->kind == FAULT_EXIT)
			_exit(FAULT_EXIT_STATUS);
		if (why[i] && why[i]->kind == FAULT_DELAY && why[i]->delay_ns > delay)
			delay = why[i]->delay_ns;
	}
	if (delay)
		pc_env_sleep(env, delay);
}

/* What one shimmed call keeps per element: the rule that hit it, its copy for the
 * wrapped table (run: elem bytes each) and where that copy came from, buffers to
 * free. */
struct scratch {
	const struct fault_rule **why;
	void *run;
	size_t *at;
	void **tmp;
	size_t ntmp;
};

static bool scratch_get(struct scratch *x, size_t n, size_t elem, size_t tmp_per)
{
	n = n ? n : 1;
	x->why = calloc(n, sizeof(*x->why));
	x->run = calloc(n, elem);
	x->at = calloc(n, sizeof(*x->at));
	x->ntmp = n * tmp_per;
	x->tmp = calloc(x->ntmp ? x->ntmp : 1, sizeof(*x->tmp));
	return x->why && x->run && x->at && x->tmp;
}

static void scratch_put(struct scratch *x)
{
	for (size_t i = 0; x->tmp && i < x->ntmp; i++)
		free(x->tmp[i]);
	free(x->tmp);
	free(x->at);
	free(x->run);
	free(x->why);
}

/* ------------------------------------------------------------------ fabric */

static int shim_post(struct pc_fabric *f, struct pc_op *ops, size_t n)
{
	struct scratch x;
	const struct fault_rule **why, *whole;
	struct pc_op *run;
	size_t *at, m = 0;
	void **tmp;
	struct wrap w;
	int ret = -ENOMEM;

	if (!find(f, &w))
		return f->ops->post(f, ops, n);
	if (!scratch_get(&x, n, sizeof(struct pc_op), 2))
		goto out;
	why = x.why, run = x.run, at = x.at, tmp = x.tmp;
	pthread_mutex_lock(&w.ft->lock);
	whole = match(w.ft, FAULT_POST, 0, UINT32_MAX, 0);
	for (size_t i = 0; i < n && !whole; i++)
		why[i] = match(w.ft, (enum fault_site)ops[i].kind, ops[i].kind, ops[i].peer, 0);
	pthread_mutex_unlock(&w.ft->lock);
	if (whole) {
		ret = whole->err;
		goto out;
	}
	exit_or_wait(f->env, why, n);
	for (size_t i = 0; i < n; i++) {
		const struct fault_rule *r = why[i];
		struct pc_op *op;

		if (r && r->kind == FAULT_FAIL) {
			ops[i].status = r->err;
			continue;
		}
		if (r && r->kind == FAULT_DROP) {
			ops[i].status = 0;
			if (ops[i].kind == PC_OP_CAS)	/* "won", but nothing changed */
				memcpy(ops[i].local, &ops[i].compare, 8);
			continue;
		}
		pc_op_prepare(&ops[i]);	/* faults act on the bytes as they would go */
		op = &run[m];
		*op = ops[i];
		at[m++] = i;
		if (!r || ops[i].kind != PC_OP_WRITE)
			continue;
		if (r->kind == FAULT_TEAR) {
			uint32_t keep = (op->head_len + op->len) / 2;

			if (keep <= op->head_len) {
				op->head_len = keep;
				op->len = 0;
			} else {
				op->len = keep - op->head_len;
			}
		} else if (r->kind == FAULT_CORRUPT) {
			tmp[2 * i] = op->head = dup_bytes(op->head, op->head_len);
			tmp[2 * i + 1] = op->local = dup_bytes(op->local, op->len);
			op->lreg = NULL;
			if (!op->head || !op->local) {
				ret = -ENOMEM;
				goto out;
			}
			flip(op->head, op->head_len, op->local, op->len, r->bit);
		}
	}
	ret = m ? w.fabric_inner->post(f, run, m) : 0;
	for (size_t j = 0; j < m; j++) {
		size_t i = at[j];

		ops[i].status = run[j].status;
		if (!ret && !run[j].status && why[i] && why[i]->kind == FAULT_CORRUPT &&
		    ops[i].kind == PC_OP_READ)
			flip(ops[i].head, ops[i].head_len, ops[i].local, ops[i].len, why[i]->bit);
	}
out:
	scratch_put(&x);
	done(w.ft);
	return ret;
}

static int shim_call(struct pc_fabric *f, struct pc_rpc *rpcs, size_t n)
{
	struct scratch x;
	const struct fault_rule **why;
	struct pc_rpc *run;
	size_t *at, m = 0;
	struct wrap w;
	int ret = -ENOMEM;

	if (!find(f, &w))
		return f->ops->call(f, rpcs, n);
	if (!scratch_get(&x, n, sizeof(struct pc_rpc), 0))
		goto out;
	why = x.why, run = x.run, at = x.at;
	pthread_mutex_lock(&w.ft->lock);
	for (size_t i = 0; i < n; i++)
		why[i] = match(w.ft, FAULT_RPC, 0, rpcs[i].peer, rpcs[i].opcode);
	pthread_mutex_unlock(&w.ft->lock);
	exit_or_wait(f->env, why, n);
	for (size_t i = 0; i < n; i++) {
		if (why[i] && (why[i]->kind == FAULT_FAIL || why[i]->kind == FAULT_DROP)) {
			rpcs[i].status = why[i]->kind == FAULT_FAIL ? why[i]->err : -ETIMEDOUT;
			rpcs[i].resp = (struct pc_msg){ 0 };
			continue;
		}
		run[m] = rpcs[i];
		at[m++] = i;
	}
	ret = m ? w.fabric_inner->call(f, run, m) : 0;
	for (size_t j = 0; j < m; j++) {
		struct pc_rpc *r = &rpcs[at[j]];

		r->status = run[j].status;
		r->resp = run[j].resp;
		if (!ret && why[at[j]] && why[at[j]]->kind == FAULT_CORRUPT)
			flip(r->resp.data, r->resp.len, NULL, 0, why[at[j]]->bit);
	}
out:
	scratch_put(&x);
	done(w.ft);
	return ret;
}

static int stub_map(struct pc_fabric *f, uint32_t peer, uint64_t peer_inc, uint32_t rkey,
		    uint64_t raddr, uint64_t len, unsigned access, void **addr)
{
	(void)f, (void)peer, (void)peer_inc, (void)rkey, (void)raddr, (void)len, (void)access;
	(void)addr;
	return -EOPNOTSUPP;
}

static struct wrap *take_wrap(void *obj, int *err)
{
	struct wrap *free_one = NULL;

	for (int i = 0; i < FAULT_MAX_WRAPS; i++) {
		if (wraps[i].obj == obj) {
			*err = -EBUSY;
			return NULL;
		}
		if (!wraps[i].obj && !free_one)
			free_one = &wraps[i];
	}
	*err = free_one ? 0 : -ENOSPC;
	return free_one;
}

int fault_wrap_fabric(struct fault *ft, struct pc_fabric *f)
{
	struct wrap *w;
	int err;

	pthread_mutex_lock(&wraps_lock);
	w = take_wrap(f, &err);
	if (w) {
		*w = (struct wrap){ .obj = f, .ft = ft, .fabric = true, .maps = f->maps,
				    .fabric_inner = f->ops, .fabric_ops = *f->ops };
		w->fabric_ops.post = shim_post;
		w->fabric_ops.call = shim_call;
		w->fabric_ops.map = stub_map;
		f->maps = false;
		f->ops = &w->fabric_ops;
	}
	pthread_mutex_unlock(&wraps_lock);
	return err;
}

void fault_unwrap_fabric(struct pc_fabric *f)
{
	unwrap(f, NULL);
}

/* ------------------------------------------------------------------ storage */

static int shim_io(struct pc_storage *s, bool write, struct pc_io *ios, size_t n)
{
	struct scratch x;
	const struct fault_rule **why;
	struct pc_io *run;
	size_t *at, m = 0, align = s->align > 64 ? s->align : 64;
	void **tmp;
	struct wrap w;
	int ret = -ENOMEM;

	if (!find(s, &w))
		return write ? s->ops->write(s, ios, n) : s->ops->read(s, ios, n);
	if (!scratch_get(&x, n, sizeof(struct pc_io), 1))
		goto out;
	why = x.why, run = x.run, at = x.at, tmp = x.tmp;
	pthread_mutex_lock(&w.ft->lock);
	for (size_t i = 0; i < n; i++)
		why[i] = match(w.ft, write ? FAULT_IO_WRITE : FAULT_IO_READ, 0, UINT32_MAX, 0);
	pthread_mutex_unlock(&w.ft->lock);
	exit_or_wait(s->env, why, n);
	for (size_t i = 0; i < n; i++) {
		const struct fault_rule *r = why[i];

		if (r && (r->kind == FAULT_FAIL || r->kind == FAULT_DROP)) {
			ios[i].status = r->kind == FAULT_FAIL ? r->err : 0;
			continue;
		}
		run[m] = ios[i];
		at[m] = i;
		if (r && write && r->kind == FAULT_TEAR) {
			run[m].len = ios[i].len / 2 / (s->align ? s->align : 1) * (s->align ? s->align : 1);
			if (!run[m].len) {
				ios[i].status = 0;
				continue;
			}
		} else if (r && write && r->kind == FAULT_CORRUPT) {
			tmp[i] = aligned_alloc(align, (ios[i].len + align - 1) / align * align);
			if (!tmp[i]) {
				ret = -ENOMEM;
				goto out;
			}
			memcpy(tmp[i], ios[i].buf, ios[i].len);
			flip(tmp[i], ios[i].len, NULL, 0, r->bit);
			run[m].buf = tmp[i];
		}
		m++;
	}
	ret = !m ? 0 : write ? w.storage_inner->write(s, run, m) : w.storage_inner->read(s, run, m);
	for (size_t j = 0; j < m; j++) {
		size_t i = at[j];

		ios[i].status = run[j].status;
		if (!ret && !run[j].status && !write && why[i] && why[i]->kind == FAULT_CORRUPT)
			flip(ios[i].buf, ios[i].len, NULL, 0, why[i]->bit);
	}
out:
	scratch_put(&x);
	done(w.ft);
	return ret;
}

static int shim_read(struct pc_storage *s, struct pc_io *ios, size_t n)
{
	return shim_io(s, false, ios, n);
}

static int shim_write(struct pc_storage *s, struct pc_io *ios, size_t n)
{
	return shim_io(s, true, ios, n);
}

/* The faults as for read (the inner table's read_landed would pass them by), then
 * every transfer landed. */
static int shim_read_landed(struct pc_storage *s, struct pc_io *ios, size_t n,
			    pc_io_landed_fn landed, void *arg)
{
	int ret = shim_io(s, false, ios, n);

	for (size_t i = 0; !ret && i < n; i++)
		landed(arg, ios, i);
	return ret;
}

/* Every transfer prepared (a corrupting rule copies the prepared bytes), then the
 * faults as for write. */
static int shim_write_prepared(struct pc_storage *s, struct pc_io *ios, size_t n,
			       pc_io_prepare_fn prepare, void *arg)
{
	for (size_t i = 0; i < n; i++)
		prepare(arg, ios, i);
	return shim_io(s, true, ios, n);
}

int fault_wrap_storage(struct fault *ft, struct pc_storage *s)
{
	struct wrap *w;
	int err;

	pthread_mutex_lock(&wraps_lock);
	w = take_wrap(s, &err);
	if (w) {
		*w = (struct wrap){ .obj = s, .ft = ft, .storage_inner = s->ops,
				    .storage_ops = *s->ops };
		w->storage_ops.read = shim_read;
		w->storage_ops.write = shim_write;
		w->storage_ops.read_landed = shim_read_landed;
		w->storage_ops.write_prepared = shim_write_prepared;
		s->ops = &w->storage_ops;
	}
	pthread_mutex_unlock(&wraps_lock);
	return err;
}

void fault_unwrap_storage(struct pc_storage *s)
{
	unwrap(s, NULL);
}
