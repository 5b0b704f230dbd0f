/*
 * region.c - region table: key, bounds and rights checks for emulated one-sided ops.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "region.h"

static struct region_set *set_new(size_t n)
{
	struct region_set *s = calloc(1, sizeof(*s) + n * sizeof(s->v[0]));

	if (s)
		s->n = n;
	return s;
}

int region_table_init(struct region_table *t)
{
	t->cur = set_new(0);
	if (!t->cur)
		return -ENOMEM;
	return -pthread_mutex_init(&t->lock, NULL);
}

void region_table_fini(struct region_table *t)
{
	struct region_set *s = t->cur;

	while (s) {
		struct region_set *next = s->retired;

		free(s);
		s = next;
	}
	pthread_mutex_destroy(&t->lock);
}

static const struct region_entry *find(const struct region_set *s, uint32_t key)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->v[i].key == key)
			return &s->v[i];
	return NULL;
}

/* Publish a new set; the old one stays reachable for readers until fini. */
static void publish(struct region_table *t, struct region_set *s)
{
	s->retired = t->cur;
	__atomic_store_n(&t->cur, s, __ATOMIC_RELEASE);
}

int region_table_add(struct region_table *t, struct pc_region *r, uint64_t rnd)
{
	uint32_t key = (uint32_t)rnd ? (uint32_t)rnd : (uint32_t)(rnd >> 32) | 1u;
	struct region_set *s;
	int ret = 0;

	pthread_mutex_lock(&t->lock);
	/* Keys are random so that a key from before a restart is refused, not reused. */
	while (!key || find(t->cur, key))
		key = key * 2654435761u + 1;
	s = set_new(t->cur->n + 1);
	if (!s) {
		ret = -ENOMEM;
		goto out;
	}
	memcpy(s->v, t->cur->v, t->cur->n * sizeof(s->v[0]));
	s->v[t->cur->n] = (struct region_entry){ .key = key, .access = r->access,
						 .addr = r->addr, .len = r->len };
	r->key = key;
	publish(t, s);
out:
	pthread_mutex_unlock(&t->lock);
	return ret;
}

void region_table_del(struct region_table *t, uint32_t key)
{
	struct region_set *s;

	pthread_mutex_lock(&t->lock);
	if (find(t->cur, key) && (s = set_new(t->cur->n - 1))) {
		size_t j = 0;

		for (size_t i = 0; i < t->cur->n; i++)
			if (t->cur->v[i].key != key)
				s->v[j++] = t->cur->v[i];
		publish(t, s);
	}
	pthread_mutex_unlock(&t->lock);
}

int region_table_check(struct region_table *t, uint32_t key, uint64_t raddr, uint64_t len,
		       unsigned access, uint8_t **where)
{
	const struct region_entry *e = find(__atomic_load_n(&t->cur, __ATOMIC_ACQUIRE), key);
	uint64_t base;

	if (!e)
		return -ENOKEY;
	base = (uint64_t)(uintptr_t)e->addr;
	if (raddr < base || len > e->len || raddr - base > e->len - len)
		return -EFAULT;
	if ((e->access & access) != access)
		return -EACCES;
	if (access == PC_ACCESS_REMOTE_ATOMIC && (len != 8 || raddr % 8))
		return -EINVAL;
	*where = e->addr + (raddr - base);
	return 0;
}

void region_tally_flush(struct pc_fabric_stats *s, const struct region_tally *t)
{
	uint64_t n = t->ops[PC_OP_READ] + t->ops[PC_OP_WRITE] + t->ops[PC_OP_CAS];

	if (!n)
		return;
	pc_stat_add(&s->served_ops, n);
	if (t->ops[PC_OP_READ]) {
		pc_stat_add(&s->served_reads, t->ops[PC_OP_READ]);
		pc_stat_add(&s->served_read_bytes, t->bytes[PC_OP_READ]);
	}
	if (t->ops[PC_OP_WRITE]) {
		pc_stat_add(&s->served_writes, t->ops[PC_OP_WRITE]);
		pc_stat_add(&s->served_write_bytes, t->bytes[PC_OP_WRITE]);
	}
	if (t->ops[PC_OP_CAS]) {
		pc_stat_add(&s->served_cas, t->ops[PC_OP_CAS]);
		pc_stat_add(&s->served_cas_bytes, t->bytes[PC_OP_CAS]);
	}
}

void region_count_refused(struct pc_fabric_stats *s, int status)
{
	pc_stat_add(&s->refused_ops, 1);
	switch (status) {
	case -ENOKEY:
		pc_stat_add(&s->refused_key, 1);
		break;
	case -EFAULT:
		pc_stat_add(&s->refused_bounds, 1);
		break;
	case -EACCES:
		pc_stat_add(&s->refused_rights, 1);
		break;
	default:
		pc_stat_add(&s->refused_malformed, 1);
	}
}

uint64_t region_cas(uint8_t *where, uint64_t compare, uint64_t swap)
{
	uint64_t expect = compare;

	__atomic_compare_exchange_n((uint64_t *)where, &expect, swap, false, __ATOMIC_ACQ_REL,
				    __ATOMIC_ACQUIRE);
	return expect;
}

void region_apply(const struct pc_op *op, uint8_t *where)
{
	uint64_t old;

	switch (op->kind) {
	case PC_OP_READ:
		if (op->head_len)
			memcpy(op->head, where, op->head_len);
		if (op->len)
			memcpy(op->local, where + op->head_len, op->len);
		break;
	case PC_OP_WRITE:
		if (op->head_len)
			memcpy(where, op->head, op->head_len);
		if (op->len)
			memcpy(where + op->head_len, op->local, op->len);
		break;
	case PC_OP_CAS:
		old = region_cas(where, op->compare, op->swap);
		memcpy(op->local, &old, 8);
		break;
	}
}
