/*
 * store_svc.c - the services a store's mode and tiered pool use: phases counted as
 * round trips, one request per peer, registered scratch memory, the caller's
 * registered buffers.
 *
 * Not for: the facade (store.c) or membership (store_rpc.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/hostmem.h"
#include "store_svc.h"

int store_post(struct store_svc *st, struct pc_op *ops, size_t n)
{
	int ret = pc_fabric_post(st->fabric, ops, n);

	METRIC_ADD(st, round_trips, 1);
	if (ret)
		for (size_t i = 0; i < n; i++)
			ops[i].status = ret;
	return ret;
}

int store_call(struct store_svc *st, struct pc_rpc *rpcs, size_t n)
{
	int ret = pc_fabric_call(st->fabric, rpcs, n);

	METRIC_ADD(st, round_trips, 1);
	if (ret)
		for (size_t i = 0; i < n; i++)
			rpcs[i].status = ret;
	return ret;
}

const struct pc_region *store_lreg_find(struct store_svc *st, const void *p, size_t len)
{
	const struct pc_region *found = NULL;
	uintptr_t a = (uintptr_t)p;

	pthread_rwlock_rdlock(&st->bufs_lock);
	for (struct store_buf *b = st->bufs; b && !found; b = b->next)
		if (a >= (uintptr_t)b->r.addr && len <= b->r.len &&
		    a - (uintptr_t)b->r.addr <= b->r.len - len)
			found = &b->r;
	pthread_rwlock_unlock(&st->bufs_lock);
	return found;
}

int store_buf_add(struct store_svc *st, void *buf, size_t len)
{
	struct store_buf *b = calloc(1, sizeof(*b));
	int ret;

	if (!b)
		return -ENOMEM;
	/* Local access only: peers can never address caller memory. */
	b->r = (struct pc_region){ .addr = buf, .len = len, .access = 0 };
	ret = pc_fabric_reg(st->fabric, &b->r);
	if (ret) {
		free(b);
		return ret;
	}
	pthread_rwlock_wrlock(&st->bufs_lock);
	b->next = st->bufs;
	__atomic_store_n(&st->bufs, b, __ATOMIC_RELEASE);	/* store_lreg peeks without the lock */
	pthread_rwlock_unlock(&st->bufs_lock);
	return 0;
}

void store_buf_remove(struct store_svc *st, void *buf)
{
	struct store_buf **pp, *b = NULL;

	pthread_rwlock_wrlock(&st->bufs_lock);
	for (pp = &st->bufs; *pp; pp = &(*pp)->next) {
		if ((*pp)->r.addr == buf) {
			b = *pp;
			/* atomic: the head is peeked without the lock (store_lreg) */
			__atomic_store_n(pp, b->next, __ATOMIC_RELEASE);
			break;
		}
	}
	pthread_rwlock_unlock(&st->bufs_lock);
	if (b) {
		pc_fabric_dereg(st->fabric, &b->r);
		free(b);
	}
}

/* ------------------------------------------------------------------ one request per peer */

int store_fanout_init(struct store_fanout *f, uint32_t nr_peers, size_t hdr_len, size_t item_len)
{
	*f = (struct store_fanout){ .nn = nr_peers, .hdr_len = hdr_len, .item_len = item_len };
	f->count = calloc(nr_peers, sizeof(*f->count));
	f->filled = calloc(nr_peers, sizeof(*f->filled));
	f->req = calloc(nr_peers, sizeof(*f->req));
	f->rpcs = calloc(nr_peers, sizeof(*f->rpcs));
	if (f->count && f->filled && f->req && f->rpcs)
		return 0;
	store_fanout_fini(f);
	return -ENOMEM;
}

void store_fanout_build(struct store_fanout *f, uint16_t opcode)
{
	for (uint32_t o = 0; o < f->nn; o++) {
		size_t len = f->hdr_len + f->count[o] * f->item_len;

		if (!f->count[o] || !(f->req[o] = malloc(len)))
			continue;
		f->rpcs[f->nr++] = (struct pc_rpc){ .peer = o, .opcode = opcode, .req = f->req[o],
						    .req_len = len };
	}
}

void *store_fanout_item(struct store_fanout *f, uint32_t peer)
{
	if (!f->req[peer] || f->filled[peer] == f->count[peer])
		return NULL;
	return f->req[peer] + f->hdr_len + f->filled[peer]++ * f->item_len;
}

void store_fanout_fini(struct store_fanout *f)
{
	for (uint32_t r = 0; f->rpcs && r < f->nr; r++)
		pc_msg_free(&f->rpcs[r].resp);
	for (uint32_t o = 0; f->req && o < f->nn; o++)
		free(f->req[o]);
	free(f->count);
	free(f->filled);
	free(f->req);
	free(f->rpcs);
	f->count = f->filled = NULL;
	f->req = NULL;
	f->rpcs = NULL;
	f->nr = 0;
}

/* ------------------------------------------------------------------ scratch memory */

#define STORE_IDLE_STAGES 8	/* idle scratch areas kept for reuse */

struct store_stage *store_stage_take(struct store_svc *st, size_t bytes, uint32_t access)
{
	struct store_stage **pp, **best = NULL, *s = NULL;

	pthread_mutex_lock(&st->stage_lock);
	for (pp = &st->stages; *pp; pp = &(*pp)->next)	/* the smallest that fits */
		if ((*pp)->bytes >= bytes && (*pp)->r.access == access &&
		    (!best || (*pp)->bytes < (*best)->bytes))
			best = pp;
	if (best) {
		s = *best;
		*best = s->next;
	}
	pthread_mutex_unlock(&st->stage_lock);
	if (s)
		return s;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->bytes = bytes < (1u << 20) ? (1u << 20) : bytes;
	if (hostmem_map(&s->mem, s->bytes, false)) {
		free(s);
		return NULL;
	}
	s->r = (struct pc_region){ .addr = s->mem, .len = s->bytes, .access = access };
	if (pc_fabric_reg(st->fabric, &s->r)) {
		hostmem_unmap(s->mem, s->bytes);
		free(s);
		return NULL;
	}
	return s;
}

static void stage_free(struct store_svc *st, struct store_stage *s)
{
	pc_fabric_dereg(st->fabric, &s->r);
	hostmem_unmap(s->mem, s->bytes);
	free(s);
}

void store_stage_give(struct store_svc *st, struct store_stage *s)
{
	uint32_t idle = 0;

	if (!s)
		return;
	pthread_mutex_lock(&st->stage_lock);
	for (struct store_stage *x = st->stages; x; x = x->next)
		idle++;
	if (idle < STORE_IDLE_STAGES) {
		s->next = st->stages;
		st->stages = s;
		s = NULL;
	}
	pthread_mutex_unlock(&st->stage_lock);
	if (s)
		stage_free(st, s);	/* enough kept already */
}

/* ------------------------------------------------------------------ init, fini */

void store_svc_init(struct store_svc *st)
{
	pthread_rwlock_init(&st->bufs_lock, NULL);
	pthread_mutex_init(&st->stage_lock, NULL);
	arena_pool_init(&st->arenas);
}

void store_svc_fini(struct store_svc *st)
{
	while (st->stages) {
		struct store_stage *s = st->stages;

		st->stages = s->next;
		stage_free(st, s);
	}
	while (st->bufs)
		store_buf_remove(st, st->bufs->r.addr);
	pthread_rwlock_destroy(&st->bufs_lock);
	pthread_mutex_destroy(&st->stage_lock);
	arena_pool_fini(&st->arenas);
}
